import XCTest

@testable import MemoWeb

/// The rules of the page's waiting status calls, without a socket: a call is let go when
/// the mark moved, when its longest wait passed, when the node locks or unlocks, or when
/// the server stops; never twice, and never before it was held.
final class ChangeWaitersTests: XCTestCase {
  /// `@unchecked Sendable`: the closures that write it run synchronously inside
  /// `suspend` and `wake` on the test's own thread; nothing else touches it.
  final class Log: @unchecked Sendable {
    var held: [Int] = []
    var released: [Int] = []
  }

  func testACallIsLetGoOnlyWhenTheMarkMovesOrItsWaitIsOver() {
    let waiters = ChangeWaiters<Int>(longestWait: 25)
    let log = Log()
    XCTAssertTrue(waiters.suspend(1, mark: "7.0", now: 100) { log.held.append($0) })
    XCTAssertTrue(waiters.suspend(2, mark: "8.0", now: 110) { log.held.append($0) })
    XCTAssertEqual(log.held, [1, 2])
    XCTAssertEqual(waiters.count, 2)

    // Nothing read (no write seen): only deadlines count, and none has passed.
    XCTAssertEqual(waiters.wake(now: 120, look: .deadlines) { log.released.append($0) }, 0)
    // The same mark as the second call saw: only the first goes.
    XCTAssertEqual(waiters.wake(now: 120, look: .mark("8.0")) { log.released.append($0) }, 1)
    XCTAssertEqual(log.released, [1])
    // The second's longest wait passes (110 + 25).
    XCTAssertEqual(waiters.wake(now: 134.9, look: .deadlines) { log.released.append($0) }, 0)
    XCTAssertEqual(waiters.wake(now: 135, look: .deadlines) { log.released.append($0) }, 1)
    XCTAssertEqual(log.released, [1, 2], "each once")
    XCTAssertEqual(waiters.count, 0)
    XCTAssertEqual(waiters.wake(now: 200, look: .mark("9.0")) { log.released.append($0) }, 0)
  }

  func testALockOrUnlockLetsEveryCallGo() {
    let waiters = ChangeWaiters<Int>()
    let log = Log()
    for handle in 1...3 { XCTAssertTrue(waiters.suspend(handle, mark: "1", now: 0) { log.held.append($0) }) }
    // A lock or an unlock: every call is answered.
    XCTAssertEqual(waiters.wake(now: 1, look: .everyone) { log.released.append($0) }, 3)
    XCTAssertEqual(log.released, [1, 2, 3], "in the order they came")
  }

  func testAClosedRegistryLetsEveryCallGoAndHoldsNoMore() {
    let waiters = ChangeWaiters<Int>()
    let log = Log()
    XCTAssertTrue(waiters.suspend(1, mark: "1", now: 0) { log.held.append($0) })
    waiters.close { log.released.append($0) }
    XCTAssertEqual(log.released, [1])
    XCTAssertFalse(waiters.suspend(2, mark: "1", now: 0) { log.held.append($0) }, "answered at once")
    XCTAssertEqual(log.held, [1], "the refused call was never held")
    XCTAssertEqual(waiters.count, 0)
  }

  func testTheDecisionAlone() {
    let waiters: [UInt64: ChangeWaiters<Int>.Waiter] = [
      3: .init(handle: 3, mark: "a", deadline: 10), 1: .init(handle: 1, mark: "b", deadline: 50),
      2: .init(handle: 2, mark: "a", deadline: 50),
    ]
    XCTAssertEqual(ChangeWaiters.due(waiters, now: 5, look: .deadlines), [])
    XCTAssertEqual(ChangeWaiters.due(waiters, now: 10, look: .deadlines), [3])
    XCTAssertEqual(ChangeWaiters.due(waiters, now: 5, look: .mark("a")), [1])
    XCTAssertEqual(ChangeWaiters.due(waiters, now: 10, look: .mark("b")), [2, 3])
    XCTAssertEqual(ChangeWaiters.due(waiters, now: 5, look: .everyone), [1, 2, 3])
  }
}
