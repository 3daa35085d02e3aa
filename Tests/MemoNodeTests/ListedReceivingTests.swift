import MemoCore
import MemoProtocol
import MemoStore
import XCTest

@testable import MemoNode

/// A sync takes records, and moves cursors, only of the notebooks this device's own hello
/// listed as held: a notebook accepted while a live link's sync was under way got none of
/// its records in it, and a cursor moved to the peer's feed end would have made the next
/// sync skip them all (issue 39; seen as one engine run in six that never filled).
final class ListedReceivingTests: XCTestCase {
  func testOnlyTheNotebooksTheHelloListedAsHeldTakeRecords() {
    let listed = NotebookID(String(repeating: "a", count: 32))!
    let acceptedSince = NotebookID(String(repeating: "b", count: 32))!
    let plan = SyncPlan(receiving: [listed: .member, acceptedSince: .member], announced: [listed, acceptedSince])
    let taken = plan.receiving(onlyListed: [listed])
    XCTAssertEqual(taken.receiving, [listed: NotebookRole.member])
    XCTAssertEqual(taken.announced, plan.announced, "what the peer said is kept")
    XCTAssertEqual(
      SyncStoreWork.held([
        NotebookEntry(id: listed, heads: [], held: true), NotebookEntry(id: acceptedSince, heads: [], held: false),
      ]), [listed])
  }
}
