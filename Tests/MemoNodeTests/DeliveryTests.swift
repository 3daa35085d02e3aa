import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import MemoVault
import XCTest

@testable import MemoNode

/// Deliveries as `send --wait` (and `serve`'s outbox) make them, to the daemon's responder
/// over in-memory channels: the receipt, a lost receipt and the retransmission it causes,
/// every refusal, a receiver that cannot store, and entries that expired.
final class DeliveryTests: XCTestCase {
  func queue(_ node: TestNode, _ body: String, to peer: TestNode, expires: Timestamp? = nil) throws -> String {
    try node.open().queueForDelivery(
      DeliveryMessage.Content(title: "t", body: body, tags: [], isPrivate: false, sent: 1), to: peer.id,
      expires: expires, now: testClock())
  }

  /// One delivery round from `a` to `b` over `dialer` (b's responder by default).
  func deliver(_ a: TestNode, to b: TestNode, dialer: DirectDialer? = nil, use: KeyUse = .person) throws
    -> OutboxDelivery.Round
  {
    let dialer = dialer ?? a.dialer(to: b)
    let outbox = OutboxDelivery(store: a.access(use), dialer: dialer, trust: a.trust, clock: testClock)
    let round = try runAsync { try await outbox.deliver(to: b.id, timeout: 10) }
    dialer.settle()
    return round
  }

  func states(_ node: TestNode) throws -> [OutboxState] { try node.open().outboxEntries().map(\.state) }

  func testADeliveryIsStoredInTheInboxAndItsReceiptMarksItDelivered() throws {
    let (a, b) = try trustingPair()
    let id = try queue(a, "hello b", to: b)
    let round = try deliver(a, to: b)
    XCTAssertEqual(round, OutboxDelivery.Round(delivered: 1, pending: 0, waitingFor: nil))
    XCTAssertEqual(try states(a), [.delivered(testClock())])
    let inbox = try b.open().inboxEntries()
    XCTAssertEqual(inbox.map(\.id), [id])
    XCTAssertEqual(inbox.first?.senderID, a.id)
    XCTAssertEqual(inbox.first?.memo.body, "hello b")
  }

