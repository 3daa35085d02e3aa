import MemoCore
import MemoProtocol
import XCTest

/// The pure rules of sync: version vectors, the heads of a memo, the mass-delete guard and
/// the batch codec.
final class SyncRulesTests: XCTestCase {
  func head(
    _ origin: ReplicaID, _ seq: UInt64, _ clock: [ReplicaID: UInt64], revision: Int64 = 1, deleted: Bool = false
  )
    -> HeadSummary
  {
    HeadSummary(
      dot: Dot(origin: origin, seq: seq), clock: VersionVector(clock), revision: revision, isDeleted: deleted)
  }

  func testVersionVectorsOrderRevisionsWithoutClocks() {
    let a = VersionVector(["a": 2])
    let ab = VersionVector(["a": 2, "b": 1])
    let b = VersionVector(["b": 3])
    XCTAssertEqual(a.compare(ab), .before)
    XCTAssertEqual(ab.compare(a), .after)
    XCTAssertEqual(ab.compare(b), .concurrent)
    XCTAssertEqual(a.compare(VersionVector(["a": 2, "z": 0])), .equal, "zero entries are absent entries")
    XCTAssertEqual(ab.merging(b), VersionVector(["a": 2, "b": 3]))
    XCTAssertTrue(ab.contains(Dot(origin: "a", seq: 1)))
    XCTAssertFalse(ab.contains(Dot(origin: "b", seq: 2)))
    let (r1, r2) = (ReplicaID(String(repeating: "1", count: 32))!, ReplicaID(String(repeating: "2", count: 32))!)
    let stored = VersionVector([r1: 2, r2: 3])
    XCTAssertEqual(VersionVector(encoded: stored.encoded()), stored)
    XCTAssertNil(VersionVector(encoded: ab.encoded()), "names that are not replica ids")
    XCTAssertNil(VersionVector(encoded: [0, 0, 0, 1, 0, 0]), "truncated")
    XCTAssertNil(VersionVector(encoded: VersionVector().encoded() + [1]), "trailing bytes")
  }

  func testMergingKeepsExactlyTheRevisionsNobodyHasSeen() {
    let base = head("a", 1, ["a": 1])
    let editA = head("a", 2, ["a": 2], revision: 2)
    let editB = head("b", 1, ["a": 1, "b": 1], revision: 2)
    XCTAssertEqual(MemoHeads.merge([base], incoming: editA), .add(removing: [base.dot]))
    XCTAssertEqual(MemoHeads.merge([editA], incoming: base), .known, "an older revision changes nothing")
    XCTAssertEqual(MemoHeads.merge([editA], incoming: editA), .known, "a duplicate changes nothing")
    XCTAssertEqual(MemoHeads.merge([editA], incoming: editB), .add(removing: []), "concurrent: both stay")
    // The same heads whatever the order.
    let one = MemoHeads.merged(MemoHeads.merged([base], incoming: editA), incoming: editB)
    let two = MemoHeads.merged(MemoHeads.merged([base], incoming: editB), incoming: editA)
    XCTAssertEqual(Set(one.map(\.dot)), Set(two.map(\.dot)))
    XCTAssertEqual(MemoHeads.winner(one)?.dot, MemoHeads.winner(two)?.dot)
  }

  func testTheWinnerIsLiveThenMostRevisedThenHighestDot() {
    let live = head("a", 1, ["a": 1], revision: 2)
    let tombstone = head("b", 9, ["b": 9], revision: 7, deleted: true)
    XCTAssertEqual(MemoHeads.winner([tombstone, live])?.dot, live.dot, "an edit beats a concurrent delete")
    let moreRevised = head("c", 1, ["c": 1], revision: 3)
    XCTAssertEqual(MemoHeads.winner([live, moreRevised])?.dot, moreRevised.dot)
    let tieLow = head("x", 4, ["x": 4], revision: 3)
    XCTAssertEqual(MemoHeads.winner([tieLow, moreRevised])?.dot, tieLow.dot, "then the higher sequence")
  }

  func testOnlyADeleteThatWinsCountsForTheGuard() {
    let live = head("a", 1, ["a": 1])
    let seenDelete = head("b", 1, ["a": 1, "b": 1], deleted: true)
    let blindDelete = head("b", 1, ["b": 1], deleted: true)
    XCTAssertTrue(MemoHeads.deletes([live], incoming: seenDelete))
    XCTAssertFalse(MemoHeads.deletes([live], incoming: blindDelete), "concurrent: the memo survives")
    XCTAssertFalse(MemoHeads.deletes([], incoming: seenDelete), "nothing live to delete")
  }

