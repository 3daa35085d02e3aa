import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

final class DeliveryStoreTests: XCTestCase {
  static let content = DeliveryMessage.Content(
    title: "Trip", body: "the delivery secret phrase", tags: ["travel"], isPrivate: false, sent: 1_700_000_000_000)
  static let limits = ReceiveLimits()

  func testQueuedEntriesAreSealedAndMoveThroughTheirStates() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let id = try store.queueForDelivery(
      Self.content, to: TestDevices.id(named: "DEVICEB"), expires: 1_700_000_060_000, now: 1_700_000_000_000)
    XCTAssertFalse(
      try node.rawDataBytes().containsSubsequence(Array("delivery secret".utf8)), "the memo is sealed at rest")
    var entry = try XCTUnwrap(try store.outboxEntries().first)
    XCTAssertEqual(entry.id, id)
    XCTAssertEqual(entry.state, .queued)
    XCTAssertEqual(entry.expires, 1_700_000_060_000)
    XCTAssertEqual(try store.outboxContent(id), Self.content)
    XCTAssertTrue(try store.setOutboxState(id, .waiting("local-network consent")))
    XCTAssertTrue(try store.setOutboxState(id, .sending, attempted: true))
    XCTAssertTrue(try store.setOutboxState(id, .delivered(1_700_000_001_000)))
    XCTAssertFalse(try store.setOutboxState(id, .waiting("peer not reachable")), "delivered is final")
    entry = try XCTUnwrap(try store.outboxEntries().first)
    XCTAssertEqual(entry.state, .delivered(1_700_000_001_000))
    XCTAssertEqual(entry.attempts, 1)
    XCTAssertFalse(entry.hasExpired(at: 1_800_000_000_000))
  }

  func testARetransmissionIsStoredOnceEvenAfterAcceptOrDrop() throws {
    let receiverNode = try TemporaryNode()
    let receiver = try receiverNode.open()
    let ids = [MemoID().rawValue, MemoID().rawValue]
    for _ in 0..<3 {
      let outcome = try receiver.receiveDelivery(
        id: ids[0], from: TestDevices.id(named: "DEVICEA"), memo: Self.content, size: 10, policy: nil,
        limits: Self.limits, now: 5)
      XCTAssertTrue(outcome == .stored("inbox", duplicate: false) || outcome == .stored("inbox", duplicate: true))
    }
    XCTAssertEqual(try receiver.inboxEntries().count, 1)
    let memo = try receiver.acceptInboxEntry(String(ids[0].prefix(8)))
    XCTAssertEqual(memo.origin, .device(TestDevices.id(named: "DEVICEA")), "accept keeps the sender")
    XCTAssertEqual(memo.created, Self.content.sent, "and the time it was sent")
    XCTAssertEqual(memo.id.rawValue, ids[0])
    XCTAssertEqual(try receiver.inboxEntries(), [])
    XCTAssertEqual(
      try receiver.receiveDelivery(
        id: ids[0], from: TestDevices.id(named: "DEVICEA"), memo: Self.content, size: 10, policy: nil,
        limits: Self.limits, now: 6),
      .stored("inbox", duplicate: true))
    XCTAssertEqual(try receiver.inboxEntries(), [])
    XCTAssertEqual(try receiver.count(), 1)

    _ = try receiver.receiveDelivery(
      id: ids[1], from: TestDevices.id(named: "DEVICEA"), memo: Self.content, size: 10, policy: nil,
      limits: Self.limits, now: 7)
    _ = try receiver.dropInboxEntry(ids[1])
    XCTAssertEqual(
      try receiver.receiveDelivery(
        id: ids[1], from: TestDevices.id(named: "DEVICEA"), memo: Self.content, size: 10, policy: nil,
        limits: Self.limits, now: 8),
      .stored("inbox", duplicate: true))
    XCTAssertEqual(try receiver.inboxEntries(), [])
  }

  func testPoliciesAndLimits() throws {
    let receiverNode = try TemporaryNode()
    let receiver = try receiverNode.open()
    let limits = ReceiveLimits(maximumSize: 1000, maximumInboxPerPeer: 1)
    func receive(_ policy: ReceivePolicy?, size: Int = 10, from sender: DeviceID = TestDevices.id(named: "A")) throws
      -> DeliveryOutcome
    {
      try receiver.receiveDelivery(
        id: MemoID().rawValue, from: sender, memo: Self.content, size: size, policy: policy, limits: limits, now: 1)
    }
    XCTAssertEqual(try receive(.refuse), .refused(.policy))
    XCTAssertEqual(try receive(nil, size: 1001), .refused(.tooLarge))
    XCTAssertEqual(try receive(nil), .stored("inbox", duplicate: false))
    XCTAssertEqual(try receive(.ask), .refused(.inboxFull), "one entry from A waits already")
    XCTAssertEqual(
      try receive(.ask, from: TestDevices.id(named: "B")), .stored("inbox", duplicate: false), "the limit is per peer")
    XCTAssertEqual(try receive(.accept), .stored("memos", duplicate: false))
    XCTAssertEqual(try receiver.count(), 1)
    XCTAssertEqual(try receiver.inboxEntries().count, 2)
  }

  /// Entries queued under schema 1 (plain text payloads) are still delivered after migration.
  func testPendingEntriesOfTheVersion1FixtureAreDeliveredAfterMigration() throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: 1, into: node)
    let sender = try node.open()
    let pending = try sender.outboxEntries()
    XCTAssertEqual(pending.map(\.id), ["entry-1", "entry-2"])
    XCTAssertTrue(pending.allSatisfy { $0.state == .queued })
    let receiverNode = try TemporaryNode()
    let receiver = try receiverNode.open()
    for entry in pending {
      let content = try sender.outboxContent(entry.id)
      // A plain text payload is not sent as it is: a batch carries the memo made of it.
      XCTAssertEqual(try sender.outboxContentJSON(entry.id), DeliveryMessage.encode(content))
      XCTAssertEqual(
        try receiver.receiveDelivery(
          id: entry.id, from: TestDevices.id(named: "SENDER"), memo: content, size: 10, policy: nil,
          limits: Self.limits, now: 9),
        .stored("inbox", duplicate: false))
      try sender.setOutboxState(entry.id, .delivered(10))
    }
    XCTAssertEqual(
      try receiver.inboxEntries().map(\.memo.body).sorted(), ["pending memo one", "pending memo two"])
    XCTAssertTrue(try sender.outboxEntries().allSatisfy { $0.state == .delivered(10) })
  }
}

extension Array where Element == UInt8 {
  fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, count >= needle.count else { return false }
    for start in 0...(count - needle.count) where self[start..<start + needle.count].elementsEqual(needle) {
      return true
    }
    return false
  }
}
