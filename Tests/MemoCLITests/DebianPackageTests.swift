import Foundation
import MemoTestSupport
import XCTest

/// The Debian package as `make deb` builds it: two builds in two folders give the same
/// bytes, lintian reports no error, and dpkg installs it, its units verify, and a purge
/// leaves nothing, in a throwaway root (scripts/deb-test.sh). Needs root, as CI runs.
final class DebianPackageTests: XCTestCase {
  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  func testReproducibleLintCleanInstallsAndPurges() throws {
    guard getuid() == 0 else {
      if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("the package test needs root under CI=true") }
      throw XCTSkip("the package test needs root (unshare, mount, chroot); CI runs it")
    }
    let lintian = try RequiredTool.path("lintian", package: "lintian")
    _ = try RequiredTool.path("dpkg-shlibdeps", package: "dpkg-dev")
    let output = NSTemporaryDirectory() + "memo-peer-deb-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: output) }
    var environment = ProcessInfo.processInfo.environment
    environment["PATH"] = "/opt/swift/usr/bin:" + (environment["PATH"] ?? "/usr/bin:/bin")

    let repro = try ProcessRunner.run(
      Self.repository + "/scripts/deb-repro.sh", [output], environment: environment)
    guard repro.status == 0 else { return XCTFail("scripts/deb-repro.sh: \(repro.output)") }
    let sums = repro.stdout.split(separator: "\n").filter { $0.hasPrefix("deb-repro: ") && $0.contains("built in") }
      .map { $0.split(separator: " ")[1] }
    XCTAssertEqual(sums.count, 2, repro.output)
    XCTAssertEqual(Set(sums).count, 1, "two folders, one SHA-256: \(repro.output)")
    let deb = try XCTUnwrap(repro.stdout.split(separator: "\n").last.map(String.init))
    XCTAssertTrue(deb.hasSuffix("_amd64.deb") && FileManager.default.fileExists(atPath: deb), deb)
    let sizes = repro.stderr.split(separator: "\n").first { $0.hasPrefix("deb: memo-peer binary") }
    XCTAssertNotNil(sizes, "the size before and after stripping is reported")
    print(sizes ?? "")

    let lint = try ProcessRunner.run(
      lintian, ["--fail-on", "error", "--tag-display-limit", "0", deb], environment: environment)
    XCTAssertEqual(lint.status, 0, lint.output)
    XCTAssertFalse(lint.stdout.split(separator: "\n").contains { $0.hasPrefix("E: ") }, lint.output)
    print("lintian: " + (lint.stdout.isEmpty ? "no error, no warning" : lint.stdout))

    let install = try ProcessRunner.run(
      Self.repository + "/scripts/deb-test.sh", [deb], environment: environment)
    XCTAssertEqual(install.status, 0, install.output)
    XCTAssertTrue(install.stdout.contains("deb-test: memo-peer --version: memo-peer "), install.output)
    XCTAssertTrue(install.stdout.contains("deb-test: systemd-analyze verify: both installed units clean"))
    XCTAssertTrue(install.stdout.hasSuffix("deb-test: ok\n"), install.output)
  }
}
