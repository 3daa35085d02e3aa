import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoTestSupport
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
    // A duration whose milliseconds overflow 64 bits (it trapped) is refused by name.
    let huge = try cli.run(["serve", "--sync-every", "1e300s"])
    XCTAssertEqual(huge.status, 2, huge.stderr)
    XCTAssertTrue(huge.stderr.contains("--sync-every needs a duration from 1 s to 366 days"), huge.stderr)
    let expires = try cli.run(["send", "-", "--to", "bee", "--expires", "1e300s"], stdin: Array("x\n".utf8))
    XCTAssertEqual(expires.status, 2, expires.stderr)
    XCTAssertTrue(expires.stderr.contains("at most 366 days"), expires.stderr)
  }

  /// A device key file asking scrypt for 8 GiB (written by another program: memo-peer never
  /// writes one) is refused before anything is derived, with what it asks and what is allowed.
  func testAKeyFileAskingScryptForTooMuchMemoryIsRefusedByName() throws {
    let cli = try CLIProcess()
    _ = try cli.new("one\n")
    let path = cli.keyDirectory + "/device.key"
    let header: [UInt8] = Array("MPDK".utf8) + [3, 1, 1, 23, 8, 1]
    let file = header + [UInt8](repeating: 1, count: 16 + 4 + 16) + [UInt8](repeating: 2, count: 29 + 32)
    try Data(file).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o600)
    let result = try cli.run(["list"])
    XCTAssertEqual(result.status, 5, result.stderr)
    XCTAssertTrue(
      result.stderr.contains("asks scrypt for 8192 MiB (N = 8388608, r = 8, p = 1); memo-peer allows at most 256 MiB"),
      result.stderr)
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

  /// The last sync data refused from a peer shows under it, in `peers` and `peers --json`,
  /// with its evidence; a control character in it reaches the terminal escaped.
  func testPeersShowTheLastRefusalWithItsEvidence() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", DeliveryCommandTests.peerID, "--name", "bee"]).status, 0)
    XCTAssertTrue(try cli.run(["peers"]).stdout.contains("bee"))
    XCTAssertFalse(try cli.run(["peers"]).stdout.contains("last refused"), "nothing refused yet")
    do {
      let store = try MemoStore.open(paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"]))
      let peer = try XCTUnwrap(DeviceID(DeliveryCommandTests.peerID))
      try store.recordRefusal(
        of: peer, SyncViolation(.ownOrigin, "sequence 12; it has written 9 \u{1B}[31m"), now: 1_800_000_000_000)
    }
    let text = try cli.run(["peers"])
    XCTAssertEqual(text.status, 0, text.stderr)
    XCTAssertTrue(
      text.stdout.contains("last refused ")
        && text.stdout.contains(
          "it sent a revision claiming to be made by the receiving device (own-origin: sequence 12; it has written 9"),
      text.stdout)
    XCTAssertFalse(text.stdout.contains("\u{1B}"), "no raw escape reaches the terminal")
    let row = try XCTUnwrap((try cli.json(["peers", "--json"])["peers"] as? [[String: Any]])?.first)
    let refusal = try XCTUnwrap(row["last_refusal"] as? [String: Any], "\(row)")
    XCTAssertEqual(refusal["reason"] as? String, "own-origin")
    XCTAssertEqual(refusal["what"] as? String, "a revision claiming to be made by the receiving device")
    XCTAssertEqual(refusal["detail"] as? String, "sequence 12; it has written 9 \u{1B}[31m")
    XCTAssertEqual(refusal["at"] as? String, "2027-01-15T08:00:00.000Z")
  }

  /// A sync between two nodes' stores without a network: the production session over an
  /// in-memory channel, `sink` asking `source`.
  func pull(from source: MemoStore, into sink: MemoStore) throws { try pullForTest(from: source, into: sink) }

  func testAMemoInConflictIsResolvedBeforeItIsEditedOrDeleted() throws {
    let cli = try CLIProcess()
    let id = try cli.new("milk\n")
    let other = try CLIProcess()
    do {
      let mine = try MemoStore.open(paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"]))
      let theirs = try MemoStore.open(
        paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": other.home + "/node"]))
      try pull(from: mine, into: theirs)
      let memoID = try XCTUnwrap(MemoID(id))
      try theirs.update(memoID, MemoChange(body: "milk, bread\n"), now: 5)
      try mine.update(memoID, MemoChange(body: "milk, eggs\n"), now: 5)
      try pull(from: theirs, into: mine)
    }
    let listed = try XCTUnwrap(try cli.json(["list", "--json"])["memos"] as? [[String: Any]])
    XCTAssertEqual(listed.count, 2)
    let copy = try XCTUnwrap(listed.first { $0["conflict_of"] as? String == id }?["id"] as? String)
    // The copy names the device that wrote it.
    let copyLine = try cli.run(["list"]).stdout.split(separator: "\n").first { $0.hasPrefix(copy.prefix(8)) }
    XCTAssertTrue(copyLine?.contains("[conflict copy of \(id.prefix(8)), by ") ?? false, "\(copyLine ?? "")")
    let edit = try cli.run(["edit", id, "--stdin"], stdin: Array("lost?\n".utf8))
    XCTAssertEqual(edit.status, 19)
    XCTAssertTrue(edit.stderr.contains("conflicts resolve"), edit.stderr)
    XCTAssertEqual(try cli.run(["edit", copy, "--stdin"], stdin: Array("x\n".utf8)).status, 19)
    XCTAssertEqual(try cli.run(["delete", id, "--yes"]).status, 19)
    XCTAssertEqual(try cli.run(["conflicts", "resolve", copy, "--keep", "both"]).status, 0)
    let after = try XCTUnwrap(try cli.json(["list", "--json"])["memos"] as? [[String: Any]])
    XCTAssertEqual(after.count, 2, "both versions kept, no copy left")
    XCTAssertTrue(after.allSatisfy { $0["conflict_of"] == nil && $0["conflict"] as? Bool == false })
    XCTAssertEqual(try cli.run(["edit", id, "--stdin"], stdin: Array("now it can\n".utf8)).status, 0)
  }
}
