import MemoCore
import XCTest

@testable import MemoNode

/// The rules of `serve`'s live push, without a daemon: who is owed a sync when the store's
/// change feed moves, one sync per peer at a time, and a jittered pause after a failure.
final class LivePushTests: XCTestCase {
  let a = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
  let b = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!

  func testTheFirstLookOwesEveryPeerAndOnlyAMovedFeedOwesThemAgain() {
    var push = LivePush()
    push.feed(at: 7, peers: [a, b])
    XCTAssertEqual(push.takeDue(now: 0, running: []), [a, b], "what changed while the daemon was down")
    XCTAssertEqual(push.takeDue(now: 0, running: []), [])
    push.feed(at: 7, peers: [a, b])
    XCTAssertFalse(push.hasDue(now: 0, running: []), "a write that stored no revision owes nothing")
    push.feed(at: 8, peers: [a, b])
    XCTAssertTrue(push.hasDue(now: 0, running: []))
    XCTAssertEqual(push.takeDue(now: 0, running: [b]), [a], "a peer already syncing waits for its sync to end")
    XCTAssertEqual(push.takeDue(now: 0, running: []), [b])
  }

  func testAtMostFourSessionsRunAtOnceAndTheRestWaitForAPlace() {
    let peers = (1...6).map { DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 32))! }
    var push = LivePush()
    push.feed(at: 1, peers: peers)
    let first = push.takeDue(now: 0, running: [])
    XCTAssertEqual(first, Array(peers.prefix(4)))
    XCTAssertFalse(push.hasDue(now: 0, running: Set(first)), "no place free")
    XCTAssertEqual(push.takeDue(now: 0, running: Set(first)), [])
    XCTAssertEqual(push.takeDue(now: 0, running: Set(first.dropFirst())), [peers[4]], "one place, one peer")
    XCTAssertEqual(push.takeDue(now: 0, running: []), [peers[5]])
  }

  func testAFailedPeerIsOwedAgainAfterAGrowingJitteredPause() {
    var push = LivePush()
    push.feed(at: 1, peers: [a])
    _ = push.takeDue(now: 0, running: [])
    push.finished(a, succeeded: false, now: 1_000, random: 0)
    // The first pause is between 0.5 and 1 s (random 0: the shortest).
    XCTAssertFalse(push.hasDue(now: 1_499, running: []))
    XCTAssertEqual(push.takeDue(now: 1_500, running: []), [a])
    push.finished(a, succeeded: false, now: 2_000, random: 0.999)
    XCTAssertFalse(push.hasDue(now: 3_990, running: []), "the second pause is up to 2 s")
    XCTAssertEqual(push.takeDue(now: 4_000, running: []), [a])
    for _ in 3...12 {
      push.finished(a, succeeded: false, now: 0, random: 0.999)
      XCTAssertEqual(push.takeDue(now: 30_000, running: []), [a], "never more than 30 s")
    }
    push.finished(a, succeeded: false, now: 0, random: 0.999)
    XCTAssertFalse(push.hasDue(now: 29_000, running: []), "the thirteenth pause is the cap, 30 s")
    XCTAssertEqual(push.takeDue(now: 30_000, running: []), [a])
    push.finished(a, succeeded: true, now: 30_500, random: 0)
    XCTAssertFalse(push.hasDue(now: 30_500, running: []), "a success owes nothing more")
    push.feed(at: 2, peers: [a])
    XCTAssertEqual(push.takeDue(now: 30_500, running: []), [a], "and forgets the pause")
  }

  func testAPeerNoLongerTrustedAndALockForgetWhatWasOwed() {
    var push = LivePush()
    push.feed(at: 1, peers: [a, b])
    push.keep(only: [b])
    XCTAssertEqual(push.takeDue(now: 0, running: []), [b])
    push.reset()
    XCTAssertNil(push.feedSeen)
    push.feed(at: 1, peers: [a, b])
    XCTAssertEqual(push.takeDue(now: 0, running: []), [a, b], "after an unlock every peer is owed again")
  }
}
