import XCTest

@testable import MemoCore

/// The merge decision for a head from a peer, without a store: what is written when it
/// meets a memo's heads here.
final class RemoteMergeTests: XCTestCase {
  let memo = MemoID()

  func head(
    _ origin: ReplicaID, _ seq: UInt64, _ clock: [ReplicaID: UInt64], revision: Int64 = 1, deleted: Bool = false
  ) -> HeadSummary {
    var entries = clock
    entries[origin] = seq
    return HeadSummary(
      dot: Dot(origin: origin, seq: seq), clock: VersionVector(entries), revision: revision, isDeleted: deleted)
  }

  func step(
    _ incoming: HeadSummary, over heads: [HeadSummary], bodyIsEmpty: Bool = false, holding: Bool = false,
    winnerHasBody: () -> Bool = { true }
  ) -> RemoteMerge.Step {
    RemoteMerge.step(
      incoming, bodyIsEmpty: bodyIsEmpty, over: heads, memo: memo, holding: holding, winnerHasBody: winnerHasBody)
  }

  func testANewMemoIsStoredAndBecomesLive() {
    let first = head("a", 1, [:])
    XCTAssertEqual(step(first, over: []), .store(removing: [], result: .stored(conflict: false, live: 1)))
  }

  func testAHeadHereHasSeenIsKnown() {
    let base = head("a", 1, [:])
    let edit = head("a", 2, [:], revision: 2)
    XCTAssertEqual(step(base, over: [edit]), .known, "dominated")
    XCTAssertEqual(step(edit, over: [edit]), .known, "already here")
  }

  func testAHeadThatHasSeenTheLocalOnesReplacesThem() {
    let base = head("a", 1, [:])
    let edit = head("b", 1, ["a": 1], revision: 2)
    XCTAssertEqual(step(edit, over: [base]), .store(removing: [base.dot], result: .stored(conflict: false, live: 0)))
  }

  func testAConcurrentHeadBecomesAConflictCopy() {
    let base = head("a", 1, [:])
    let mine = head("a", 2, [:], revision: 2)
    let theirs = head("b", 1, ["a": 1], revision: 2)
    XCTAssertEqual(step(theirs, over: [mine]), .store(removing: [], result: .stored(conflict: true, live: 0)))
    XCTAssertEqual(step(theirs, over: [base]), .store(removing: [base.dot], result: .stored(conflict: false, live: 0)))
  }

  func testADeleteThatLosesToAConcurrentEditIsAConflict() {
    let edit = head("a", 2, [:], revision: 2)
    let delete = head("b", 1, ["a": 1], revision: 2, deleted: true)
    XCTAssertEqual(step(delete, over: [edit]), .store(removing: [], result: .stored(conflict: true, live: 0)))
  }

  func testADeleteOfALiveMemoIsHeldOnlyWhileHolding() {
    let base = head("a", 1, [:])
    let delete = head("b", 1, ["a": 1], revision: 2, deleted: true)
    XCTAssertEqual(step(delete, over: [base], holding: true), .hold)
    XCTAssertEqual(
      step(delete, over: [base], holding: false),
      .store(removing: [base.dot], result: .stored(conflict: false, live: -1)))
    XCTAssertEqual(step(delete, over: [delete], holding: true), .known)
    let again = head("c", 1, ["a": 1], revision: 2, deleted: true)
    let deleted = head("b", 1, ["a": 1], revision: 2, deleted: true)
    XCTAssertEqual(
      step(again, over: [deleted], holding: true), .store(removing: [], result: .stored(conflict: false, live: 0)),
      "a delete of a deleted memo removes nothing")
  }

  func testAnEditThatEmptiesAMemoIsHeldAndOnlyThenIsItsBodyRead() {
    let base = head("a", 1, [:])
    let emptying = head("b", 1, ["a": 1], revision: 2)
    var asked = 0
    let hasBody = {
      asked += 1
      return true
    }
    XCTAssertEqual(step(emptying, over: [base], bodyIsEmpty: true, holding: true, winnerHasBody: hasBody), .hold)
    XCTAssertEqual(asked, 1)
    XCTAssertEqual(
      step(emptying, over: [base], bodyIsEmpty: true, holding: true) {
        asked += 1
        return false
      }, .store(removing: [base.dot], result: .stored(conflict: false, live: 0)), "nothing to empty")
    XCTAssertEqual(
      step(emptying, over: [base], bodyIsEmpty: false, holding: true, winnerHasBody: hasBody),
      .store(removing: [base.dot], result: .stored(conflict: false, live: 0)))
    XCTAssertEqual(
      step(emptying, over: [base], bodyIsEmpty: true, holding: false, winnerHasBody: hasBody),
      .store(removing: [base.dot], result: .stored(conflict: false, live: 0)))
    XCTAssertEqual(
      step(emptying, over: [], bodyIsEmpty: true, holding: true, winnerHasBody: hasBody),
      .store(removing: [], result: .stored(conflict: false, live: 1)))
    XCTAssertEqual(asked, 2, "asked only for an empty body over heads, while holding")
  }

  func testConflictCopiesBeyondTheLimitAreRefusedUnlessAlreadyThere() {
    let copies = (1...UInt64(SyncLimits.maximumConflictCopies + 1)).map { head(ReplicaID(trusted: "r\($0)"), 1, [:]) }
    let one = head("x", 1, [:])
    guard case .refuse(let violation) = step(one, over: copies) else { return XCTFail("not refused") }
    XCTAssertEqual(violation.reason, .tooManyCopies)
    let fewer = Array(copies.dropLast())
    guard case .store = step(one, over: fewer) else { return XCTFail("within the limit") }
    // Already over the limit (from before it): a head that adds no copy is stored.
    let more = copies + [head("y", 1, [:])]
    guard case .store = step(head("y", 2, [:]), over: more) else { return XCTFail("no more copies than before") }
  }

  func testARelayKeepsRecordsByTheSameHeadRules() {
    let base = head("a", 1, [:])
    let edit = head("b", 1, ["a": 1])
    let concurrent = head("c", 1, ["a": 1])
    func relayed(_ incoming: HeadSummary, over heads: [HeadSummary], maximum: Int = 33) -> RemoteMerge.Step {
      RemoteMerge.relayedStep(incoming.clock, over: heads.map { ($0.dot, $0.clock) }, memo: memo, maximumHeads: maximum)
    }
    XCTAssertEqual(relayed(base, over: []), .store(removing: [], result: .stored(conflict: false, live: 1)))
    XCTAssertEqual(relayed(base, over: [edit]), .known)
    XCTAssertEqual(relayed(edit, over: [base]), .store(removing: [base.dot], result: .stored(conflict: false, live: 0)))
    XCTAssertEqual(relayed(concurrent, over: [edit]), .store(removing: [], result: .stored(conflict: true, live: 0)))
    guard case .refuse(let violation) = relayed(concurrent, over: [edit], maximum: 1) else {
      return XCTFail("a memo at its relayed heads' limit")
    }
    XCTAssertEqual(violation.reason, .tooManyCopies)
    XCTAssertEqual(
      relayed(edit, over: [base], maximum: 1), .store(removing: [base.dot], result: .stored(conflict: false, live: 0)),
      "one that replaces a record adds none")
  }
}
