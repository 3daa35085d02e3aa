import Foundation
import MemoCore
import XCTest

@testable import MemoProtocol

/// Batched delivery (delivery version 2) on the session machine, with no I/O: batches fed
/// whole and a byte at a time, every entry checked on its own, one receipt per batch, a
/// whole frame refused when it is not a batch, and a sender that believes only a receipt
/// for exactly its batch.
final class DeliveryBatchMachineTests: XCTestCase {
  typealias Side = SessionMachineTests.Side
  let memo = DeliveryMessage.Content(title: "t", body: "b", tags: [], isPrivate: false, sent: 1)

  func pair(bytewise: Bool = false) -> (client: Side, server: Side) {
    let key = { (byte: UInt8) in Data(repeating: byte, count: 32).base64EncodedString() }
    var client = Side(machine: SessionMachine(role: .client, hello: .init(discoveryKey: key(1), rotationSeconds: 900)))
    var server = Side(machine: SessionMachine(role: .server, hello: .init(discoveryKey: key(2), rotationSeconds: 60)))
    client.run(client.machine.start())
    server.run(server.machine.start())
    server.feed(client.take(), bytewise: bytewise)
    client.feed(server.take(), bytewise: bytewise)
    return (client, server)
  }

  func greeted(bytewise: Bool = false) -> Side { pair(bytewise: bytewise).server }

  func batch(_ entries: [(String, DeliveryMessage.Content)], version: Int = DeliveryMessage.batchVersion) -> Frame {
    Frame(
      .deliverBatch,
      payload: DeliveryMessage.Batch.payload(
        encodedEntries: entries.map { DeliveryMessage.Batch.encodedEntry(id: $0.0, memo: $0.1) }, version: version))
  }

  func ids(_ count: Int) -> [String] { (0..<count).map { "entry-\($0)" } }

  func testHellosSayWhetherAPeerTakesBatches() {
    let key = Data(repeating: 1, count: 32).base64EncodedString()
    let new = PeerMessage.Hello(discoveryKey: key, rotationSeconds: 900)
    XCTAssertTrue(new.takesDeliveryBatches)
    let decoded = PeerMessage.decode(PeerMessage.Hello.self, from: PeerMessage.encode(new))
    XCTAssertEqual(decoded?.delivery, DeliveryMessage.batchVersion)
    // A hello from before batches has no `delivery`: one entry at a time.
    let old = PeerMessage.decode(
      PeerMessage.Hello.self, from: Array(#"{"protocol":1,"discovery_key":"\#(key)","rotation_seconds":900}"#.utf8))
    XCTAssertEqual(old?.takesDeliveryBatches, false)
  }

  func testABatchFedAByteAtATimeIsStoredOnceAndAnsweredWithOneReceipt() throws {
    for bytewise in [true, false] {
      var server = greeted(bytewise: bytewise)
      let names = ids(5)
      server.feed([batch(names.map { ($0, memo) })], bytewise: bytewise)
      XCTAssertEqual(server.batches.map { $0.map(\.id) }, [names], "one store call for the whole batch")
      XCTAssertTrue(server.deliveries.isEmpty, "never entry by entry")
      let answers = server.take()
      XCTAssertEqual(answers.count, 1)
      XCTAssertEqual(answers.first?.kind, .batchReceipt)
      XCTAssertEqual(
        DeliveryExchange.batchAnswer(answers.first, to: names),
        .answered(Array(repeating: .delivered(place: "inbox", duplicate: false), count: 5)))
      XCTAssertNil(server.ended)
      // The session goes on after it.
      server.feed([Frame(.ping, payload: [1])], bytewise: bytewise)
      XCTAssertEqual(server.take(), [Frame(.pong, payload: [1])])
    }
  }

  /// A sender keeps two batches in flight: fed in one piece, the second waits until the
  /// first is answered, and the receipts come in order.
  func testASecondBatchInFlightIsServedAfterTheFirstIsAnswered() {
    var server = greeted()
    let first = ids(3)
    let second = ["later-1", "later-2"]
    server.feed(
      [batch(first.map { ($0, memo) }), batch(second.map { ($0, memo) }), Frame(.ping, payload: [9])], bytewise: false)
    XCTAssertEqual(server.batches.map { $0.map(\.id) }, [first, second])
    let answers = server.take()
    XCTAssertEqual(answers.map(\.kind), [.batchReceipt, .batchReceipt, .pong])
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(answers[0], to: first),
      .answered(Array(repeating: .delivered(place: "inbox", duplicate: false), count: 3)))
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(answers[1], to: second),
      .answered(Array(repeating: .delivered(place: "inbox", duplicate: false), count: 2)))
    XCTAssertNil(server.ended)

    // Far more ahead of the answers than any sender keeps in flight ends the session.
    var flood = greeted()
    flood.feed(
      [batch([("a", memo)])] + (0..<(SessionMachine.maximumHeldFrames + 1)).map { Frame(.ping, payload: [UInt8($0)]) },
      bytewise: false)
    XCTAssertEqual(flood.sent.last, SessionMachine.goodbye("unexpected-frame"))
    XCTAssertEqual(flood.ended?.error?.kind, .protocolViolation)
  }

