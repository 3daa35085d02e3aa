import MemoCore
import MemoProtocol
import XCTest

final class DeliveryRulesTests: XCTestCase {
  func testOutboxStatesRoundTripThroughTheColumn() {
    let states: [OutboxState] = [
      .queued, .waiting("local-network consent"), .sending, .delivered(1_700_000_000_123), .expired,
      .failed("peer refused: too large"), .cancelled,
    ]
    for state in states {
      let time: Timestamp? = if case .delivered(let time) = state { time } else { nil }
      XCTAssertEqual(OutboxState.parse(state.stored, delivered: time), state)
    }
    XCTAssertEqual(OutboxState.waiting("a: b").stored, "waiting:a: b")
    XCTAssertEqual(OutboxState.parse("waiting:a: b", delivered: nil), .waiting("a: b"))
  }

  func testFinalStatesNeverMoveAndRetryRevivesFailedOrExpired() {
    XCTAssertFalse(OutboxState.delivered(1).allows(.sending))
    XCTAssertFalse(OutboxState.delivered(1).allows(.queued))
    XCTAssertFalse(OutboxState.cancelled.allows(.queued))
    XCTAssertTrue(OutboxState.failed("x").allows(.queued))
    XCTAssertFalse(OutboxState.failed("x").allows(.sending))
    XCTAssertTrue(OutboxState.expired.allows(.queued))
    XCTAssertTrue(OutboxState.sending.allows(.delivered(2)))
    XCTAssertTrue(OutboxState.waiting("x").allows(.sending))
    XCTAssertTrue(OutboxState.sending.allows(.waiting("peer not reachable")))
    XCTAssertTrue(OutboxState.queued.isPending)
    XCTAssertFalse(OutboxState.expired.isPending)
  }

  func testBackoffGrowsExponentiallyUpToTheCapWithJitterBelowTheCeiling() {
    let backoff = DeliveryBackoff(base: 1, cap: 30)
    XCTAssertEqual((1...7).map { backoff.ceiling(afterFailures: $0) }, [1, 2, 4, 8, 16, 30, 30])
    XCTAssertEqual(backoff.ceiling(afterFailures: 1000), 30)
    XCTAssertEqual(backoff.delay(afterFailures: 3, random: 0), 2)
    XCTAssertEqual(backoff.delay(afterFailures: 3, random: 1), 4)
    XCTAssertEqual(backoff.delay(afterFailures: 3, random: 0.5), 3)
  }

  func testReceivePolicyDecisions() {
    let limits = ReceiveLimits(maximumSize: 100, maximumInboxPerPeer: 2)
    XCTAssertEqual(ReceiveDecision.decide(policy: nil, size: 10, waitingFromSender: 0, limits: limits), .inbox)
    XCTAssertEqual(ReceiveDecision.decide(policy: .ask, size: 10, waitingFromSender: 1, limits: limits), .inbox)
    XCTAssertEqual(
      ReceiveDecision.decide(policy: .ask, size: 10, waitingFromSender: 2, limits: limits), .refuse(.inboxFull))
    XCTAssertEqual(ReceiveDecision.decide(policy: .accept, size: 10, waitingFromSender: 2, limits: limits), .memos)
    XCTAssertEqual(
      ReceiveDecision.decide(policy: .accept, size: 101, waitingFromSender: 0, limits: limits), .refuse(.tooLarge))
    XCTAssertEqual(
      ReceiveDecision.decide(policy: .refuse, size: 10, waitingFromSender: 0, limits: limits), .refuse(.policy))
    XCTAssertTrue(RefusalReason.tooLarge.isFinal)
    XCTAssertFalse(RefusalReason.inboxFull.isFinal)
    XCTAssertFalse(RefusalReason.policy.isFinal)
  }

  func testDeliveryMessagesEncodeAsDocumented() throws {
    let content = DeliveryMessage.Content(title: "t", body: "b", tags: ["x"], isPrivate: true, sent: 5)
    let deliver = DeliveryMessage.Deliver(id: "e1", memo: content)
    let text = String(decoding: PeerMessage.encode(deliver), as: UTF8.self)
    XCTAssertEqual(text, #"{"id":"e1","memo":{"body":"b","private":true,"sent":5,"tags":["x"],"title":"t"}}"#)
    XCTAssertEqual(PeerMessage.decode(DeliveryMessage.Deliver.self, from: Array(text.utf8)), deliver)
    XCTAssertEqual(
      String(decoding: PeerMessage.encode(DeliveryMessage.Refuse(id: "e1", reason: .inboxFull)), as: UTF8.self),
      #"{"id":"e1","reason":"inbox-full"}"#)
    XCTAssertEqual(
      String(
        decoding: PeerMessage.encode(DeliveryMessage.Receipt(id: "e1", stored: "inbox", duplicate: false)),
        as: UTF8.self),
      #"{"duplicate":false,"id":"e1","stored":"inbox"}"#)
    XCTAssertEqual(Frame.Kind(rawValue: 16), .deliver)
    XCTAssertEqual(Frame.Kind(rawValue: 17), .receipt)
    XCTAssertEqual(Frame.Kind(rawValue: 18), .refuse)
  }

  func testDurations() {
    XCTAssertEqual(DurationText.seconds("90s"), 90)
    XCTAssertEqual(DurationText.seconds("10m"), 600)
    XCTAssertEqual(DurationText.seconds("2h"), 7200)
    XCTAssertEqual(DurationText.seconds("7d"), 604_800)
    XCTAssertEqual(DurationText.seconds("45"), 45)
    XCTAssertNil(DurationText.seconds("-1m"))
    XCTAssertNil(DurationText.seconds("soon"))
    XCTAssertNil(DurationText.seconds(""))
  }

  func testTrustEntriesWithoutAPolicyDecodeAsAsk() throws {
    let id = DeviceID(bytes: Array(repeating: 5, count: 32))!
    let old = #"{"device_id":"\#(id.compact)","name":"n","source":"command","added":1}"#
    let peer = try JSONDecoder().decode(TrustedPeer.self, from: Data(old.utf8))
    XCTAssertNil(peer.receive)
    XCTAssertEqual(peer.deviceID, id)
    let broken = #"{"device_id":"X","name":"n","source":"command","added":1}"#
    XCTAssertThrowsError(
      try JSONDecoder().decode(TrustedPeer.self, from: Data(broken.utf8)), "a device ID that is not one is refused")
  }
}
