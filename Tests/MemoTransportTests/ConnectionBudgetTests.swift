import MemoTransport
import XCTest

/// Who gets a connection slot: strangers only ever take from their own budget.
final class ConnectionBudgetTests: XCTestCase {
  func testOneSourceChurnsOnlyItsOwnSlots() {
    var budget = ConnectionBudget(limits: .init(perSource: 4, unauthenticated: 8, authenticated: 2))
    let first = (0..<4).map { _ in budget.arrive(from: "stranger") }
    XCTAssertTrue(first.allSatisfy { $0.drop.isEmpty })
    let fifth = budget.arrive(from: "stranger")
    XCTAssertEqual(fifth.drop, [first[0].id], "its own oldest goes")
    XCTAssertEqual(budget.pendingCount, 4)
    let friend = budget.arrive(from: "laptop")
    XCTAssertEqual(friend.drop, [], "another address still has room")
    XCTAssertTrue(budget.authenticate(friend.id))
    XCTAssertEqual(budget.authenticatedCount, 1)
    XCTAssertEqual(budget.pendingCount, 4)
  }

  func testAFullBudgetDropsTheOldestUnauthenticatedNeverAnAuthenticatedOne() {
    var budget = ConnectionBudget(limits: .init(perSource: 4, unauthenticated: 3, authenticated: 1))
    let trusted = budget.arrive(from: "laptop")
    XCTAssertTrue(budget.authenticate(trusted.id))
    let strangers = ["s1", "s2", "s3"].map { budget.arrive(from: $0) }
    let late = budget.arrive(from: "s4")
    XCTAssertEqual(late.drop, [strangers[0].id])
    XCTAssertFalse(budget.isPending(strangers[0].id))
    XCTAssertEqual(budget.authenticatedCount, 1, "the authenticated one stays")
    // Over the authenticated cap the newcomer is refused, the established one kept.
    XCTAssertFalse(budget.authenticate(late.id))
    XCTAssertEqual(budget.authenticatedCount, 1)
    budget.leave(trusted.id)
    XCTAssertTrue(budget.authenticate(strangers[1].id))
    XCTAssertFalse(budget.authenticate(strangers[0].id), "a dropped connection gets nothing")
  }
}