  func testALostReceiptLeavesTheEntryPendingAndTheRetransmissionIsRecognised() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, "only once", to: b)
    // The link breaks right after a's deliver frame: b stores it, its receipt is lost.
    let lossy = a.dialer(
      to: b, faults: LinkFaults(fromFirst: DirectionFaults(cutAfterFrames: 1, cutCounting: .deliver)))
    let first = try deliver(a, to: b, dialer: lossy)
    XCTAssertEqual(first.pending, 1)
    XCTAssertEqual(try states(a), [.waiting("peer not reachable")])
    XCTAssertEqual(try b.open().inboxEntries().count, 1, "stored before the receipt was lost")
    let second = try deliver(a, to: b)
    XCTAssertEqual(second.delivered, 1)
    XCTAssertEqual(try b.open().inboxEntries().count, 1, "the retransmission stored nothing twice")
  }

  func testAReceiptDelayedPastTheSendersPatienceIsLostTheSameWay() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, "slow receipt", to: b)
    var impatient = ConnectionLimits()
    impatient.idleSeconds = 0.05
    let responder = b.responder(receiptDelay: 0.5)
    let slow = DirectDialer(from: a, to: b, limits: impatient, serve: { responder.serve($0) })
    XCTAssertEqual(try deliver(a, to: b, dialer: slow).pending, 1)
    XCTAssertEqual(try b.open().inboxEntries().count, 1)
    XCTAssertEqual(try deliver(a, to: b).delivered, 1)
    XCTAssertEqual(try b.open().inboxEntries().count, 1)
  }

  func testARefusingPolicyKeepsTheEntryWaitingWithTheReason() throws {
    let a = try TestNode()
    let b = try TestNode()
    try a.trusts(b, as: "bee")
    try b.trusts(a, as: "ay", policy: .refuse)
    _ = try queue(a, "not wanted", to: b)
    let round = try deliver(a, to: b)
    XCTAssertEqual(round.pending, 1)
    XCTAssertEqual(round.waitingFor, "peer refused: \(RefusalReason.policy.explanation)")
    XCTAssertEqual(try states(a), [.waiting("peer refused: \(RefusalReason.policy.explanation)")])
    XCTAssertEqual(try b.open().inboxEntries().count, 0)
  }

  func testAFullInboxWaitsAndAnOversizedMemoFails() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, "first", to: b)
    _ = try queue(a, "second", to: b)
    let responder = b.responder(limits: ReceiveLimits(maximumSize: 1024, maximumInboxPerPeer: 1))
    let round = try deliver(a, to: b, dialer: a.dialer(to: b, serve: { responder.serve($0) }))
    XCTAssertEqual(round.delivered, 1)
    XCTAssertEqual(round.waitingFor, "peer refused: \(RefusalReason.inboxFull.explanation)")
    let big = try queue(a, String(repeating: "x", count: 2000), to: b)
    _ = try deliver(a, to: b, dialer: a.dialer(to: b, serve: { responder.serve($0) }))
    XCTAssertEqual(
      try a.open().resolveOutboxEntry(big).state, .failed("peer refused: \(RefusalReason.tooLarge.explanation)"))
  }

  func testAReceiverThatCannotStoreSaysGoodbyeAndTheEntryWaits() throws {
    let (a, b) = try trustingPair()
    _ = try b.open()
    try b.protectComplete()
    b.expireIdleTimeout()  // locked: nothing can be sealed
    _ = try queue(a, "to a locked node", to: b)
    let round = try deliver(a, to: b)
    XCTAssertEqual(round.pending, 1)
    XCTAssertEqual(round.waitingFor, "protocol error")
    XCTAssertEqual(try states(a), [.waiting("peer not reachable")])
  }

  func testAMalformedDeliveryEndsTheChannelWithAGoodbye() throws {
    let (a, b) = try trustingPair()
    let responder = b.responder()
    let frames = try InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> [Frame] in
        _ = try PeerSession.greet(channel, identity: a.identity)
        try channel.send(Frame(.deliver, payload: Array("{\"id\": 5}".utf8)))
        var frames: [Frame] = []
        while let frame = try channel.receive() { frames.append(frame) }
        return frames
      }, second: { responder.serve($0) }
    ).first.get()
    XCTAssertEqual(frames.map(\.kind), [.goodbye])
    XCTAssertEqual(PeerMessage.decode(PeerMessage.Goodbye.self, from: frames[0].payload)?.reason, "delivery-failed")
  }

  func testAReceiptForAnotherEntryIsNotAReceiptForThisOne() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, "mine", to: b)
    let identity = b.identity
    let liar = a.dialer(
      to: b,
      serve: { channel in
        _ = try? PeerSession.greet(channel, identity: identity)
        _ = try? channel.receive()
        try? channel.send(
          Frame(
            .receipt,
            payload: PeerMessage.encode(DeliveryMessage.Receipt(id: "someone-else", stored: "inbox", duplicate: false))
          ))
      })
    let round = try deliver(a, to: b, dialer: liar)
    XCTAssertEqual(round.delivered, 0)
    XCTAssertEqual(round.pending, 1)
    XCTAssertEqual(round.waitingFor, "protocol error")
    // A protocol error, not a refusal: the entry waits to be offered again, nothing is lost.
    XCTAssertEqual(try states(a), [.waiting("the peer answered with a receipt for another entry")])
  }

  func testExpiredEntriesAreNeverSent() throws {
    let (a, b) = try trustingPair()
    let id = try queue(a, "too late", to: b, expires: testClock() - 1)
    let round = try deliver(a, to: b)
    XCTAssertEqual(round.delivered, 0)
    XCTAssertEqual(try a.open().resolveOutboxEntry(id).state, .expired)
    XCTAssertEqual(try b.open().inboxEntries().count, 0)
  }

  func testAPeerThatRefusesTheConnectionLeavesTheEntryWaitingForTrust() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, "refused", to: b)
    let closed = a.dialer(to: b, serve: { _ in })  // closes before the hello, as a TLS refusal
    let round = try deliver(a, to: b, dialer: closed)
    XCTAssertEqual(round.waitingFor, "peer refused: it does not trust this device")
    XCTAssertEqual(try states(a), [.waiting("peer refused: it does not trust this device")])
  }
}