  func testALocalRevisionSettlesDeletesButNotConflictCopies() {
    let winner = head("a", 3, ["a": 3], revision: 3)
    let copy = head("b", 1, ["b": 1], revision: 2)
    let tombstone = head("c", 1, ["c": 1], deleted: true)
    let clock = MemoHeads.clockForLocalRevision([winner, copy, tombstone], resolvingAll: false)
    XCTAssertTrue(clock.covers(winner.clock))
    XCTAssertTrue(clock.covers(tombstone.clock))
    XCTAssertFalse(clock.covers(copy.clock))
    XCTAssertTrue(MemoHeads.clockForLocalRevision([winner, copy], resolvingAll: true).covers(copy.clock))
  }

  func testTheMassDeleteGuard() {
    let guardrail = MassDeleteGuard()
    XCTAssertTrue(guardrail.allows(removals: 9, liveBefore: 9), "fewer than ten always pass")
    XCTAssertTrue(guardrail.allows(removals: 10, liveBefore: 20), "half passes")
    XCTAssertFalse(guardrail.allows(removals: 11, liveBefore: 20))
    XCTAssertFalse(guardrail.allows(removals: 10, liveBefore: 10), "a wiped peer")
    // Removals from the same peer within the window add up: nine a sync, repeated.
    XCTAssertTrue(guardrail.allows(removals: 9, liveBefore: 20))
    XCTAssertFalse(guardrail.allows(removals: 9, liveBefore: 11, recentlyApplied: 9), "18 of the 20 there were")
    XCTAssertTrue(guardrail.allows(removals: 9, liveBefore: 91, recentlyApplied: 9), "18 of 100")
    XCTAssertFalse(guardrail.allows(removals: Int.max, liveBefore: 1, recentlyApplied: 1), "overflow holds")
  }

  func testTheGuardsLedgerCountsOnlyItsWindow() {
    let day = SyncLimits.guardWindow
    let ledger: [(time: Int64, count: Int)] = [(0, 5), (day / 2, 4), (day, 3), (day * 2, 100)]
    XCTAssertEqual(MassDeleteGuard.recent(ledger, now: day + 10), 107, "a clock set back still counts the future")
    XCTAssertEqual(MassDeleteGuard.recent(ledger, now: day * 3), 0)
    XCTAssertEqual(MassDeleteGuard.recent(ledger, now: day * 2 - 1), 103)
    XCTAssertEqual(MassDeleteGuard.recent(ledger, now: day * 2 + 1), 100)
  }

  func testAnEditThatEmptiesAMemoIsGuardedOnlyWhereItWins() {
    let live = head("a", 1, ["a": 1], revision: 2)
    let emptying = head("b", 1, ["a": 1, "b": 1], revision: 3)
    let concurrent = head("b", 1, ["b": 1], revision: 1)
    XCTAssertTrue(MemoHeads.empties([live], incoming: emptying, winnerHasBody: true))
    XCTAssertFalse(MemoHeads.empties([live], incoming: emptying, winnerHasBody: false), "nothing to lose")
    XCTAssertFalse(MemoHeads.empties([live], incoming: concurrent, winnerHasBody: true), "only a conflict copy")
    XCTAssertFalse(MemoHeads.empties([], incoming: emptying, winnerHasBody: true), "a new memo")
  }

  func testBatchesSurviveTheCodecAndMalformedOnesAreRefused() throws {
    let (r1, r2) = (ReplicaID(String(repeating: "1", count: 32))!, ReplicaID(String(repeating: "2", count: 32))!)
    let memo = try XCTUnwrap(MemoID("8E0F3D4A-1B2C-4D5E-8F90-123456789ABC"))
    let revision = SyncRevision(
      memo: memo, head: head(r1, 7, [r1: 7, r2: 2], revision: 4), created: 1, updated: 2, isPrivate: true,
      title: "Tïtle", body: "body\n", tags: ["a", "b"])
    let tombstone = SyncRevision(
      memo: memo, head: head(r2, 3, [r1: 7, r2: 3], revision: 5, deleted: true), created: 1, updated: 3,
      isPrivate: false, title: "", body: "", tags: [])
    let batch = SyncBatchCodec.Batch(position: 42, revisions: [revision, tombstone])
    let bytes = SyncBatchCodec.encode(batch)
    XCTAssertEqual(try SyncBatchCodec.decode(bytes), batch)
    func refused(_ bytes: [UInt8], _ reason: SyncMessage.RefuseReason, _ message: String) {
      XCTAssertThrowsError(try SyncBatchCodec.decode(bytes), message) { error in
        XCTAssertEqual((error as? SyncViolation)?.reason, reason, "\(message): \(error)")
      }
    }
    for cut in [1, 9, 13, bytes.count / 2, bytes.count - 1] {
      refused(Array(bytes.prefix(cut)), .malformed, "truncated at \(cut)")
    }
    refused(bytes + [0], .malformed, "trailing bytes")
    refused([2] + bytes.dropFirst(), .malformed, "another version")
    var outside = revision
    outside.head.clock = VersionVector([r1: 6])
    refused(
      SyncBatchCodec.encode(.init(position: 1, revisions: [outside])), .invalidRevision,
      "a revision whose clock lacks its own dot")
  }
}
