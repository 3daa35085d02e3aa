import Foundation
import XCTest

/// `network list|allow|deny`: the networks memo-peer may use, decided in the consent log,
/// and what `status` says of this one. On a machine on no network, deciding it is refused.
final class NetworkAllowCommandTests: XCTestCase {
  func testNetworksAreDecidedInTheConsentLogAndStatusSaysWhetherThisOneIsAllowed() throws {
    let cli = try CLIProcess()
    let fresh = try cli.json(["network", "list"])
    guard let current = fresh["current"] as? [String: Any], let id = current["id"] as? String else {
      // No network here: nothing can be decided, and the error says why.
      let refused = try cli.run(["network", "allow"])
      XCTAssertEqual(refused.status, 3, refused.stderr)
      XCTAssertTrue(refused.stderr.contains("on no network"), refused.stderr)
      return
    }
    XCTAssertTrue(id.hasPrefix("net-") && id.count == 20, id)
    XCTAssertEqual(fresh["current_state"] as? String, "undetermined", "nothing consented yet")
    XCTAssertEqual((fresh["networks"] as? [Any])?.count, 0)

    // Granting local-network consent allows the network it is given on.
    XCTAssertEqual(try cli.run(["consent", "grant"]).status, 0)
    let granted = try cli.json(["network"])
    XCTAssertEqual(granted["current_state"] as? String, "allowed")
    let listed = try XCTUnwrap((granted["networks"] as? [[String: Any]])?.first)
    XCTAssertEqual(listed["id"] as? String, id)
    XCTAssertEqual(listed["method"] as? String, "command")
    XCTAssertEqual(listed["current"] as? Bool, true)

    let denied = try cli.json(["network", "deny", "--note", "not this one"])
    XCTAssertEqual(denied["scope"] as? String, "network")
    XCTAssertEqual(denied["network"] as? String, id)
    XCTAssertEqual(denied["decision"] as? String, "denied")
    XCTAssertTrue((denied["usage_text"] as? String ?? "").contains("to find your other devices"), "\(denied)")
    let status = try cli.run(["status"])
    XCTAssertTrue(status.stdout.contains("(\(id)): denied (memo-peer waits here"), status.stdout)
    XCTAssertEqual((try cli.json(["status"])["network"] as? [String: Any])?["state"] as? String, "denied")

    let allowed = try cli.run(["network", "allow", id, "--provisioning"])
    XCTAssertEqual(allowed.status, 0, allowed.stderr)
    XCTAssertTrue(allowed.stdout.contains(": allowed"), allowed.stdout)
    let last = try XCTUnwrap((try cli.json(["network"])["networks"] as? [[String: Any]])?.first)
    XCTAssertEqual(last["method"] as? String, "provisioning")
    XCTAssertEqual(last["state"] as? String, "allowed")
    let log = try String(contentsOfFile: cli.home + "/node/state/consent.jsonl", encoding: .utf8)
    XCTAssertEqual(log.split(separator: "\n").filter { $0.contains("\"scope\":\"network\"") }.count, 3, "append-only")
  }

  func testBadInputGetsAClearErrorAndNothingIsRecorded() throws {
    let cli = try CLIProcess()
    for (arguments, status, words) in [
      (["network", "allow", "net-0000000000000000"], Int32(3), "no network net-0000000000000000 is on record"),
      (["network", "allow", "net-unidentified"], 2, "not a network"),
      (["network", "frob"], 2, "unknown network action"),
      (["network", "list", "extra"], 2, "takes no ID"),
      (["network", "allow", "\u{1B}[31mred"], 3, "\\x1b[31mred [escaped]"),
    ] {
      let refused = try cli.run(arguments)
      XCTAssertEqual(refused.status, status, "\(arguments): \(refused.stderr)")
      XCTAssertTrue(refused.stderr.contains(words), "\(arguments): \(refused.stderr)")
      XCTAssertFalse(refused.stderr.contains("\u{1B}"), "no raw control characters")
    }
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.home + "/node/state/consent.jsonl"), "nothing recorded")
    XCTAssertTrue(try cli.run(["network", "--help"]).stdout.contains("networks memo-peer may use"))
  }
}
