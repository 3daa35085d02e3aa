import MemoCore
import XCTest

@testable import MemoNode

final class FolderWakeThrottleTests: XCTestCase {
  private let start = MonotonicInstant(sinceOrigin: .seconds(1000))
  private func at(_ milliseconds: Int) -> MonotonicInstant { start + .milliseconds(milliseconds) }

  func testTheWritesOfOneCommitEachStepAtOnce() {
    var throttle = FolderWakeThrottle(interval: .milliseconds(50), wakesPerInterval: 3)
    XCTAssertNil(throttle.wake(at: at(0)), "the first write after a quiet spell")
    XCTAssertNil(throttle.wake(at: at(1)), "the commit's later write, which the step after it can see")
    XCTAssertNil(throttle.wake(at: at(3)))
  }

  func testABurstWaitsForTheWindowsEndAndThatStepOpensTheNext() {
    var throttle = FolderWakeThrottle(interval: .milliseconds(50), wakesPerInterval: 3)
    for milliseconds in [0, 2, 4] { XCTAssertNil(throttle.wake(at: at(milliseconds))) }
    XCTAssertEqual(throttle.wake(at: at(6)), at(50), "the fourth of a window")
    // The deferred step is the first of the window from 50 to 100 ms.
    XCTAssertNil(throttle.wake(at: at(52)))
    XCTAssertNil(throttle.wake(at: at(60)))
    XCTAssertEqual(throttle.wake(at: at(70)), at(100))
    XCTAssertNil(throttle.wake(at: at(100)), "a write when the window has ended opens a new one")
  }

  func testAQuietSpellStartsAFreshWindow() {
    var throttle = FolderWakeThrottle(interval: .milliseconds(50), wakesPerInterval: 1)
    XCTAssertNil(throttle.wake(at: at(0)))
    XCTAssertEqual(throttle.wake(at: at(10)), at(50))
    XCTAssertNil(throttle.wake(at: at(500)), "long after the last window")
    XCTAssertEqual(throttle.wake(at: at(520)), at(550))
  }
}
