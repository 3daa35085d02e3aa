import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// History (docs/design/sync-v3.md, section 8): every superseded revision is kept, on every
/// path that supersedes one (a local edit, a sync, a conflict's resolution, a delete), with
/// its author; restore and the trash make new revisions; the bounds drop the oldest; undo
/// picks the memos a device changed last.
final class HistoryStoreTests: XCTestCase {
  var nodes: [TemporaryNode] = []
  var stores: [MemoStore] = []

  func store() throws -> MemoStore {
    let node = try TemporaryNode()
    nodes.append(node)
    stores.append(try node.open())
    try shareNotebook(try stores[0].defaultNotebook().id, among: zip(stores, nodes).map { ($0, $1.device) })
    return stores[stores.count - 1]
  }

  func device(of store: MemoStore) -> DeviceID {
    nodes.first { $0.paths.databasePath == store.paths.databasePath }!.device
  }

  func sync(_ source: MemoStore, into sink: MemoStore, guard deleteGuard: MassDeleteGuard? = nil) throws {
    let answerer = nodes.first { $0.paths.databasePath == source.paths.databasePath }!.answerer
    let run = runSync(sink, as: device(of: sink), with: answerer, deleteGuard: deleteGuard, batch: 4)
    try run.answerer.get()
    _ = try run.report()
  }

  func bodies(_ store: MemoStore, _ id: MemoID) throws -> [String] { try store.history(of: id).map(\.memo.body) }

  func testALocalEditKeepsTheRevisionItReplacesWithItsAuthor() throws {
    let a = try store()
    let memo = try a.create(MemoDraft(title: "list", body: "milk"), now: 1)
    try a.update(memo.id, MemoChange(body: "milk, eggs"), now: 2)
    try a.update(memo.id, MemoChange(body: "milk, eggs, tea"), now: 3)
    let history = try a.history(of: memo.id)
    XCTAssertEqual(history.map(\.memo.body), ["milk", "milk, eggs", "milk, eggs, tea"])
    XCTAssertEqual(history.map(\.memo.revision), [1, 2, 3])
    XCTAssertEqual(history.map(\.isCurrent), [false, false, true])
    XCTAssertEqual(Set(history.map(\.author)), [device(of: a)])
    XCTAssertEqual(try a.revision(1, of: memo.id).memo.body, "milk")
    assertMemoError(.notFound, try a.revision(9, of: memo.id))
    // The history is sealed: no plaintext of an old revision on disk.
    XCTAssertNil(try nodes[0].rawDataBytes().firstRange(of: Array("milk, eggs".utf8)))
  }

