import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// A sink receiving a sync gives its connection a larger page cache and a later
/// checkpoint (`beginBulkWrites`), and the connection has SQLite's defaults again once the
/// last sink on it is done, finished or dropped: a daemon's connection does not keep the
/// memory of a sync it served.
final class BulkWritesTests: XCTestCase {
  func testAConnectionHasItsDefaultsBackOnceTheLastSinkOnItIsDone() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let settings = {
      [try store.db.scalarInt("PRAGMA cache_size"), try store.db.scalarInt("PRAGMA wal_autocheckpoint")]
    }
    let defaults: [Int64] = [-2000, 1000]
    let receiving: [Int64] = [-Int64(MemoStore.bulkCacheKiB), Int64(MemoStore.bulkCheckpointPages)]
    XCTAssertEqual(try settings(), defaults)
    let peerReplica = try XCTUnwrap(ReplicaID(String(repeating: "e", count: 32)))
    let sink = {
      try RevisionSink(store: store, peer: TestDevices.id(7), peerReplica: peerReplica, deleteGuard: nil)
    }
    var cut: RevisionSink? = try sink()
    XCTAssertEqual(try settings(), receiving)
    // The next session on the connection starts before the cut one is let go.
    let next = try sink()
    cut = nil
    XCTAssertNil(cut)
    XCTAssertEqual(try settings(), receiving)
    _ = try next.finish(SyncMessage.Done(position: 0, knowledge: VersionVector()), now: 2)
    XCTAssertEqual(try settings(), defaults)
  }

  /// A receiving session that stored many records drops the listing index until it ends
  /// (`MemoStore+ListingIndex`): meanwhile `list` still answers, from the table; at the end
  /// the index is made again, as schema 8 made it, and `list` reads it alone again.
  func testALargeFillDefersTheListingIndexUntilItsSyncEnds() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let peerReplica = try XCTUnwrap(ReplicaID(String(repeating: "e", count: 32)))
    let sink = try RevisionSink(
      store: store, peer: TestDevices.id(7), peerReplica: peerReplica, deleteGuard: nil, listingIndexDeferral: 6)
    let origin = sink.author.replica()
    func batch(_ seqs: ClosedRange<Int>) -> SyncBatchCodec.Batch {
      SyncBatchCodec.Batch(
        position: UInt64(seqs.upperBound),
        revisions: seqs.map { seq in
          SyncRevision(
            memo: MemoID(),
            head: HeadSummary(
              dot: Dot(origin: origin, seq: UInt64(seq)), clock: VersionVector([origin: UInt64(seq)]), revision: 1,
              isDeleted: false),
            created: Int64(seq), updated: Int64(seq), isPrivate: false, title: "memo \(seq)", body: "body \(seq)",
            tags: [])
        })
    }
    let hasIndex = {
      try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'memos_for_listing'") == 1
    }
    _ = try sink.apply(batch(1...4), now: 2)
    XCTAssertTrue(try hasIndex(), "below the threshold")
    _ = try sink.apply(batch(5...8), now: 2)
    XCTAssertFalse(try hasIndex(), "deferred once 6 records are stored")
    _ = try sink.apply(batch(9...12), now: 2)
    XCTAssertEqual(sink.outcome.applied, 12, "\(sink.outcome)")
    XCTAssertEqual(try store.summaries().count, 12, "list answers from the table meanwhile")
    XCTAssertEqual(try store.search("body 11").map(\.title), ["memo 11"])
    _ = try sink.finish(SyncMessage.Done(position: 12, knowledge: VersionVector()), now: 3)
    XCTAssertTrue(try hasIndex(), "made again when the sync ends")
    XCTAssertEqual(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'listing_index_deferred'"), 0)
    let plan = try store.db.prepare("EXPLAIN QUERY PLAN \(MemoStore.listingQuery)")
    var steps: [String] = []
    while try plan.step() { steps.append(plan.text(3)) }
    XCTAssertEqual(steps, ["SEARCH memos USING COVERING INDEX memos_for_listing (deleted=?)"])
  }

  /// A sync killed while the index was deferred leaves it dropped: the next opening makes it
  /// again once the process that dropped it is gone, and not while it runs.
  func testAListingIndexAKilledSyncLeftDroppedIsMadeAtTheNextOpening() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    try store.create(MemoDraft(title: "t", body: "b"), now: 1)
    try store.deferListingIndex()
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    let count = { try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'memos_for_listing'") }
    _ = try node.open()
    XCTAssertEqual(try count(), 0, "this process dropped it and is alive: it makes it itself")
    let gone = Process()
    gone.executableURL = URL(fileURLWithPath: "/bin/true")
    try gone.run()
    gone.waitUntilExit()
    try node.tamper(
      "UPDATE meta SET value = CAST('\(gone.processIdentifier)' AS BLOB) WHERE key = 'listing_index_deferred'")
    XCTAssertEqual(try node.open().summaries().map(\.title), ["t"])
    XCTAssertEqual(try count(), 1, "made again: its process is gone")
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM meta WHERE key = 'listing_index_deferred'"), 0)
  }
}
