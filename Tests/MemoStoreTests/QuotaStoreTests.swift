import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@_spi(Fuzzing) @testable import MemoStore
@_spi(Fuzzing) @testable import MemoVault

/// The per-peer quotas (issue 23): one device cannot add memos without bound, nor fill a
/// relay for everyone; over a quota its batch is refused (`over-quota`, nothing of it
/// stored, nothing lost: it comes again), and every other device goes on as before.
final class QuotaStoreTests: XCTestCase {
  var nodes: [TemporaryNode] = []
  let made = TestAuthor.shared.replica(0)

  func store() throws -> MemoStore {
    let node = try TemporaryNode()
    nodes.append(node)
    return try node.open()
  }

  func fresh(_ index: Int, origin: ReplicaID, seq: UInt64) -> SyncRevision {
    SyncRevision(
      memo: MemoID(),
      head: HeadSummary(
        dot: Dot(origin: origin, seq: seq), clock: VersionVector([origin: seq]), revision: 1, isDeleted: false),
      created: 1, updated: 1, isPrivate: false, title: "new \(index)", body: "body", tags: [])
  }

  func batch(_ range: ClosedRange<Int>, position: UInt64) -> SyncBatchCodec.Batch {
    .init(position: position, revisions: range.map { fresh($0, origin: made, seq: UInt64($0)) })
  }

  func testOnePeerAddsAtMostItsQuotaOfNewMemosADayAndTheRestWaits() throws {
    let b = try store()
    let peer = TestDevices.id(named: "FLOODING")
    let notebook = try b.defaultNotebook().id
    // The peer has synced this notebook before: its new memos count.
    try b.batch { try b.setSyncCursor(peer, in: notebook, FeedPosition(replica: made, position: 0)) }
    let day: Timestamp = 1_800_000_000_000
    let sink = try RevisionSink(
      store: b, peer: peer, peerReplica: made, deleteGuard: nil, maximumNewMemos: 5)
    _ = try sink.apply(batch(1...5, position: 5), now: day)
    XCTAssertThrowsError(try sink.apply(batch(6...7, position: 7), now: day)) {
      XCTAssertEqual(($0 as? SyncViolation)?.reason, .overQuota, "\($0)")
    }
    XCTAssertEqual(try b.count(), 5, "nothing of the batch over the quota")
    // Another device is not held back by this one's quota.
    let other = TestDevices.id(named: "HONEST")
    try b.batch { try b.setSyncCursor(other, in: notebook, FeedPosition(replica: made, position: 0)) }
    let honest = TestAuthor.shared.replica(9_999)
    _ = try RevisionSink(store: b, peer: other, peerReplica: honest, deleteGuard: nil, maximumNewMemos: 5)
      .apply(.init(position: 1, revisions: [fresh(1, origin: honest, seq: 1)]), now: day)
    XCTAssertEqual(try b.count(), 6)
    // The next day the rest comes (the peer sends it again: its cursor did not move).
    _ = try RevisionSink(store: b, peer: peer, peerReplica: made, deleteGuard: nil, maximumNewMemos: 5)
      .apply(batch(6...7, position: 7), now: day + 86_400_000)
    XCTAssertEqual(try b.count(), 8)
  }

  func testTheFirstSyncOfANotebookWithADeviceIsNotCounted() throws {
    let b = try store()
    let sink = try RevisionSink(
      store: b, peer: TestDevices.id(named: "NEW-LAPTOP"), peerReplica: made, deleteGuard: nil, maximumNewMemos: 5)
    _ = try sink.apply(batch(1...12, position: 12), now: 1_800_000_000_000)
    XCTAssertEqual(try b.count(), 12, "a new laptop's first sync brings all of a household's memos")
  }

