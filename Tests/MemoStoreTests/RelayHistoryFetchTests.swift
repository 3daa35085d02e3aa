import Foundation
import MemoCore
import MemoProtocol
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// History from a relay (PROTOCOL.md, "History from a relay"), store to store: what a
/// relay answers, and what a member keeps of it.
extension NotebookSyncTests {
  /// b edits a memo three times while c is away; c's sync brings the last revision only.
  /// Returns the memo and the four bodies.
  func editedWhileAway(
    _ b: (node: TemporaryNode, store: MemoStore), _ s: (node: TemporaryNode, store: MemoStore)
  ) throws -> (MemoID, [String]) {
    let bodies = (1...4).map { "canary away v\($0)" }
    let memo = try b.store.create(MemoDraft(title: "away", body: bodies[0]), now: 3)
    try sync(b, with: s)
    for index in 1...3 {
      try b.store.update(memo.id, MemoChange(body: bodies[index]), now: Int64(3 + index))
      try sync(b, with: s)
    }
    return (memo.id, bodies)
  }

  func fetch(
    _ memo: MemoID, in notebook: NotebookID, by member: (node: TemporaryNode, store: MemoStore),
    from relay: (node: TemporaryNode, store: MemoStore), tamper: (inout [SyncRecord]) -> Void = { _ in }
  ) throws -> FetchedHistory {
    var answer = try relay.store.relayedHistoryRecords(of: memo, in: notebook, for: member.node.device)
    tamper(&answer.records)
    return try member.store.takeFetchedHistory(
      answer.records, bindings: answer.bindings, of: memo, in: notebook, from: relay.node.device, now: 20)
  }

  /// c gets from the relay the three revisions it never saw, each with b as its signer, in
  /// order; restoring one is an edit that reaches b through the relay. A second fetch
  /// adds nothing; the relay still holds none of the text.
  func testAMemberFetchesTheRevisionsOnlyTheRelayKeptAndRestoresOne() throws {
    let (b, c, s, personal) = try hub()
    let (memo, texts) = try editedWhileAway(b, s)
    try sync(c, with: s)
    XCTAssertEqual(try c.store.history(of: memo).map(\.memo.body), [texts[3]])

    let fetched = try fetch(memo, in: personal, by: c, from: s)
    XCTAssertEqual(fetched.added, 3)
    XCTAssertEqual(fetched.keptAside, 0)
    let history = try c.store.history(of: memo)
    XCTAssertEqual(history.map(\.memo.body), texts)
    XCTAssertEqual(history.map(\.memo.revision), [1, 2, 3, 4])
    XCTAssertEqual(Set(history.map(\.author)), [b.node.device])
    XCTAssertEqual(history.filter(\.isCurrent).count, 1)

    let again = try fetch(memo, in: personal, by: c, from: s)
    XCTAssertEqual(again.added, 0)
    XCTAssertEqual(again.known, 3)
    XCTAssertEqual(try c.store.history(of: memo).count, 4)

    try c.store.restore(memo, revision: 1, now: 30)
    try sync(c, with: s)
    try sync(b, with: s)
    XCTAssertEqual(try b.store.memo(memo).body, texts[0])
    for text in texts { XCTAssertFalse(try holds(s.node, text), "the relay holds \(text)") }
  }

  /// The relay answers only a device it shares the notebook with: not a trusted device
  /// outside it, nor one it stopped sharing with, nor for a notebook it does not relay (a
  /// member asked gives nothing either: it keeps no sealed records).
  func testOnlyAMemberOfTheNotebookGetsARelaysHistory() throws {
    let (b, c, s, personal) = try hub()
    let (memo, _) = try editedWhileAway(b, s)
    let outsider = try device()
    XCTAssertEqual(try s.store.relayedHistoryRecords(of: memo, in: personal, for: c.node.device).records.count, 3)
    XCTAssertEqual(try s.store.relayedHistoryRecords(of: memo, in: personal, for: outsider.node.device).records, [])
    XCTAssertEqual(try b.store.relayedHistoryRecords(of: memo, in: personal, for: c.node.device).records, [])
    let other = try XCTUnwrap(NotebookID("00112233445566778899aabbccddeeff"))
    XCTAssertEqual(try s.store.relayedHistoryRecords(of: memo, in: other, for: c.node.device).records, [])
    try s.store.setMember(personal, c.node.device, role: .removed, now: 30)
    XCTAssertEqual(try s.store.relayedHistoryRecords(of: memo, in: personal, for: c.node.device).records, [])
  }

