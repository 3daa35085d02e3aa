import Foundation
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// The page belongs to the Unix user who signed in (issue 38), in headless chromium
/// (Tests/browser/other_user_test.py): a second Unix user, made here with useradd and
/// removed after, serves a page on another loopback port that the person's browser visits.
/// The session cookie it is sent reads and writes nothing from that user's account and ends
/// the session; the cookie it sets for Path=/api does not sign the person out.
///
/// Needs root (useradd, runuser, the network namespace). Under CI=true a missing tool fails.
final class WebOtherUserTests: XCTestCase {
  static let browserFolder =
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("browser").path

  var user = ""
  var folder = ""

  override func setUpWithError() throws {
    try HeadlessBrowser.require(
      tools: ["/usr/bin/unshare", "/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/runuser", "/usr/bin/curl"],
      alsoMissing: getuid() == 0 ? [] : ["root (for a second user and a network namespace)"])
    user = "mp-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
    let made = try ProcessRunner.run(
      "/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], stdin: [],
      environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    XCTAssertEqual(made.status, 0, made.stderr)
    // The second user's own folder: its page's script, the port it listens on, the cookies
    // it was sent.
    folder = try PrivateFiles.makeUniqueDirectory(in: "/tmp", prefix: "memo-peer-other-user")
    chmod(folder, 0o755)
    let script = folder + "/other_port_server.py"
    try FileManager.default.copyItem(atPath: Self.browserFolder + "/other_port_server.py", toPath: script)
    chmod(script, 0o644)
    let owned = try ProcessRunner.run(
      "/bin/chown", [user, folder], stdin: [], environment: ["PATH": "/usr/bin:/bin"])
    XCTAssertEqual(owned.status, 0, owned.stderr)
  }

  override func tearDown() {
    if !folder.isEmpty { try? FileManager.default.removeItem(atPath: folder) }
    if !user.isEmpty {
      _ = try? ProcessRunner.run(
        "/usr/sbin/userdel", [user], stdin: [], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }
    super.tearDown()
  }

  func testAnotherUsersPageGetsNothingFromTheSessionCookieAndCannotSignThePersonOut() throws {
    let cli = try CLIProcess()
    let work = cli.home + "/web"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    let runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-web-other")
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    let result = try cli.run(
      executable: "/usr/bin/unshare",
      [
        "--net", "--", "/bin/sh", "-c", "ip link set lo up && exec /usr/bin/python3 \"$0\"",
        Self.browserFolder + "/other_user_test.py",
      ], stdin: nil,
      extraEnvironment: [
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MEMO_PEER": CLIProcess.binary, "MEMO_PEER_WEB_WORK": work,
        "MEMO_PEER_OTHER_USER": user, "MEMO_PEER_OTHER_FOLDER": folder, "XDG_RUNTIME_DIR": runtime,
      ])
    XCTAssertEqual(result.status, 0, "the browser test failed:\n\(result.stdout)\n\(result.stderr)")
    XCTAssertTrue(result.stdout.contains("other user test passed"), result.stdout)
  }
}