  /// The first fill is bounded too, for as long as the session lasts (a live link's lasts
  /// for days): over the bound the batch is refused naming the quota, nothing of it is
  /// stored, and another peer's first fill of the same notebook is not held back.
  func testAFirstFillStopsAtItsBoundAndOnlyThatPeer() throws {
    let b = try store()
    let peer = TestDevices.id(named: "FLOODING")
    let sink = try RevisionSink(
      store: b, peer: peer, peerReplica: made, deleteGuard: nil, maximumNewMemos: 5, maximumFirstFill: 12)
    let day: Timestamp = 1_800_000_000_000
    _ = try sink.apply(batch(1...8, position: 8), now: day)
    _ = try sink.apply(batch(9...12, position: 12), now: day)
    XCTAssertThrowsError(try sink.apply(batch(13...14, position: 14), now: day)) {
      let violation = $0 as? SyncViolation
      XCTAssertEqual(violation?.reason, .overQuota, "\($0)")
      XCTAssertTrue(violation?.detail.contains("first sync of notebook") ?? false, "\($0)")
    }
    XCTAssertEqual(try b.count(), 12, "nothing of the batch over the bound")
    let other = TestDevices.id(named: "HONEST")
    let honest = TestAuthor.shared.replica(9_999)
    _ = try RevisionSink(
      store: b, peer: other, peerReplica: honest, deleteGuard: nil, maximumNewMemos: 5, maximumFirstFill: 12
    ).apply(.init(position: 1, revisions: [fresh(1, origin: honest, seq: 1)]), now: day)
    XCTAssertEqual(try b.count(), 13)
  }

  /// config.json's `quotas` sets both quotas; a value out of range is refused naming it.
  func testTheQuotasComeFromConfigJSON() throws {
    let config = try NodeConfig.parse(
      Array(#"{"quotas": {"first_fill_memos": 40, "new_memos_per_day": 7}}"#.utf8), path: "config.json")
    XCTAssertEqual(config.quotas, SyncQuotas(newMemosPerDay: 7, firstFillMemos: 40))
    XCTAssertEqual(try NodeConfig.parse(Array("{}".utf8), path: "c").quotas, SyncQuotas())
    XCTAssertThrowsError(
      try NodeConfig.parse(Array(#"{"quotas": {"first_fill_memos": -1}}"#.utf8), path: "config.json")
    ) {
      XCTAssertTrue("\($0)".contains("quotas.first_fill_memos"), "\($0)")
    }
  }

  /// A relay keeps at most its quota of sealed bytes of one author in one notebook: one
  /// member cannot fill it for the others.
  func testARelayKeepsAtMostItsQuotaOfSealedBytesPerAuthor() throws {
    let memberNode = try TemporaryNode()
    let relayNode = try TemporaryNode()
    nodes += [memberNode, relayNode]
    let b = try memberNode.open()
    let s = try relayNode.open()
    let notebook = try b.defaultNotebook().id
    try shareNotebook(notebook, among: [(b, try b.deviceID()), (s, try s.deviceID())], roles: [.member, .relay])
    let flooding = TestAuthor()
    let quiet = TestAuthor()
    for author in [flooding, quiet] { try b.share(notebook, with: author.device, as: .member, now: 2) }
    _ = try runSync(s, as: try s.deviceID(), with: SyncAnswerSide(paths: b.paths, device: try b.deviceID())).report()
    func records(by author: TestAuthor, replica: ReplicaID, count: Int) -> SyncRecordBatch.Batch {
      let plain = (1...count).map { seq in
        SyncRecord(
          notebook: notebook, memo: MemoID(), dot: Dot(origin: replica, seq: UInt64(seq)),
          clock: VersionVector([replica: UInt64(seq)]), keyID: String(repeating: "c", count: 32),
          sealed: Array(repeating: 7, count: 1000))
      }
      let (signed, bindings) = author.signed(plain)
      return .init(position: 1, bindings: bindings, records: signed)
    }
    func sink() throws -> SyncSink {
      try SyncSink(
        store: s, peer: try b.deviceID(), peerReplica: b.replicaID, deleteGuard: nil,
        plan: SyncPlan(receiving: [notebook: .relay], announced: [notebook]), maximumRelayedBytes: 2500)
    }
    let floodReplica = flooding.replica()
    XCTAssertThrowsError(try sink().apply(records(by: flooding, replica: floodReplica, count: 3), now: 3)) {
      XCTAssertEqual(($0 as? SyncViolation)?.reason, .overQuota, "\($0)")
    }
    XCTAssertEqual(try s.relayedRevisionCount(), 0, "nothing of the batch over the quota")
    _ = try sink().apply(records(by: flooding, replica: floodReplica, count: 2), now: 3)
    _ = try sink().apply(records(by: quiet, replica: quiet.replica(), count: 2), now: 3)
    XCTAssertEqual(try s.relayedRevisionCount(), 4, "the other author's records are kept")
  }
}