  func testARefusedEntryDoesNotRefuseTheRestOfTheBatch() throws {
    var server = greeted()
    var late = memo
    late.sent = Int64(1) << 60
    var badRevision = memo
    badRevision.revision = DeliveryMessage.SentRevision(
      memo: Memo(
        id: MemoID(), title: "t", body: "b", tags: [], created: 1, updated: 1, isPrivate: false, revision: 1,
        origin: .replica("x")))
    badRevision.revision?.memo = "not-a-memo-id"
    badRevision.revision?.dotSeq = 1
    let longID = String(repeating: "x", count: 65)
    // One entry whose memo is not a memo at all, written by hand.
    var encoded = [
      DeliveryMessage.Batch.encodedEntry(id: "good-1", memo: memo),
      DeliveryMessage.Batch.encodedEntry(id: longID, memo: memo),
      DeliveryMessage.Batch.encodedEntry(id: "late", memo: late),
      DeliveryMessage.Batch.encodedEntry(id: "bad-revision", memo: badRevision),
      Array(#"{"id":"no-memo","memo":{"title":5}}"#.utf8),
      DeliveryMessage.Batch.encodedEntry(id: "full", memo: memo),
      DeliveryMessage.Batch.encodedEntry(id: "seen", memo: memo),
    ]
    encoded.append(DeliveryMessage.Batch.encodedEntry(id: "good-2", memo: memo))
    server.storeBatch = { entries in
      entries.map { entry in
        switch entry.id {
        case "full": .refused(.inboxFull)
        case "seen": .stored(place: "memos", duplicate: true)
        default: .stored(place: "inbox", duplicate: false)
        }
      }
    }
    server.feed([Frame(.deliverBatch, payload: DeliveryMessage.Batch.payload(encodedEntries: encoded))], bytewise: true)
    XCTAssertEqual(server.batches.map { $0.map(\.id) }, [["good-1", "full", "seen", "good-2"]])
    XCTAssertEqual(server.refusedDeliveries.map(\.reason), [.malformed, .outOfRange, .malformed, .malformed])
    let names = ["good-1", longID, "late", "bad-revision", "no-memo", "full", "seen", "good-2"]
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(server.take().first, to: names),
      .answered([
        .delivered(place: "inbox", duplicate: false), .refused(.invalid), .refused(.invalid), .refused(.invalid),
        .refused(.invalid), .refused(.inboxFull), .delivered(place: "memos", duplicate: true),
        .delivered(place: "inbox", duplicate: false),
      ]))
    XCTAssertNil(server.ended)
  }

