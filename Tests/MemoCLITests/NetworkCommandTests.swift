import Foundation
import MemoTestSupport
import XCTest

/// The network commands' local behaviour: consent bookkeeping and bad input. Nothing here
/// reaches a network (the lab tests do that): every case fails or finishes before any
/// DNS-SD call, and no `serve` here gets as far as listening.
final class NetworkCommandTests: XCTestCase {
  func testConsentIsRecordedAppendOnlyWithWhoWhenAndHow() throws {
    let cli = try CLIProcess()
    XCTAssertTrue(try cli.run(["consent"]).stdout.hasPrefix("local-network: undetermined"))
    XCTAssertEqual(try cli.run(["consent", "grant", "--note", "my laptop"]).status, 0)
    XCTAssertEqual(try cli.run(["consent", "grant", "--scope", "background-sync", "--provisioning"]).status, 0)
    XCTAssertEqual(try cli.run(["consent", "revoke"]).status, 0)
    let nothing = try cli.run(["consent", "revoke"])
    XCTAssertTrue(nothing.stdout.contains("nothing to revoke"), nothing.stdout)
    let status = try cli.json(["consent", "status"])
    let scopes = try XCTUnwrap(status["scopes"] as? [String: [String: Any]])
    XCTAssertEqual(scopes["local-network"]?["state"] as? String, "revoked")
    XCTAssertEqual(scopes["background-sync"]?["state"] as? String, "granted")
    XCTAssertEqual(scopes["all-service-types"]?["state"] as? String, "undetermined")
    XCTAssertEqual((scopes["background-sync"]?["last"] as? [String: Any])?["method"] as? String, "provisioning")
    let log = try String(contentsOfFile: cli.home + "/node/state/consent.jsonl", encoding: .utf8)
    // The grant also allowed the network it was given on (when this machine is on one).
    let networkLines = log.split(separator: "\n").filter { $0.contains("\"scope\":\"network\"") }
    XCTAssertLessThanOrEqual(networkLines.count, 1)
    XCTAssertTrue(
      networkLines.allSatisfy { $0.contains("\"method\":\"command\"") && $0.contains("\"network\":\"net-") })
    let lines = log.split(separator: "\n").filter { !$0.contains("\"scope\":\"network\"") }
    XCTAssertEqual(lines.count, 3, "append-only: every decision stays")
    XCTAssertTrue(lines[0].contains("\"note\":\"my laptop\""))
    XCTAssertTrue(lines[0].contains("\"method\":\"command\""))
    let human = try cli.run(["status"])
    XCTAssertTrue(human.stdout.contains("consent local-network: revoked"), human.stdout)
    XCTAssertTrue(human.stdout.contains("daemon: not running"), human.stdout)
  }

  func testBadInputIsAUsageErrorBeforeAnyNetworkUse() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["consent", "grant"]).status, 0)
    let cases: [([String], Int32, String)] = [
      (["consent", "grnat"], 2, "did you mean grant?"),
      (["consent", "grant", "--scope", "local-netwrk"], 2, "did you mean local-network?"),
      (["browse", "--timeout", "-1"], 2, "--timeout needs a number of seconds"),
      (["browse", "--timeout", "soon"], 2, "--timeout needs a number of seconds"),
      (["serve", "--port", "http"], 2, "--port needs a number"),
      (["serve", "--port", "70000"], 2, "--port needs a number"),
      (["serve", "--rotation", "0"], 2, "--rotation"),
      (["serve", "--interface", "no-such-interface"], 2, "interfaces here: "),
      (["browse", "--type", "_printer._tcp"], 13, "NoAuth (-65555)"),
      (["browse", "--all-types"], 11, "all-service-types"),
    ]
    for (arguments, status, message) in cases {
      let result = try cli.run(arguments)
      XCTAssertEqual(result.status, status, "\(arguments): \(result.output)")
      XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
    }
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.home + "/node/state/serve.json"), "no serve started")
  }

  func testADamagedConsentLogStopsNetworkUse() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["consent", "grant"]).status, 0)
    let path = cli.home + "/node/state/consent.jsonl"
    try Data("not json\n".utf8 + (try Data(contentsOf: URL(fileURLWithPath: path)))).write(
      to: URL(fileURLWithPath: path))
    let browse = try cli.run(["browse", "--timeout", "1"])
    XCTAssertEqual(browse.status, 7, browse.output)
    XCTAssertTrue(browse.stderr.contains("damaged at line 1"), browse.stderr)
  }
}
