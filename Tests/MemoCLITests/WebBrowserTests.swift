import Foundation
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// The web page in a real browser: Tests/browser/web_page_test.py drives Debian's headless
/// chromium with selenium (python3-selenium, chromium-driver; `scripts/deps.sh` installs
/// them), in a network namespace that has only a loopback interface, so neither browser
/// nor server can reach any network. Then the canary checks: no memo text in the server's
/// output (run with --debug), in any request URL the browser made, or in its disk cache.
///
/// Needs root (the network namespace). Under CI=true a missing browser or root fails.
final class WebBrowserTests: XCTestCase {
  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
  static let script = repository + "/Tests/browser/web_page_test.py"
  /// Screenshots of the main views; docs/screenshots holds a committed set.
  static var screenshots: String {
    ProcessInfo.processInfo.environment["MEMO_PEER_SCREENSHOTS"] ?? repository + "/.build/web-screenshots"
  }
  static let views = ["list", "memo", "conflict", "consent", "locked", "bidi"]

  func testThePageInHeadlessChromium() throws {
    try requireBrowser()
    let cli = try CLIProcess()
    let fixtures = try WebFixtures(cli)
    let work = cli.home + "/web"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    let runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-web-test")
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    let fixtureFile = work + "/fixtures.json"
    try fixtures.json().write(to: URL(fileURLWithPath: fixtureFile))
    for view in Self.views { unlink(Self.screenshots + "/\(view).png") }

    let result = try cli.run(
      executable: "/usr/bin/unshare",
      ["--net", "--", "/bin/sh", "-c", "ip link set lo up && exec /usr/bin/python3 \"$0\"", Self.script], stdin: nil,
      extraEnvironment: [
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MEMO_PEER": CLIProcess.binary, "MEMO_PEER_WEB_WORK": work,
        "MEMO_PEER_WEB_FIXTURES": fixtureFile, "MEMO_PEER_SCREENSHOTS": Self.screenshots, "XDG_RUNTIME_DIR": runtime,
      ])
    XCTAssertEqual(result.status, 0, "the browser test failed:\n\(result.stdout)\n\(result.stderr)")
    XCTAssertTrue(result.stdout.contains("browser test passed"), result.stdout)
    // The measured times (how long memo text stayed on the page after a lock), for the log.
    for line in result.stdout.split(separator: "\n") where line.contains("memo text gone") { print(line) }

    // The canary audit, extended to the page: nothing of the memos in the server's output
    // (with --debug), in the URL of any request, or in the browser's disk cache.
    var findings: [String] = []
    let canaries = fixtures.allCanaries
    func scan(_ data: Data, _ place: String) {
      for (name, value) in canaries where data.range(of: Data(value.utf8)) != nil {
        findings.append("\(place) holds \(name)")
      }
    }
    for file in ["server.out", "server.err", "request-urls.txt"] {
      let data = try XCTUnwrap(FileManager.default.contents(atPath: work + "/" + file), file)
      scan(data, file)
    }
    let urls = try String(contentsOfFile: work + "/request-urls.txt", encoding: .utf8)
    XCTAssertTrue(urls.contains("/api/memos"), "the URL list saw the page's API calls")
    let cacheFiles = FileManager.default.enumerator(atPath: work + "/cache")?.allObjects as? [String] ?? []
    XCTAssertFalse(cacheFiles.isEmpty, "the browser used the disk cache folder")
    for name in cacheFiles {
      if let data = FileManager.default.contents(atPath: work + "/cache/" + name) { scan(data, "cache/" + name) }
    }
    XCTAssertEqual(findings, [], findings.joined(separator: "\n"))
    XCTAssertEqual(
      try FileManager.default.contentsOfDirectory(atPath: runtime).filter { $0.hasPrefix("memo-peer") }, [],
      "the sign-in files are gone")

    for view in Self.views {
      let png = try XCTUnwrap(FileManager.default.contents(atPath: Self.screenshots + "/\(view).png"), view)
      XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "\(view).png is a PNG")
      XCTAssertGreaterThan(png.count, 10_000, "\(view).png shows something")
    }
  }

  /// What issue 38 saw on the page (Tests/browser/page_details_test.py): the Devices view at
  /// phone width, a title with a right-to-left override shown escaped, and the page's own
  /// words after a save that crossed an edit made elsewhere.
  func testPageDetailsAtPhoneWidthEscapedTitlesAndACrossedSave() throws {
    try requireBrowser()
    let cli = try CLIProcess()
    let work = cli.home + "/web"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    let runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-web-details")
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    let result = try cli.run(
      executable: "/usr/bin/unshare",
      [
        "--net", "--", "/bin/sh", "-c", "ip link set lo up && exec /usr/bin/python3 \"$0\"",
        Self.repository + "/Tests/browser/page_details_test.py",
      ], stdin: nil,
      extraEnvironment: [
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MEMO_PEER": CLIProcess.binary, "MEMO_PEER_WEB_WORK": work,
        "XDG_RUNTIME_DIR": runtime,
      ])
    XCTAssertEqual(result.status, 0, "the browser test failed:\n\(result.stdout)\n\(result.stderr)")
    XCTAssertTrue(result.stdout.contains("page details test passed"), result.stdout)
  }

  /// Chromium, chromedriver, Debian's python3 with selenium, and root for the namespace.
  func requireBrowser() throws {
    try HeadlessBrowser.require(
      tools: ["/usr/bin/unshare"], alsoMissing: getuid() == 0 ? [] : ["root (for a network namespace of its own)"])
  }
}
