import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Sync between real stores without a network, through the production sync session over an
/// in-memory channel: conflicts and their resolution, an edit against a delete, the
/// mass-delete guard and its answers, resuming a cut-off sync, and a sent memo that stays
/// one memo.
final class SyncStoreTests: XCTestCase {
  var nodes: [TemporaryNode] = []
  var stores: [MemoStore] = []

  /// A new store that shares one notebook (the first store's default) with every store of
  /// the test, as devices syncing everything did before notebooks.
  func store() throws -> MemoStore {
    let node = try TemporaryNode()
    nodes.append(node)
    stores.append(try node.open())
    try shareNotebook(
      try stores[0].defaultNotebook().id, among: zip(stores, nodes).map { ($0, $1.device) })
    return stores[stores.count - 1]
  }

  func node(of store: MemoStore) -> TemporaryNode {
    nodes.first { $0.paths.databasePath == store.paths.databasePath }!
  }

  /// `sink` syncs with `source` (it asks, `source` answers), in batches of four heads; what
  /// `sink` received. (The session runs both ways: `source` gets what `sink` had too.)
  @discardableResult
  func sync(_ source: MemoStore, into sink: MemoStore, guard deleteGuard: MassDeleteGuard? = nil)
    throws -> SyncMessage.Outcome
  {
    let run = runSync(
      sink, as: node(of: sink).device, with: node(of: source).answerer, deleteGuard: deleteGuard, batch: 4)
    try run.answerer.get()
    return try run.report().received
  }

  func bodies(_ store: MemoStore) throws -> [String] { try store.allHeadRows().filter { !$0.isDeleted }.map(\.body) }

