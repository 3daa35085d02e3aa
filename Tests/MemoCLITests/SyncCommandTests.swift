import Foundation
import XCTest

/// `sync`, `peers`, `conflicts` and `serve --sync-every` without a network: bad input and
/// the states that need no peer. The lab tests sync for real.
final class SyncCommandTests: XCTestCase {
  func testSyncRefusesWhatItCannotDoWithClearErrors() throws {
    let cli = try CLIProcess()
    let nobody = try cli.run(["sync"])
    XCTAssertEqual(nobody.status, 3, "no trusted device: nothing to sync with")
    XCTAssertTrue(nobody.stderr.contains("trusts no device"), nobody.stderr)
    XCTAssertTrue(nobody.stderr.contains("memo-peer pair"), "says what to do next")
    XCTAssertEqual(try cli.run(["trust", "add", DeliveryCommandTests.peerID, "--name", "bee"]).status, 0)
    XCTAssertEqual(try cli.run(["sync", "--allow-deletes"]).status, 2, "answers one device's deletes: needs --peer")
    XCTAssertEqual(try cli.run(["sync", "--peer", "bee", "--allow-deletes", "--keep-deleted"]).status, 2)
    XCTAssertEqual(try cli.run(["sync", "--peer", "nobody"]).status, 3)
    XCTAssertEqual(try cli.run(["sync", "--peer", "bee", "--timeout", "-1"]).status, 2)
    XCTAssertEqual(try cli.run(["serve", "--sync-every", "0s"]).status, 2)
    XCTAssertEqual(try cli.run(["serve", "--sync-every", "often"]).status, 2)
  }

  func testPeersAndConflictsWithoutAnySync() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", DeliveryCommandTests.peerID, "--name", "bee"]).status, 0)
    _ = try cli.new("one\n")
    let peers = try XCTUnwrap(try cli.json(["peers", "--json"])["peers"] as? [[String: Any]])
    XCTAssertEqual(peers.count, 1)
    XCTAssertEqual(peers.first?["name"] as? String, "bee")
    XCTAssertEqual(peers.first?["pending"] as? Int, 1, "the new memo has not reached it")
    XCTAssertNil(peers.first?["last_synced"] as? String)
    XCTAssertTrue(try cli.run(["conflicts"]).stdout.contains("no conflicts"))
    XCTAssertEqual(try XCTUnwrap(try cli.json(["conflicts", "--json"])["conflicts"] as? [Any]).count, 0)
    XCTAssertEqual(try cli.run(["conflicts", "resolve"]).status, 2, "needs an id")
    let memo = try cli.new("two\n")
    XCTAssertEqual(try cli.run(["conflicts", "resolve", memo]).status, 2, "needs --keep")
    XCTAssertEqual(try cli.run(["conflicts", "resolve", memo, "--keep", "C"]).status, 2)
    let none = try cli.run(["conflicts", "resolve", memo, "--keep", "A"])
    XCTAssertEqual(none.status, 3, "no conflict to resolve")
    XCTAssertEqual(try cli.run(["conflicts", "merge"]).status, 2)
  }
}
