import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoTransport
import XCTest

@testable import MemoNode

/// Batched delivery (delivery version 2) from the outbox to the daemon's responder: over
/// in-memory channels (batches of at most 256, a lost batch receipt and its retransmission,
/// refusals inside a batch, a receiver that cannot store, a lying or older peer, a
/// malformed batch) and over TLS on loopback.
final class DeliveryBatchTests: XCTestCase {
  func queue(_ node: TestNode, count: Int, to peer: TestNode, body: (Int) -> String = { "memo \($0)" }) throws
    -> [String]
  {
    let store = try node.open()
    return try store.batch {
      try (0..<count).map { index in
        try store.queueForDelivery(
          DeliveryMessage.Content(title: "t", body: body(index), tags: [], isPrivate: false, sent: 1), to: peer.id,
          expires: nil, now: testClock() + Timestamp(index))
      }
    }
  }

  /// A dialler to `b` whose links keep b's hello (so the outbox sends batches).
  func batched(
    _ a: TestNode, to b: TestNode, faults: LinkFaults = LinkFaults(), responder: DaemonResponder? = nil,
    serve: (@Sendable (any FrameChannel) -> Void)? = nil
  ) -> DirectDialer {
    let responder = responder ?? b.responder()
    var dialer = DirectDialer(from: a, to: b, faults: faults, serve: serve ?? { responder.serve($0) })
    dialer.keepsHello = true
    return dialer
  }

  func deliver(_ a: TestNode, to b: TestNode, dialer: any PeerDialer, settle: DirectDialer? = nil) throws
    -> OutboxDelivery.Round
  {
    let outbox = OutboxDelivery(store: a.access(.person), dialer: dialer, trust: a.trust, clock: testClock)
    let round = try runAsync { try await outbox.deliver(to: b.id, timeout: 10) }
    settle?.settle()
    return round
  }

  func deliver(_ a: TestNode, to b: TestNode, _ dialer: DirectDialer) throws -> OutboxDelivery.Round {
    try deliver(a, to: b, dialer: dialer, settle: dialer)
  }

  func states(_ node: TestNode) throws -> [OutboxState] { try node.open().outboxEntries().map(\.state) }

  func logged(_ b: TestNode, limits: ReceiveLimits = ReceiveLimits()) -> (DaemonResponder, CapturingLog) {
    let log = CapturingLog()
    return (b.responder(limits: limits, logger: Logger(subsystem: "test", minimumLevel: .info, sink: log)), log)
  }

  func testQueuedEntriesTravelInBatchesOfAtMost256EachStoredAndMarkedAtOnce() throws {
    let (a, b) = try trustingPair()
    let queued = try queue(a, count: 300, to: b)
    let (responder, log) = logged(b)
    let round = try deliver(a, to: b, batched(a, to: b, responder: responder))
    XCTAssertEqual(round, OutboxDelivery.Round(delivered: 300, pending: 0, waitingFor: nil))
    XCTAssertEqual(try states(a), Array(repeating: .delivered(testClock()), count: 300))
    XCTAssertEqual(try a.open().outboxEntries().map(\.attempts), Array(repeating: 1, count: 300))
    XCTAssertEqual(Set(try b.open().inboxEntries().map(\.id)), Set(queued))
    let batches = log.lines.filter { $0.hasPrefix("delivery batch of") }
    XCTAssertEqual(batches.count, 2, "\(log.lines)")
    XCTAssertTrue(batches[0].hasPrefix("delivery batch of 256 "), batches[0])
    XCTAssertTrue(batches[1].hasPrefix("delivery batch of 44 "), batches[1])
  }