  func testConcurrentEditsKeepBothAndEveryReplicaShowsTheSame() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "list", body: "milk"), now: 1)
    _ = try sync(a, into: b)
    try a.update(memo.id, MemoChange(body: "milk, eggs"), now: 2)
    try b.update(memo.id, MemoChange(body: "milk, bread"), now: 2)
    XCTAssertEqual(try sync(b, into: a).conflicts, 1)
    _ = try sync(a, into: b)
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
    XCTAssertEqual(Set(try bodies(a)), ["milk, eggs", "milk, bread"])
    let conflicts = try a.conflicts()
    XCTAssertEqual(conflicts.map(\.memo), [memo.id])
    let copy = try XCTUnwrap(conflicts.first?.copies.first)
    XCTAssertThrowsError(try a.update(memo.id, MemoChange(body: "x"), now: 3)) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .conflict)
    }
    XCTAssertThrowsError(try a.update(copy.id, MemoChange(body: "x"), now: 3), "a copy is read-only")
    XCTAssertThrowsError(try a.delete(memo.id, now: 3))
    let resolution = try a.resolveConflict(copy.id, keep: .b, now: 4)
    XCTAssertEqual(resolution.memo, memo.id)
    let kept = try a.memo(memo.id).body
    XCTAssertEqual(try a.conflicts(), [])
    _ = try sync(a, into: b)
    XCTAssertEqual(try b.memo(memo.id).body, kept)
    XCTAssertEqual(try b.conflicts(), [])
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testAnEditBeatsAConcurrentDeleteAndIsFlagged() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "keep me", body: "v1"), now: 1)
    _ = try sync(a, into: b)
    try a.delete(memo.id, now: 2)
    try b.update(memo.id, MemoChange(body: "v2"), now: 2)
    _ = try sync(a, into: b)
    _ = try sync(b, into: a)
    for replica in [a, b] {
      XCTAssertEqual(try replica.memo(memo.id).body, "v2")
      XCTAssertEqual(try replica.conflicts().first?.overruledDelete, true)
      XCTAssertTrue(try XCTUnwrap(try replica.listing().first).hasConflict)
    }
    // B carries the delete out, and that replicates.
    try b.resolveConflict(memo.id, keep: .b, now: 3)
    _ = try sync(b, into: a)
    XCTAssertEqual(try a.count(), 0)
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testTheGuardHoldsAMassDeleteUntilAPersonAnswers() throws {
    let a = try store()
    let b = try store()
    let memos = try a.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    _ = try sync(a, into: b)
    for memo in memos { try a.delete(memo.id, now: 2) }
    let before = try b.knowledge()
    let held = try sync(a, into: b, guard: MassDeleteGuard())
    XCTAssertEqual(held.heldDeletes, 20)
    XCTAssertEqual(held.liveMemos, 20)
    XCTAssertEqual(try b.count(), 20, "nothing deleted")
    XCTAssertEqual(try b.knowledge(), before, "a sync that held deletes does not claim to know them")
    XCTAssertEqual(try b.syncPeerRecords().first?.heldDeletes, 20)
    // Syncing again holds them again (they are not sent twice: the position moved on).
    XCTAssertEqual(try sync(a, into: b, guard: MassDeleteGuard()).heldDeletes, 20)
    // Keep: new revisions that have seen the deletes, so the memos come back on a.
    XCTAssertEqual(try b.settleHeldDeletes(from: node(of: a).device, apply: false, now: 3), 20)
    _ = try sync(b, into: a)
    XCTAssertEqual(try a.count(), 20)
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testAllowingHeldDeletesAppliesThemAndASmallDeletePassesTheGuard() throws {
    let a = try store()
    let b = try store()
    let memos = try a.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    _ = try sync(a, into: b)
    for memo in memos.prefix(3) { try a.delete(memo.id, now: 2) }
    XCTAssertEqual(try sync(a, into: b, guard: MassDeleteGuard()).heldDeletes, 0)
    XCTAssertEqual(try b.count(), 17)
    for memo in memos.dropFirst(3) { try a.delete(memo.id, now: 3) }
    XCTAssertEqual(try sync(a, into: b, guard: MassDeleteGuard()).heldDeletes, 17)
    XCTAssertEqual(try b.settleHeldDeletes(from: node(of: a).device, apply: true, now: 4), 17)
    XCTAssertEqual(try b.count(), 0)
    _ = try sync(a, into: b, guard: MassDeleteGuard())
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testAPeerWhoseDatabaseWasWipedDeletesNothingAndGetsEverythingBack() throws {
    let a = try store()
    let b = try store()
    _ = try a.createMany((1...12).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    _ = try sync(a, into: b)
    // b's data directory is replaced by an empty one: a new database, a new replica id.
    let wiped = try store()
    XCTAssertEqual(try sync(wiped, into: a, guard: MassDeleteGuard()).applied, 0)
    XCTAssertEqual(try a.count(), 12, "an empty store has nothing to delete with")
    _ = try sync(a, into: wiped)
    XCTAssertEqual(try wiped.count(), 12)
    XCTAssertEqual(try a.allHeadRows(), try wiped.allHeadRows())
  }

  func testACutOffSyncResumesWhereItStopped() throws {
    let a = try store()
    let b = try store()
    _ = try a.createMany((1...40).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    let cut = runSync(b, as: node(of: b).device, with: node(of: a).answerer, batch: 4, faults: cutAfter(batches: 3))
    XCTAssertThrowsError(try cut.report(), "the asker sees the sync break off")
    XCTAssertEqual(try b.count(), 12, "three batches of four were committed")
    let resumed = try sync(a, into: b)
    XCTAssertEqual(resumed.applied, 28, "only what was not committed before")
    XCTAssertEqual(try b.count(), 40)
    // A second full sync sends nothing: the knowledge covers it all.
    XCTAssertEqual(try sync(a, into: b).applied, 0)
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testASyncCutWhileTheAskerSendsResumesOnTheAnswerer() throws {
    let a = try store()
    let b = try store()
    _ = try b.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    // b asks a; a has nothing for b, b sends its 20 in batches of four and the link breaks
    // after the second: a keeps exactly those 8.
    let cut = runSync(
      b, as: node(of: b).device, with: node(of: a).answerer, batch: 4, faults: cutAfter(batches: 2, fromAsker: true))
    XCTAssertThrowsError(try cut.report())
    XCTAssertThrowsError(try cut.answerer.get(), "the answerer sees it too")
    XCTAssertEqual(try a.count(), 8)
    let again = try XCTUnwrap(try runSync(b, as: node(of: b).device, with: node(of: a).answerer, batch: 4).report())
    XCTAssertEqual(again.sent.applied, 12, "the rest, not all 20")
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
  }

  func testASentMemoStaysOneMemoWithOneHistory() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "shared", body: "v1"), now: 1)
    // a and b are members of one notebook: the signed revision lands as the memo's own.
    let content = DeliveryMessage.Content(
      title: memo.title, body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate, sent: 5,
      revision: try a.sentRevision(of: memo))
    let outcome = try b.receiveDelivery(
      id: MemoID().rawValue, from: node(of: a).device, memo: content, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 6)
    XCTAssertEqual(outcome, .stored("memos", duplicate: false))
    XCTAssertEqual(try b.memo(memo.id).body, "v1")
    // Already there: a sync sends nothing new, and the rows are the same.
    _ = try sync(a, into: b)
    XCTAssertEqual(try a.allHeadRows(), try b.allHeadRows())
    XCTAssertEqual(try b.memo(memo.id).record?.author, node(of: a).device, "signed by a")
  }

  /// A delivered edit of a memo lands in that memo only from a member of its notebook,
  /// with a signature that verifies; anything else is a new memo (issue 23).
  func testADeliveredEditLandsOnlyFromAMemberAndSigned() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "shared", body: "v1"), now: 1)
    _ = try sync(a, into: b)
    try a.update(memo.id, MemoChange(body: "v2"), now: 2)
    let edit = try a.memo(memo.id)
    let signed = DeliveryMessage.Content(
      title: edit.title, body: edit.body, tags: edit.tags, isPrivate: false, sent: 3,
      revision: try a.sentRevision(of: edit))
    // From a device that is not a member: a new memo, b's copy untouched.
    _ = try b.receiveDelivery(
      id: MemoID().rawValue, from: TestDevices.id(named: "stranger"), memo: signed, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 4)
    XCTAssertEqual(try b.memo(memo.id).body, "v1")
    XCTAssertEqual(try b.count(), 2)
    // From the member, with its record changed on the way: the signature fails, a new memo.
    var tampered = signed
    tampered.revision?.record?.signature = Data(repeating: 9, count: 64).base64EncodedString()
    _ = try b.receiveDelivery(
      id: MemoID().rawValue, from: node(of: a).device, memo: tampered, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 5)
    XCTAssertEqual(try b.memo(memo.id).body, "v1")
    XCTAssertEqual(try b.count(), 3)
    // From the member, signed: the edit.
    _ = try b.receiveDelivery(
      id: MemoID().rawValue, from: node(of: a).device, memo: signed, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 6)
    XCTAssertEqual(try b.memo(memo.id).body, "v2")
    XCTAssertEqual(try b.count(), 3)
  }
}
