import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// A session's receiving side decides with what is true when it decides (issue 39): a
/// write this device commits while a session runs can come straight back over a pair's
/// other live link. It is then this device's own echo, skipped — never `own-origin` (a
/// revision it never made) — and a peer's edit made on top of it is applied, never kept
/// aside as a clock claiming this device's future. Before, the sink read this device's
/// sequence once, when the session began, and accused an honest peer of both.
final class EchoSyncTests: XCTestCase {
  var nodes: [TemporaryNode] = []

  func pair() throws -> (a: MemoStore, b: MemoStore, aID: DeviceID, bID: DeviceID, notebook: NotebookID) {
    let first = try TemporaryNode()
    let second = try TemporaryNode()
    nodes += [first, second]
    let a = try first.open()
    let b = try second.open()
    let notebook = try a.defaultNotebook().id
    try shareNotebook(notebook, among: [(a, try a.deviceID()), (b, try b.deviceID())])
    return (a, b, try a.deviceID(), try b.deviceID(), notebook)
  }

  /// What b's feed sends of the notebook from the start: the batches a sync would carry.
  func batches(of store: MemoStore, notebook: NotebookID) throws -> [SyncRecordBatch.Batch] {
    let source = try SyncSource(
      store: store, plan: [notebook: SyncPlan.Outgoing(knowledge: VersionVector(), start: 0)])
    var batches: [SyncRecordBatch.Batch] = []
    while let batch = try source.nextBatch() { batches.append(batch) }
    return batches
  }

  func testAWriteCommittedDuringASessionComesBackAsAnEchoAndAnEditOnTopOfItApplies() throws {
    let (a, b, aID, bID, notebook) = try pair()
    // a's session receiving from b begins (a live link's), then a person writes on a.
    let sink = try SyncSink(
      store: a, peer: bID, peerReplica: b.replicaID, deleteGuard: nil,
      plan: SyncPlan(receiving: [notebook: .member], announced: [notebook]))
    let memo = try a.create(MemoDraft(title: "written during the session", body: "first"), now: 10)
    // The write reaches b over the pair's other link…
    _ = try runSync(b, as: bID, with: SyncAnswerSide(paths: a.paths, device: aID)).report()
    XCTAssertEqual(try b.memo(memo.id).body, "first")
    // …and b's feed sends it back over this one: a's own revision, an echo.
    for batch in try batches(of: b, notebook: notebook) { XCTAssertNoThrow(try sink.apply(batch, now: 11)) }
    XCTAssertEqual(sink.outcome.quarantined, 0, "nothing kept aside")
    XCTAssertEqual(try a.memo(memo.id).body, "first")

    // b edits it on top of a's write; the edit's clock names a's new sequence.
    _ = try b.update(memo.id, MemoChange(body: "b's edit"), now: 12)
    for batch in try batches(of: b, notebook: notebook) { _ = try sink.apply(batch, now: 13) }
    XCTAssertEqual(sink.outcome.quarantined, 0, "an edit on top of a's write is not a lie about a")
    XCTAssertEqual(try a.memo(memo.id).body, "b's edit")
    XCTAssertTrue(try a.quarantined().isEmpty)
  }
}