  func testALostBatchReceiptLeavesEveryEntryPendingAndTheResentBatchIsAllDuplicates() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, count: 5, to: b)
    // The link breaks right after a's batch: b stores all of it, its receipt is lost.
    let lossy = batched(
      a, to: b, faults: LinkFaults(fromFirst: DirectionFaults(cutAfterFrames: 1, cutCounting: .deliverBatch)))
    let first = try deliver(a, to: b, lossy)
    XCTAssertEqual(first, OutboxDelivery.Round(delivered: 0, pending: 5, waitingFor: "peer not reachable"))
    XCTAssertEqual(try states(a), Array(repeating: .waiting("peer not reachable"), count: 5))
    XCTAssertEqual(try b.open().inboxEntries().count, 5, "stored before the receipt was lost")
    let (responder, log) = logged(b)
    let second = try deliver(a, to: b, batched(a, to: b, responder: responder))
    XCTAssertEqual(second.delivered, 5)
    XCTAssertEqual(try b.open().inboxEntries().count, 5, "the retransmission stored nothing twice")
    XCTAssertTrue(log.lines.contains { $0.contains(": 0 stored, 5 seen before") }, "\(log.lines)")
  }

  /// Two batches in flight when the link breaks right after the second: whichever receipt
  /// got through marks its batch, the rest wait, and the next round finds every entry
  /// stored exactly once.
  func testALinkCutWithTwoBatchesInFlightLosesNothingAndDuplicatesNothing() throws {
    let (a, b) = try trustingPair()
    let queued = try queue(a, count: 300, to: b)
    let lossy = batched(
      a, to: b, faults: LinkFaults(fromFirst: DirectionFaults(cutAfterFrames: 2, cutCounting: .deliverBatch)))
    let first = try deliver(a, to: b, lossy)
    XCTAssertEqual(first.delivered + first.pending, 300)
    XCTAssertGreaterThan(first.pending, 0, "the second batch's receipt is lost")
    XCTAssertEqual(try b.open().inboxEntries().count, 300, "both batches were stored")
    let second = try deliver(a, to: b, batched(a, to: b))
    XCTAssertEqual(second, OutboxDelivery.Round(delivered: first.pending, pending: 0, waitingFor: nil))
    XCTAssertEqual(Set(try b.open().inboxEntries().map(\.id)), Set(queued))
    XCTAssertEqual(try states(a), Array(repeating: .delivered(testClock()), count: 300))
  }

  func testRefusalsInsideABatchAreEachEntrysOwn() throws {
    let (a, b) = try trustingPair()
    let ids = try queue(a, count: 4, to: b) { $0 == 2 ? String(repeating: "x", count: 2000) : "memo \($0)" }
    let (responder, _) = logged(b, limits: ReceiveLimits(maximumSize: 1024, maximumInboxPerPeer: 2))
    let round = try deliver(a, to: b, batched(a, to: b, responder: responder))
    XCTAssertEqual(round.delivered, 2)
    XCTAssertEqual(round.pending, 1)
    XCTAssertEqual(round.waitingFor, "peer refused: \(RefusalReason.inboxFull.explanation)")
    let store = try a.open()
    XCTAssertEqual(try store.resolveOutboxEntry(ids[0]).state, .delivered(testClock()))
    XCTAssertEqual(try store.resolveOutboxEntry(ids[1]).state, .delivered(testClock()))
    XCTAssertEqual(
      try store.resolveOutboxEntry(ids[2]).state, .failed("peer refused: \(RefusalReason.tooLarge.explanation)"))
    XCTAssertEqual(
      try store.resolveOutboxEntry(ids[3]).state, .waiting("peer refused: \(RefusalReason.inboxFull.explanation)"))
    XCTAssertEqual(try b.open().inboxEntries().count, 2)
  }

  func testAReceiverThatCannotStoreSaysGoodbyeAndTheWholeBatchWaits() throws {
    let (a, b) = try trustingPair()
    _ = try b.open()
    try b.protectComplete()
    b.expireIdleTimeout()  // locked: nothing can be sealed
    _ = try queue(a, count: 3, to: b)
    let round = try deliver(a, to: b, batched(a, to: b))
    XCTAssertEqual(round, OutboxDelivery.Round(delivered: 0, pending: 3, waitingFor: "protocol error"))
    XCTAssertEqual(try states(a), Array(repeating: .waiting("peer not reachable"), count: 3))
  }

  /// A peer whose answer is not a receipt for exactly the batch: nothing is marked
  /// delivered, every entry waits with the reason, and nothing is lost.
  func testALyingReceiptMarksNothingDelivered() throws {
    let lies: [(String, @Sendable ([String]) -> [DeliveryMessage.BatchResult])] = [
      ("unknown ids", { ids in ids.map { _ in .init(id: MemoID().rawValue, fate: "stored", stored: "inbox") } }),
      ("one result too few", { ids in ids.dropLast().map { .init(id: $0, fate: "stored", stored: "inbox") } }),
      ("an unknown fate", { ids in ids.map { .init(id: $0, fate: "lost-in-the-post") } }),
    ]
    for (name, lie) in lies {
      let (a, b) = try trustingPair()
      _ = try queue(a, count: 3, to: b)
      let identity = b.identity
      let liar = batched(
        a, to: b,
        serve: { channel in
          _ = try? PeerSession.greet(channel, identity: identity)
          guard let frame = try? channel.receive(), frame.kind == .deliverBatch,
            let batch = PeerMessage.decode(DeliveryMessage.Batch.self, from: frame.payload)
          else { return }
          let receipt = DeliveryMessage.BatchReceipt(results: lie(batch.entries.map(\.id)))
          try? channel.send(Frame(.batchReceipt, payload: PeerMessage.encode(receipt)))
        })
      let round = try deliver(a, to: b, liar)
      XCTAssertEqual(round, OutboxDelivery.Round(delivered: 0, pending: 3, waitingFor: "protocol error"), name)
      for state in try states(a) {
        guard case .waiting(let reason) = state, reason.hasPrefix("the peer broke the delivery protocol: ") else {
          XCTFail("\(name): \(state)")
          continue
        }
      }
    }
  }

  func testAPeerOfAnotherBatchVersionLeavesTheEntriesWaitingWithTheReason() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, count: 2, to: b)
    let identity = b.identity
    let other = batched(
      a, to: b,
      serve: { channel in
        _ = try? PeerSession.greet(channel, identity: identity)
        _ = try? channel.receive()
        try? channel.send(SessionMachine.goodbye(DeliveryExchange.unsupportedVersionReason))
      })
    let round = try deliver(a, to: b, other)
    XCTAssertEqual(round.pending, 2)
    XCTAssertEqual(
      try states(a),
      Array(
        repeating: .waiting("the peer does not take this delivery version (update memo-peer on both devices)"),
        count: 2))
  }

  func testAPeerFromBeforeBatchesGetsOneEntryAtATime() throws {
    let (a, b) = try trustingPair()
    _ = try queue(a, count: 3, to: b)
    let (responder, log) = logged(b)
    // A link without the peer's hello, as from a node whose hello has no `delivery`.
    let dialer = DirectDialer(from: a, to: b, serve: { responder.serve($0) })
    XCTAssertEqual(try deliver(a, to: b, dialer).delivered, 3)
    XCTAssertEqual(log.lines.filter { $0.hasPrefix("delivery batch") }, [])
    XCTAssertEqual(log.lines.filter { $0.hasPrefix("delivery ") && $0.contains(" stored in inbox") }.count, 3)
  }

  func testAMalformedBatchIsRefusedWholeNamingTheSenderAndEndsTheChannel() throws {
    let (a, b) = try trustingPair()
    let (responder, log) = logged(b)
    let frames = try InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> [Frame] in
        _ = try PeerSession.greet(channel, identity: a.identity)
        try channel.send(Frame(.deliverBatch, payload: Array(#"{"version":2,"entries":[{"id":5}]}"#.utf8)))
        var frames: [Frame] = []
        while let frame = try channel.receive() { frames.append(frame) }
        return frames
      }, second: { responder.serve($0) }
    ).first.get()
    XCTAssertEqual(frames, [SessionMachine.goodbye("delivery-failed")])
    XCTAssertTrue(
      log.lines.contains { $0.hasPrefix("delivery batch from \(a.id.short) refused whole") }, "\(log.lines)")
    XCTAssertEqual(try b.open().inboxEntries().count, 0)
  }

  func testBatchesOverTLSOnLoopback() throws {
    let (a, b) = try trustingPair()
    let queued = try queue(a, count: 300, to: b)
    let responder = b.responder()
    let expected = a.id
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: b.identity.device, role: .server),
      accepts: { $0 == expected }, events: { _ in }, handler: { responder.serve($0) })
    defer { server.stop() }
    let dialer = LoopbackDialer(identity: a.identity, port: server.port)
    let round = try deliver(a, to: b, dialer: dialer)
    XCTAssertEqual(round, OutboxDelivery.Round(delivered: 300, pending: 0, waitingFor: nil))
    XCTAssertEqual(Set(try b.open().inboxEntries().map(\.id)), Set(queued))
    XCTAssertEqual(dialer.sawBatches.all, [true])
  }
}

/// Dials a fixed port on 127.0.0.1 with TLS and greets, as PeerConnector does once it has
/// found the peer (keeping the peer's hello).
struct LoopbackDialer: PeerDialer {
  let identity: NodeIdentity
  let port: UInt16
  let sawBatches = Recorder<Bool>()

  func connect(to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void)
    async throws -> PeerLink
  {
    let identity = identity
    let port = port
    let expected = peer.deviceID
    let (channel, hello) = try await BlockingIO.run("mp.test.loopback") {
      let channel = try TLSClient(context: TLSContext(identity: identity.device, role: .client)).connect(
        host: "127.0.0.1", port: port, deadline: deadline, accepts: { $0 == expected })
      return (channel, try PeerSession.greet(channel, identity: identity, before: deadline))
    }
    sawBatches.append(hello.takesDeliveryBatches)
    onState(.ready)
    return PeerLink(channel: channel, peer: peer, hello: hello)
  }
}
