import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// Protection `complete` locks after its idle timeout without a person's use. Only a
/// person's commands restart that timeout: what the daemon does for peers (storing their
/// deliveries, answering their syncs, its own outbox and scheduled syncs) never does, or a
/// peer delivering every second would keep the node unlocked forever. The fake keyring
/// records every restart.
final class IdleTimeoutTests: XCTestCase {
  func queue(_ node: TestNode, _ body: String, to peer: TestNode) throws {
    try node.open().queueForDelivery(
      DeliveryMessage.Content(title: "t", body: body, tags: [], isPrivate: false, sent: 1), to: peer.id,
      expires: nil, now: testClock())
  }

  func testDeliveriesToTheDaemonNeverRestartTheIdleTimeout() throws {
    let (a, b) = try trustingPair()
    try b.protectComplete(idleTimeout: 2)
    let restarts = b.idleRestarts
    for index in 0..<5 {
      try queue(a, "delivery \(index)", to: b)
      let dialer = a.dialer(to: b)
      let outbox = OutboxDelivery(store: a.access(), dialer: dialer, trust: a.trust, clock: testClock)
      XCTAssertEqual(try runAsync { try await outbox.deliver(to: b.id, timeout: 10) }.delivered, 1)
      dialer.settle()
    }
    XCTAssertEqual(try b.open(.background).inboxEntries().count, 5, "b stored every one")
    XCTAssertEqual(b.idleRestarts, restarts, "and none of them counted as use")
    // So the timeout runs out as if nobody had touched the node, and it locks.
    b.expireIdleTimeout()
    XCTAssertEqual(try b.keys.status().lockState, .locked(unlockedSinceBoot: true))
  }

  func testAnsweringSyncsNeverRestartsTheIdleTimeoutButAPersonsSyncDoes() throws {
    let (a, b) = try trustingPair()
    try a.protectComplete(idleTimeout: 60)
    try b.protectComplete(idleTimeout: 2)
    let (aBefore, bBefore) = (a.idleRestarts, b.idleRestarts)
    for index in 0..<3 {
      _ = try a.open().create(MemoDraft(title: "t", body: "memo \(index)"), now: 1)
      let dialer = a.dialer(to: b)
      let result = try runAsync {
        await a.syncer(dialer).sync(with: try a.peer("bee"), timeout: 10, deleteGuard: MassDeleteGuard())
      }
      dialer.settle()
      XCTAssertNotNil(result.report, "\(String(describing: result.error))")
    }
    XCTAssertEqual(try b.bodies().count, 3)
    XCTAssertEqual(b.idleRestarts, bBefore, "answering is not use")
    XCTAssertGreaterThan(a.idleRestarts, aBefore + 3, "the person syncing (and creating) on a is")
  }

  func testTheDaemonsOwnOutboxAndScheduledSyncsAreNotUse() throws {
    let (a, b) = try trustingPair()
    try a.protectComplete(idleTimeout: 2)
    let before = a.idleRestarts
    try queue(a, "from the daemon", to: b)
    let afterQueueing = a.idleRestarts
    XCTAssertGreaterThan(afterQueueing, before, "queueing is a person's `send`")
    let dialer = a.dialer(to: b)
    let outbox = OutboxDelivery(store: a.access(.background), dialer: dialer, trust: a.trust, clock: testClock)
    XCTAssertEqual(try outbox.pendingRecipients(), [b.id])
    XCTAssertEqual(try runAsync { try await outbox.deliver(to: b.id, timeout: 10) }.delivered, 1)
    let scheduled = try runAsync {
      await a.syncer(dialer, use: .background).syncAll(
        [try a.peer("bee")], timeout: 10, deleteGuard: MassDeleteGuard())
    }
    dialer.settle()
    XCTAssertNotNil(scheduled.first?.report)
    XCTAssertEqual(a.idleRestarts, afterQueueing, "the daemon's rounds left the timeout running")
  }

  func testTheDaemonOpensEverythingForItselfWhateverItIsGiven() throws {
    let responder = try TestNode().responder()
    XCTAssertEqual(responder.store.use, .background, "a responder built from a person's access still is not use")
  }
}