  func testABatchWhoseEveryEntryIsRefusedIsAnsweredWithoutTheStore() {
    var server = greeted()
    var late = memo
    late.sent = Int64(1) << 60
    server.feed([batch([("a", late), ("b", late)])], bytewise: false)
    XCTAssertTrue(server.batches.isEmpty)
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(server.take().first, to: ["a", "b"]),
      .answered([.refused(.invalid), .refused(.invalid)]))
    XCTAssertNil(server.ended)
  }

  func testAStoreThatFailsEndsTheSessionWithoutAReceipt() {
    var server = greeted()
    server.storeBatch = { entries in entries.map { _ in .failed } }
    server.feed([batch([("a", memo), ("b", memo)])], bytewise: false)
    XCTAssertEqual(server.sent.last, SessionMachine.goodbye("delivery-failed"))
    XCTAssertFalse(server.sent.contains { $0.kind == .batchReceipt })
    XCTAssertNotNil(server.ended?.error)
    // A store that answers for another number of entries is a failure too.
    var short = greeted()
    short.storeBatch = { _ in [.stored(place: "inbox", duplicate: false)] }
    short.feed([batch([("a", memo), ("b", memo)])], bytewise: false)
    XCTAssertEqual(short.sent.last, SessionMachine.goodbye("delivery-failed"))
    XCTAssertNotNil(short.ended?.error)
  }

  func testAFrameThatIsNotABatchIsRefusedWholeAndEndsTheSession() {
    let entry = DeliveryMessage.Batch.encodedEntry(id: "a", memo: memo)
    let tooMany = DeliveryMessage.Batch.payload(
      encodedEntries: ids(DeliveryMessage.maximumBatchEntries + 1).map {
        DeliveryMessage.Batch.encodedEntry(id: $0, memo: memo)
      })
    let cases: [(String, [UInt8])] = [
      ("not JSON", Array("{".utf8)),
      ("an array", Array("[1]".utf8)),
      ("no version", Array(#"{"entries":[]}"#.utf8)),
      ("no entries", DeliveryMessage.Batch.payload(encodedEntries: [])),
      ("too many entries", tooMany),
      ("an entry without an id", Array(#"{"version":2,"entries":[{"memo":{}}]}"#.utf8)),
      ("an id that is a number", Array(#"{"version":2,"entries":[{"id":5}]}"#.utf8)),
      ("an id twice", DeliveryMessage.Batch.payload(encodedEntries: [entry, entry])),
      ("entries that are not an array", Array(#"{"version":2,"entries":{"id":"a"}}"#.utf8)),
    ]
    for (name, payload) in cases {
      var server = greeted()
      server.feed([Frame(.deliverBatch, payload: payload)], bytewise: false)
      XCTAssertTrue(server.batches.isEmpty, name)
      XCTAssertEqual(server.refusedBatches.count, 1, name)
      XCTAssertEqual(server.sent.last, SessionMachine.goodbye("delivery-failed"), name)
      XCTAssertEqual(server.ended?.error?.kind, .protocolViolation, name)
    }
  }

  /// Every refused entry's id comes back in the receipt: ids too long to name there make the
  /// frame malformed, so no batch within the frame maximum gets an answer beyond it (256
  /// ids of 4,000 `/`, escaped `\/` in the receipt, would make it 2 MiB).
  func testAnIDTooLongForTheAnswerRefusesTheWholeFrame() throws {
    // The reason of a goodbye, not the frame: a failure prints no megabyte of payload.
    let goodbyeReason = { (frame: Frame?) in
      frame.flatMap { PeerMessage.decode(PeerMessage.Goodbye.self, from: $0.payload)?.reason }
    }
    let limit = DeliveryMessage.maximumAnsweredIDBytes
    let slashes = (0..<DeliveryMessage.maximumBatchEntries).map { index in
      Array(#"{"id":"\#(index)\#(String(repeating: "/", count: 4000))"}"#.utf8)
    }
    let payload = DeliveryMessage.Batch.payload(encodedEntries: slashes)
    XCTAssertLessThanOrEqual(payload.count, DeliveryMessage.maximumBatchBytes)
    var server = greeted()
    server.feed([Frame(.deliverBatch, payload: payload)], bytewise: false)
    XCTAssertEqual(server.refusedBatches.count, 1)
    XCTAssertFalse(server.sent.contains { $0.kind == .batchReceipt })
    XCTAssertEqual(goodbyeReason(server.sent.last), "delivery-failed")
    // At the limit, the worst escaping (`\u0001`, 6 bytes a byte) still fits one frame; each
    // entry is refused on its own (longer than 64 bytes), as before.
    let controls = (0..<DeliveryMessage.maximumBatchEntries).map { index in
      Array(#"{"id":"\#(String(format: "%03d", index))\#(String(repeating: #"\u0001"#, count: limit - 3))"}"#.utf8)
    }
    var atLimit = greeted()
    atLimit.feed(
      [Frame(.deliverBatch, payload: DeliveryMessage.Batch.payload(encodedEntries: controls))], bytewise: false)
    let receipt = try XCTUnwrap(atLimit.sent.last)
    XCTAssertEqual(receipt.kind, .batchReceipt)
    XCTAssertLessThanOrEqual(receipt.payload.count, Frame.defaultMaximumPayload)
    XCTAssertNil(atLimit.ended)
    // A single `deliver` whose `refuse` would echo an id beyond the limit is refused whole too.
    var single = greeted()
    single.feed(
      [DeliveryExchange.deliver(id: String(repeating: "/", count: limit + 1), memo: memo)], bytewise: false)
    XCTAssertEqual(goodbyeReason(single.sent.last), "delivery-failed")
    XCTAssertFalse(single.sent.contains { $0.kind == .refuse })
  }

  func testABatchOfAnotherVersionIsRefusedWithAClearReason() {
    for version in [1, 3, -1] {
      var server = greeted()
      server.feed([batch([("a", memo)], version: version)], bytewise: true)
      XCTAssertTrue(server.batches.isEmpty)
      XCTAssertEqual(server.sent.last, SessionMachine.goodbye(DeliveryExchange.unsupportedVersionReason))
      XCTAssertEqual(
        server.ended?.error?.detail, "the peer sent delivery batch version \(version), this node speaks 2")
      XCTAssertEqual(DeliveryExchange.batchAnswer(server.sent.last, to: ["a"]), .unsupportedVersion)
    }
  }

  func testAnOversizedBatchIsRefusedFromItsHeader() {
    var server = greeted()
    var header: [UInt8] = [Frame.version, Frame.Kind.deliverBatch.rawValue]
    withUnsafeBytes(of: UInt32(DeliveryMessage.maximumBatchBytes + 1).bigEndian) { header += $0 }
    server.run(server.machine.receive(bytes: header, through: &server.decoder))
    XCTAssertTrue(server.batches.isEmpty)
    XCTAssertEqual(server.ended?.error?.kind, .protocolViolation)
    XCTAssertEqual(
      DeliveryExchange.batchRequest(Array(repeating: 0x20, count: DeliveryMessage.maximumBatchBytes + 1)),
      .malformed("larger than 1 MiB"))
  }

  func testASenderBelievesOnlyAReceiptForExactlyItsBatch() {
    let names = ["a", "b"]
    func receipt(_ results: [DeliveryMessage.BatchResult], version: Int = 2) -> Frame {
      Frame(
        .batchReceipt, payload: PeerMessage.encode(DeliveryMessage.BatchReceipt(version: version, results: results)))
    }
    let stored = { (id: String) in DeliveryMessage.BatchResult(id: id, fate: "stored", stored: "inbox") }
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(receipt(names.map(stored)), to: names),
      .answered([.delivered(place: "inbox", duplicate: false), .delivered(place: "inbox", duplicate: false)]))
    let lies: [(String, Frame)] = [
      ("unknown ids", receipt([stored("a"), stored("someone-else")])),
      ("the batch's ids in another order", receipt([stored("b"), stored("a")])),
      ("too few results", receipt([stored("a")])),
      ("too many results", receipt([stored("a"), stored("b"), stored("c")])),
      ("no results", receipt([])),
      ("another version", receipt(names.map(stored), version: 3)),
      ("an unknown fate", receipt([stored("a"), .init(id: "b", fate: "eaten")])),
      ("stored nowhere", receipt([stored("a"), .init(id: "b", fate: "stored")])),
      ("stored somewhere else", receipt([stored("a"), .init(id: "b", fate: "duplicate", stored: "/etc")])),
      ("not JSON", Frame(.batchReceipt, payload: Array("{".utf8))),
      (
        "a single receipt",
        Frame(
          .receipt, payload: PeerMessage.encode(DeliveryMessage.Receipt(id: "a", stored: "inbox", duplicate: false)))
      ),
      ("a pong", Frame(.pong)),
    ]
    for (name, frame) in lies {
      guard case .protocolError = DeliveryExchange.batchAnswer(frame, to: names) else {
        XCTFail("\(name): \(DeliveryExchange.batchAnswer(frame, to: names))")
        continue
      }
    }
    // A refusal with a reason it does not know fails the entry as invalid, as a single one.
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(
        receipt([stored("a"), .init(id: "b", fate: "refused", reason: "from-the-future")]), to: names),
      .answered([.delivered(place: "inbox", duplicate: false), .refused(.invalid)]))
    XCTAssertEqual(
      DeliveryExchange.batchAnswer(SessionMachine.goodbye("delivery-failed"), to: names), .ended("delivery-failed"))
    XCTAssertEqual(DeliveryExchange.batchAnswer(nil, to: names), .unreachable)
  }

  func testTheClientSideNeverServesABatch() {
    var (client, _) = pair()
    client.feed([batch([("a", memo)])], bytewise: false)
    XCTAssertTrue(client.batches.isEmpty)
    XCTAssertEqual(client.sent.last, SessionMachine.goodbye("unexpected-frame"))
  }
}