  /// What a relay changes or forges is kept aside with its name, never kept as history; a
  /// record the member's current revision does not supersede is left for a sync.
  func testAlteredForgedOrNewerRecordsAreNotKeptAsHistory() throws {
    let (b, c, s, personal) = try hub()
    try sync(c, with: s)
    let memo = try b.store.create(MemoDraft(title: "away", body: "canary newer v1"), now: 3)
    try sync(b, with: s)
    try sync(c, with: s)
    for index in 2...3 {
      try b.store.update(memo.id, MemoChange(body: "canary newer v\(index)"), now: Int64(3 + index))
      try sync(b, with: s)
    }
    // c has v1 only: the relay kept v1 and v2 (v3 is its head). v1 is known, v2 is newer.
    let newer = try fetch(memo.id, in: personal, by: c, from: s)
    XCTAssertEqual(newer.known, 1)
    XCTAssertEqual(newer.notSuperseded, 1)
    XCTAssertEqual(try c.store.history(of: memo.id).count, 1)

    // c's sync brings v3 (v1 joins its history); v2 only the relay holds. What the relay
    // changes or forges of it is kept aside, naming the relay.
    try sync(c, with: s)
    let tampering: [(inout SyncRecord) -> Void] = [
      { $0.sealed[$0.sealed.count - 1] ^= 1 },
      { $0.signature = Array(repeating: 9, count: 64) },
      { $0.clock = VersionVector([$0.dot.origin: $0.dot.seq + 1]) },
    ]
    for tamper in tampering {
      let altered = try fetch(memo.id, in: personal, by: c, from: s) { records in
        XCTAssertEqual(records.count, 2)
        tamper(&records[1])
      }
      XCTAssertEqual(altered.added, 0)
      XCTAssertEqual(altered.known, 1)
      XCTAssertEqual(altered.keptAside, 1)
    }
    XCTAssertEqual(try c.store.history(of: memo.id).map(\.memo.body), ["canary newer v1", "canary newer v3"])
    let kept = try c.store.quarantined()
    XCTAssertEqual(Set(kept.map(\.peer)), [s.node.device])
    XCTAssertTrue(kept.allSatisfy { $0.reason.hasPrefix("history: ") }, "\(kept)")
    // The honest record still comes afterwards.
    XCTAssertEqual(try fetch(memo.id, in: personal, by: c, from: s).added, 1)
    XCTAssertEqual(
      try c.store.history(of: memo.id).map(\.memo.body), ["canary newer v1", "canary newer v2", "canary newer v3"])
  }

  /// Issue 38 on a relay: c's flood of edits of a memo b wrote four times does not evict
  /// b's records from what the relay keeps (the share of each author, keyed by the device
  /// its replica is bound to), and a member still fetches b's history from it.
  func testARelayKeepsEachAuthorsShareOfAFloodedMemo() throws {
    let (b, c, s, personal) = try hub()
    // The relay's side of each sync opens its own store: the bound goes in its config.
    try FileManager.default.createDirectory(atPath: s.node.paths.configDirectory, withIntermediateDirectories: true)
    try PrivateFiles.writeAtomically(Array(#"{"history": {"revisions": 8}}"#.utf8), to: NodeConfig.path(s.node.paths))
    let (memo, texts) = try editedWhileAway(b, s)
    try sync(c, with: s)
    for index in 1...12 {
      try c.store.update(memo, MemoChange(body: "canary flood \(index)"), now: Int64(10 + index))
      try sync(c, with: s)
    }
    let kept = try s.store.relayedHistory(of: memo).map(\.dot.origin)
    XCTAssertEqual(kept.filter { $0 == b.store.replicaID }.count, 4, "b's four revisions: \(kept)")
    XCTAssertEqual(kept.filter { $0 == c.store.replicaID }.count, 4, "c keeps the other four places")
    let d = try device()
    try shareNotebook(
      personal,
      among: [(b.store, b.node.device), (c.store, c.node.device), (s.store, s.node.device), (d.store, d.node.device)],
      roles: [.member, .member, .relay, .member])
    try sync(b, with: s)
    try sync(d, with: s)
    let answer = try fetch(memo, in: personal, by: d, from: s)
    XCTAssertEqual(answer.added + answer.known, 8)
    let fetched = try d.store.history(of: memo).filter { $0.author == b.node.device }
    XCTAssertEqual(fetched.map(\.memo.body), texts)
  }
}