  func testASyncKeepsTheRevisionsTheReceiverSawWithTheirAuthor() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "plan", body: "v1"), now: 1)
    try sync(a, into: b)
    try a.update(memo.id, MemoChange(body: "v2"), now: 2)
    try sync(a, into: b)
    try a.update(memo.id, MemoChange(body: "v3"), now: 3)
    try a.update(memo.id, MemoChange(body: "v4"), now: 4)
    try sync(a, into: b)
    // b saw v1, v2 and v4 (v3 was superseded on a before the sync): exactly those.
    XCTAssertEqual(try bodies(b, memo.id), ["v1", "v2", "v4"])
    XCTAssertEqual(try bodies(a, memo.id), ["v1", "v2", "v3", "v4"])
    XCTAssertEqual(Set(try b.history(of: memo.id).map(\.author)), [device(of: a)])
    XCTAssertEqual(try b.listing().first?.author, device(of: a))
  }

  func testResolvingAConflictKeepsTheCopyThatWent() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "list", body: "milk"), now: 1)
    try sync(a, into: b)
    try a.update(memo.id, MemoChange(body: "milk, eggs"), now: 2)
    try b.update(memo.id, MemoChange(body: "milk, bread"), now: 2)
    try sync(b, into: a)
    let copy = try XCTUnwrap(try a.conflicts().first?.copies.first)
    try a.resolveConflict(copy.id, keep: .a, now: 3)
    let kept = try bodies(a, memo.id)
    XCTAssertTrue(kept.contains("milk, bread"), "the copy that went is in the history: \(kept)")
    XCTAssertTrue(kept.contains("milk"))
    let bread = try XCTUnwrap(try a.history(of: memo.id).first { $0.memo.body == "milk, bread" })
    XCTAssertEqual(bread.author, device(of: b))
    XCTAssertEqual(bread.memo.id, memo.id)
  }

  func testARevisionNumberSharedByAnEditAndADeleteNamesTheEdit() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "shared", body: "v1"), now: 1)
    try sync(a, into: b)
    try a.delete(memo.id, now: 2)
    try b.update(memo.id, MemoChange(body: "v2 on b"), now: 2)
    try sync(b, into: a)
    try a.resolveConflict(memo.id, keep: .a, now: 3)
    let twos = try a.history(of: memo.id).filter { $0.memo.revision == 2 }
    XCTAssertEqual(Set(twos.map(\.memo.isDeleted)), [true, false], "the delete and the edit are both revision 2")
    XCTAssertEqual(try a.revision(2, of: memo.id).memo.body, "v2 on b")
    XCTAssertEqual(try a.restore(memo.id, revision: 2, now: 4).body, "v2 on b")
  }

  func testRestoreMakesANewRevisionWithANewDotThatSyncsLikeAnEdit() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "draft", body: "first"), now: 1)
    try a.update(memo.id, MemoChange(body: "second"), now: 2)
    let before = try a.memo(memo.id)
    let restored = try a.restore(memo.id, revision: 1, now: 3)
    XCTAssertEqual(restored.body, "first")
    XCTAssertEqual(restored.revision, 3)
    XCTAssertNotEqual(restored.dot, before.dot)
    XCTAssertNotEqual(restored.dot, try a.revision(1, of: memo.id).memo.dot)
    XCTAssertEqual(try bodies(a, memo.id), ["first", "second", "first"])
    try sync(a, into: b)
    XCTAssertEqual(try b.memo(memo.id).body, "first")
    // Restoring the current content makes no revision.
    XCTAssertEqual(try a.restore(memo.id, revision: 3, now: 4).dot, restored.dot)
  }

  func testADeleteGoesToTheTrashAndComesBackFromItOnEveryDevice() throws {
    let a = try store()
    let b = try store()
    let memo = try a.create(MemoDraft(title: "keep", body: "text"), now: 1)
    try sync(a, into: b)
    try a.delete(memo.id, now: 2)
    try sync(a, into: b)
    let now = MemoStore.wallClock()
    for replica in [a, b] {
      let trash = try replica.trash(now: now)
      XCTAssertEqual(trash.map(\.memo), [memo.id])
      XCTAssertEqual(trash.first?.title, "keep")
      XCTAssertEqual(trash.first?.author, device(of: a))
    }
    assertMemoError(.invalidInput, try b.restore(memo.id, revision: 2, now: 3))
    let back = try b.restoreFromTrash(memo.id, now: 3)
    XCTAssertEqual(back.body, "text")
    XCTAssertEqual(try b.trash(now: now), [])
    try sync(b, into: a)
    XCTAssertEqual(try a.memo(memo.id).body, "text")
    XCTAssertEqual(try a.trash(now: now), [])
    assertMemoError(.notFound, try a.restoreFromTrash(memo.id, now: 4))
  }

  func testHeldDeletesAppearInTheTrashAndStayOutOfItsRestore() throws {
    let a = try store()
    let b = try store()
    let memos = try a.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "body \($0)") }, now: 1)
    try sync(a, into: b)
    for memo in memos { try a.delete(memo.id, now: 2) }
    try sync(a, into: b, guard: MassDeleteGuard())
    XCTAssertEqual(try b.count(), 20, "held, not applied")
    let trash = try b.trash(now: MemoStore.wallClock())
    XCTAssertEqual(trash.count, 20)
    XCTAssertEqual(Set(trash.compactMap(\.heldFrom)), [device(of: a)])
    XCTAssertEqual(Set(trash.compactMap(\.title)), Set((1...20).map { "m\($0)" }))
    assertMemoError(.invalidInput, try b.restoreFromTrash(memos[0].id, now: 3))
    XCTAssertEqual(try b.emptyTrash(), 0, "emptying the trash leaves held deletes to the guard")
    // Once applied, they are deletes like any other: in the trash, restorable.
    XCTAssertEqual(try b.settleHeldDeletes(from: device(of: a), apply: true, now: 4), 20)
    let applied = try b.trash(now: MemoStore.wallClock())
    XCTAssertEqual(applied.count, 20)
    XCTAssertTrue(applied.allSatisfy { $0.heldFrom == nil && $0.author == device(of: a) })
    XCTAssertEqual(try b.restoreFromTrash(memos[0].id, now: 5).body, "body 1")
  }

  func testAChangeThatFailsLeavesNoHistory() throws {
    let a = try store()
    let memo = try a.create(MemoDraft(title: "t", body: "kept"), now: 1)
    struct Abort: Error {}
    XCTAssertThrowsError(
      try a.batch {
        try a.update(memo.id, MemoChange(body: "never"), now: 2)
        throw Abort()
      })
    XCTAssertEqual(try bodies(a, memo.id), ["kept"], "the history rolls back with the change it records")
    XCTAssertEqual(try a.historyBytes(), 0)
  }

  func testTheTrashExpiresAndEmptiesWithTheHistoryOfItsMemos() throws {
    let a = try store()
    let old = try a.create(MemoDraft(title: "old", body: "gone soon"), now: 1)
    let other = try a.create(MemoDraft(title: "other", body: "o1"), now: 1)
    try a.delete(old.id, now: 2)
    let day: Int64 = 86_400_000
    let now = MemoStore.wallClock()
    XCTAssertEqual(try a.trash(now: now + 29 * day).map(\.memo), [old.id])
    XCTAssertEqual(try a.trash(now: now + 31 * day), [])
    XCTAssertEqual(try a.history(of: old.id).count, 1, "only the tombstone is left")
    assertMemoError(.notFound, try a.restoreFromTrash(old.id, now: 3))
    try a.update(other.id, MemoChange(body: "o2"), now: 3)
    try a.delete(other.id, now: 4)
    XCTAssertEqual(try a.emptyTrash(), 1)
    XCTAssertEqual(try a.trash(now: now), [])
    XCTAssertEqual(try a.history(of: other.id).map(\.memo.isDeleted), [true])
    XCTAssertEqual(try a.historyBytes(), 0)
  }

  func testTheBoundsDropTheOldestRevisions() throws {
    let a = try store()
    a.setHistoryLimits(HistoryLimits(revisions: 3, days: 365, totalBytes: 1 << 30, trashDays: 30))
    let memo = try a.create(MemoDraft(title: "n", body: "0"), now: 1)
    for index in 1...6 { try a.update(memo.id, MemoChange(body: "\(index)"), now: Int64(index + 1)) }
    XCTAssertEqual(try bodies(a, memo.id), ["3", "4", "5", "6"])
    // The total: one revision's worth of bytes keeps only the newest.
    let perRevision = try a.historyBytes() / 3
    a.setHistoryLimits(HistoryLimits(revisions: 100, days: 365, totalBytes: perRevision, trashDays: 30))
    try a.update(memo.id, MemoChange(body: "7"), now: 9)
    XCTAssertEqual(try bodies(a, memo.id), ["6", "7"])
    XCTAssertLessThanOrEqual(try a.historyBytes(), perRevision)
    // The age: revisions superseded more than `days` ago go.
    a.setHistoryLimits(HistoryLimits(revisions: 100, days: 1, totalBytes: 1 << 30, trashDays: 30))
    _ = try a.trash(now: MemoStore.wallClock() + 2 * 86_400_000)
    XCTAssertEqual(try bodies(a, memo.id), ["7"])
    XCTAssertEqual(try a.historyBytes(), 0)
  }

  /// Issue 38: a member pushing 120 signed edits of a memo its owner edited 5 times evicted
  /// the owner's history (oldest first: 101 revisions kept, none of them the owner's). Each
  /// author now keeps a share: on the owner's device and on a third member's, the owner's 5
  /// revisions stay and the flood keeps the other 95 places.
  func testAMembersFloodOfSignedEditsKeepsTheOwnersRevisions() throws {
    let owner = try store()
    let member = try store()
    let third = try store()
    let memo = try owner.create(MemoDraft(title: "plan", body: "owner 1"), now: 1)
    try sync(owner, into: third)
    for index in 2...5 {
      try owner.update(memo.id, MemoChange(body: "owner \(index)"), now: Int64(index))
      try sync(owner, into: third)
    }
    try sync(owner, into: member)
    for index in 1...120 {
      try member.update(memo.id, MemoChange(body: "flood \(index)"), now: Int64(10 + index))
      try sync(member, into: owner)
      try sync(member, into: third)
    }
    for (name, kept) in [("owner", owner), ("third", third)] {
      let superseded = try kept.history(of: memo.id).filter { !$0.isCurrent }
      XCTAssertEqual(
        superseded.filter { $0.author == device(of: owner) }.map(\.memo.body), (1...5).map { "owner \($0)" }, name)
      XCTAssertEqual(superseded.filter { $0.author == device(of: member) }.count, 95, name)
      XCTAssertEqual(superseded.last?.memo.body, "flood 119", name)
    }
  }

  /// Over the byte total, the author holding the most bytes loses its oldest revisions
  /// first: a member filling the total with edits of its own memos does not evict the
  /// owner's history of another memo, older though it is. The per-author counts start
  /// from nothing, as in a store from before them: the first pass over the total counts
  /// them again from the rows.
  func testAMemberFillingTheByteTotalPaysWithItsOwnRevisions() throws {
    let owner = try store()
    let member = try store()
    let kept = try owner.create(MemoDraft(title: "kept", body: "owner 1"), now: 1)
    for index in 2...4 { try owner.update(kept.id, MemoChange(body: "owner \(index)"), now: Int64(index)) }
    let ownerBytes = try owner.historyBytes()
    let perRevision = ownerBytes / 3
    try owner.db.execute("DELETE FROM counters WHERE name GLOB 'history_bytes:*' OR name GLOB 'history_from:*'")
    owner.setHistoryLimits(
      HistoryLimits(revisions: 100, days: 365, totalBytes: ownerBytes + 10 * perRevision, trashDays: 30))
    let flooded = try member.createMany((1...3).map { MemoDraft(title: "fill", body: "flood \($0)") }, now: 1)
    for index in 1...20 {
      for memo in flooded { try member.update(memo.id, MemoChange(body: "flood \(index)"), now: Int64(10 + index)) }
      try sync(member, into: owner)
    }
    XCTAssertEqual(
      try bodies(owner, kept.id), (1...4).map { "owner \($0)" }, "the owner's older history outlives the flood")
    XCTAssertLessThanOrEqual(try owner.historyBytes(), ownerBytes + 10 * perRevision)
    let flood = try flooded.flatMap { try owner.history(of: $0.id).filter { !$0.isCurrent } }
    XCTAssertGreaterThan(flood.count, 5, "the member keeps what is left of the total")
    XCTAssertEqual(Set(flood.map(\.author)), [device(of: member)])
    let counted = try owner.db.scalarInt(
      "SELECT value FROM counters WHERE name = 'history_bytes:\(device(of: owner).compact)'")
    XCTAssertEqual(counted, ownerBytes)
    let perAuthor = try owner.db.scalarInt("SELECT sum(value) FROM counters WHERE name GLOB 'history_bytes:*'")
    XCTAssertEqual(perAuthor, try owner.historyBytes())
  }

  /// config.json's `history` bounds the history; a config that cannot be read keeps the
  /// most it could allow, not the defaults: a typo must not prune what a person kept.
  func testTheConfigBoundsHistoryAndABrokenConfigPrunesNothing() throws {
    let node = try TemporaryNode()
    nodes.append(node)
    try FileManager.default.createDirectory(atPath: node.paths.configDirectory, withIntermediateDirectories: true)
    let config = NodeConfig.path(node.paths)
    try PrivateFiles.writeAtomically(Array(#"{"history": {"revisions": 3}}"#.utf8), to: config)
    let bounded = try node.open()
    let memo = try bounded.create(MemoDraft(title: "n", body: "0"), now: 1)
    for index in 1...6 { try bounded.update(memo.id, MemoChange(body: "\(index)"), now: Int64(index + 1)) }
    XCTAssertEqual(try bodies(bounded, memo.id), ["3", "4", "5", "6"])

    try PrivateFiles.writeAtomically(Array(#"{"history": {"revisions": 3"#.utf8), to: config)
    let broken = try node.open()
    let edits = HistoryLimits.default.revisions + 5
    for index in 7..<(7 + edits) { try broken.update(memo.id, MemoChange(body: "\(index)"), now: Int64(index + 1)) }
    XCTAssertEqual(try broken.history(of: memo.id).count, 4 + edits, "every revision kept while the config is broken")
  }

  func testUndoPicksTheMemosADeviceChangedLastAndRestoresTheRevisionBefore() throws {
    let a = try store()
    let b = try store()
    let edited = try a.create(MemoDraft(title: "edited", body: "a's text"), now: 1)
    let deleted = try a.create(MemoDraft(title: "deleted", body: "keep me"), now: 1)
    let untouched = try a.create(MemoDraft(title: "untouched", body: "same"), now: 1)
    let answered = try a.create(MemoDraft(title: "answered", body: "q"), now: 1)
    try sync(a, into: b)
    let since = MemoStore.wallClock()
    try b.update(edited.id, MemoChange(body: "b's first"), now: since + 1)
    try b.update(edited.id, MemoChange(body: "b's second"), now: since + 2)
    try b.delete(deleted.id, now: since + 3)
    try b.update(answered.id, MemoChange(body: "b's answer"), now: since + 4)
    let spam = try b.create(MemoDraft(title: "spam", body: "spam"), now: since + 5)
    try sync(b, into: a)
    try a.update(answered.id, MemoChange(body: "a answered after"), now: since + 6)
    let plan = try a.undoPlan(device: device(of: b), since: since)
    XCTAssertEqual(Set(plan.map(\.memo)), [edited.id, deleted.id, spam.id])
    XCTAssertFalse(plan.contains { $0.memo == untouched.id || $0.memo == answered.id })
    let edit = try XCTUnwrap(plan.first { $0.memo == edited.id })
    XCTAssertEqual(edit.undone.map(\.memo.body), ["b's second"], "a saw only the last of b's two edits")
    XCTAssertEqual(edit.target?.memo.body, "a's text")
    XCTAssertNil(try XCTUnwrap(plan.first { $0.memo == spam.id }).target)
    XCTAssertEqual(try a.undoPlan(device: device(of: b), since: since + 100), [])
    let done = try a.undo(plan, now: since + 7)
    XCTAssertEqual(done.count, 3)
    XCTAssertEqual(try a.memo(edited.id).body, "a's text")
    XCTAssertEqual(try a.memo(deleted.id).body, "keep me")
    assertMemoError(.notFound, try a.memo(spam.id))
    XCTAssertEqual(try a.undoPlan(device: device(of: b), since: since), [])
    try sync(a, into: b)
    XCTAssertEqual(try b.memo(edited.id).body, "a's text")
  }
}
