import Foundation
import XCTest

/// `send`, `outbox`, `inbox` and `trust policy` without a network: queueing, states, cancel,
/// retry, bad input. The lab tests deliver.
final class DeliveryCommandTests: XCTestCase {
  static let peerID = "5HUOJLKAPDGZ36YZNUDCM3MKC7OEYQTJLE4KXELYDPX3COPYZXFA"

  func testSendQueuesSealedAndTheOutboxShowsCancelsAndRetries() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", Self.peerID, "--name", "bee"]).status, 0)
    let memo = try cli.new("outbox secret words\n")
    let queued = try cli.json(["send", memo, "--to", "bee", "--expires", "2h", "--json"])
    let entry = try XCTUnwrap((queued["entries"] as? [[String: Any]])?.first)
    XCTAssertEqual(entry["state"] as? String, "queued")
    XCTAssertEqual(entry["to"] as? String, "bee")
    XCTAssertNotNil(entry["expires"] as? String)
    XCTAssertEqual(try cli.run(["send", "-", "--to", "bee"], stdin: Array("from stdin\n".utf8)).status, 0)
    let outbox = try XCTUnwrap(try cli.json(["outbox", "--json"])["entries"] as? [[String: Any]])
    XCTAssertEqual(outbox.count, 2)
    let id = try XCTUnwrap(entry["id"] as? String)
    XCTAssertEqual(try cli.run(["outbox", "cancel", String(id.prefix(8))]).status, 0)
    XCTAssertEqual(try cli.run(["outbox", "cancel", id]).status, 4, "a cancelled entry stays cancelled")
    XCTAssertEqual(try cli.run(["outbox", "retry", id]).status, 4)
    let states = try XCTUnwrap(try cli.json(["outbox", "--json"])["entries"] as? [[String: Any]])
      .map { $0["state"] as? String }
    XCTAssertEqual(Set(states), ["cancelled", "queued"])
    XCTAssertNil(try cli.rawDataBytes().range(of: Data("outbox secret words".utf8)), "sealed at rest")
  }

  func testBadInputAndPolicies() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", Self.peerID, "--name", "bee"]).status, 0)
    let memo = try cli.new("x\n")
    XCTAssertEqual(try cli.run(["send", memo]).status, 2, "--to is required")
    XCTAssertEqual(try cli.run(["send", memo, "--to", "nobody"]).status, 3)
    XCTAssertEqual(try cli.run(["send", memo, "--to", "bee", "--expires", "soon"]).status, 2)
    XCTAssertEqual(try cli.run(["outbox", "resend"]).status, 2)
    XCTAssertEqual(try cli.run(["inbox", "accept", "deadbeef"]).status, 3)
    XCTAssertTrue(try cli.run(["inbox"]).stdout.contains("the inbox is empty"))
    XCTAssertEqual(try cli.run(["trust", "policy", "bee", "sometimes"]).status, 2)
    XCTAssertEqual(try cli.run(["trust", "policy", "bee", "refuse"]).status, 0)
    let peers = try XCTUnwrap(try cli.json(["trust", "list", "--json"])["peers"] as? [[String: Any]])
    XCTAssertEqual(peers.first?["receive"] as? String, "refuse")
  }
}
