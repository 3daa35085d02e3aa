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
}
