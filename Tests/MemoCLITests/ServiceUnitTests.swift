import Foundation
import XCTest

/// The systemd units in Services/ pass `systemd-analyze verify` with no finding at all (it
/// exits 0 even on unknown keys, so its output must be empty too).
final class ServiceUnitTests: XCTestCase {
  static let services = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Services").path

  func testUnitsVerify() throws {
    let cli = try CLIProcess()
    for (unit, user) in [("memo-peer.service", false), ("memo-peer-user.service", true)] {
      let text = try String(contentsOfFile: Self.services + "/" + unit, encoding: .utf8)
        .replacingOccurrences(of: "/usr/local/bin/memo-peer", with: CLIProcess.binary)
      let copy = cli.home + "/" + unit
      try text.write(toFile: copy, atomically: true, encoding: .utf8)
      let result = try cli.run(
        executable: "/usr/bin/systemd-analyze", ["verify", "--man=no"] + (user ? ["--user"] : []) + [copy], stdin: nil,
        extraEnvironment: ["XDG_RUNTIME_DIR": cli.home])
      XCTAssertEqual(result.status, 0, "\(unit): \(result.output)")
      XCTAssertEqual(result.output, "", "\(unit): \(result.output)")
    }
  }

  func testSystemUnitIsHardened() throws {
    let unit = try String(contentsOfFile: Self.services + "/memo-peer.service", encoding: .utf8)
    for setting in [
      "User=memo-peer", "StateDirectory=memo-peer", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
      "PrivateTmp=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK", "CapabilityBoundingSet=\n",
      "KeyringMode=shared",
    ] {
      XCTAssertTrue(unit.contains(setting), setting)
    }
    let sysusers = try String(contentsOfFile: Self.services + "/sysusers.d/memo-peer.conf", encoding: .utf8)
    XCTAssertTrue(sysusers.contains("u memo-peer - "))
  }
}
