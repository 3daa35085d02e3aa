import Foundation
import MemoCore
import XCTest

@testable import MemoProtocol

/// The sender's side of batched delivery (`DeliverySender`) with no I/O: against the
/// receiver's own `SessionMachine` a byte at a time, and against receivers that lie
/// (receipts for entries not in flight, duplicate fates, other versions, frames that are no
/// answer): only a receipt for exactly the oldest batch in flight marks anything delivered.
final class DeliverySenderTests: XCTestCase {
  typealias Server = SessionMachineTests.Side

  /// The driver's side, without a store or a channel: reads answered from `contents`,
  /// sends kept in `outbox` (or failed with `failSends`), every action logged in order.
  struct Sender {
    var machine: DeliverySender
    /// The parser `TLSConnection` reads with: bytes fed here are framed as in production.
    var decoder = FrameDecoder(maximumPayload: Frame.defaultMaximumPayload)
    var contents: [String: DeliveryMessage.Content]
    var log: [DeliverySender.Action] = []
    var outbox: [Frame] = []
    var reads: [String] = []
    var markedSending: [[String]] = []
    var fates: [String: DeliverySender.Fate] = [:]
    var round: DeliverySender.Round?
    var failSends = false

    init(_ entries: [(String, DeliveryMessage.Content)], window: Int = DeliverySender.window) {
      machine = DeliverySender(entries: entries.map(\.0), window: window)
      contents = Dictionary(entries, uniquingKeysWith: { first, _ in first })
    }

    mutating func start() { run(machine.start()) }

    mutating func run(_ actions: [DeliverySender.Action]) {
      var pending = actions
      var next = 0
      while next < pending.count {
        let action = pending[next]
        next += 1
        log.append(action)
        switch action {
        case .read(let id):
          reads.append(id)
          guard let content = contents[id] else { return XCTFail("read of \(id), not an entry") }
          pending += machine.handle(.read(json: DeliveryMessage.encode(content)))
        case .markSending(let ids): markedSending.append(ids)
        case .record(let changes):
          for change in changes {
            XCTAssertNil(fates[change.id], "one fate for \(change.id)")
            fates[change.id] = change.fate
          }
        case .send(let frame):
          if failSends {
            pending += machine.handle(.closed)
          } else {
            outbox.append(frame)
            pending += machine.handle(.sent)
          }
        case .finish(let round):
          XCTAssertNil(self.round, "finishes once")
          self.round = round
        }
      }
    }

    mutating func feed(_ frames: [Frame], bytewise: Bool) {
      let bytes = frames.flatMap { $0.encoded() }
      if bytewise {
        for byte in bytes where round == nil { run(machine.receive(bytes: [byte], through: &decoder)) }
      } else {
        run(machine.receive(bytes: bytes, through: &decoder))
      }
    }

    mutating func take() -> [Frame] {
      defer { outbox = [] }
      return outbox
    }

    func delivered() -> [String] { fates.filter { $0.value == .delivered }.map(\.key).sorted() }
  }

  func memo(_ body: String) -> DeliveryMessage.Content {
    DeliveryMessage.Content(title: "t", body: body, tags: [], isPrivate: false, sent: 1)
  }

  func entries(_ count: Int, prefix: String = "entry", body: (Int) -> String = { "memo \($0)" })
    -> [(String, DeliveryMessage.Content)]
  {
    (0..<count).map { (String(format: "%@-%04d", prefix, $0), memo(body($0))) }
  }

  static func ids(of frame: Frame) -> [String]? {
    guard frame.kind == .deliverBatch else { return nil }
    return PeerMessage.decode(DeliveryMessage.Batch.self, from: frame.payload)?.entries.map(\.id)
  }

  func receipt(_ results: [DeliveryMessage.BatchResult], version: Int = DeliveryMessage.batchVersion) -> Frame {
    Frame(.batchReceipt, payload: PeerMessage.encode(DeliveryMessage.BatchReceipt(version: version, results: results)))
  }

  func stored(_ ids: [String]) -> [DeliveryMessage.BatchResult] {
    ids.map { DeliveryMessage.BatchResult(id: $0, fate: "stored", stored: "inbox") }
  }

  /// A receiver greeted by a client, as a trusted session's server.
  func server() -> Server {
    let key = { (byte: UInt8) in Data(repeating: byte, count: 32).base64EncodedString() }
    var client = Server(
      machine: SessionMachine(role: .client, hello: .init(discoveryKey: key(1), rotationSeconds: 900)))
    var server = Server(machine: SessionMachine(role: .server, hello: .init(discoveryKey: key(2), rotationSeconds: 60)))
    client.run(client.machine.start())
    server.run(server.machine.start())
    server.feed(client.take(), bytewise: false)
    client.feed(server.take(), bytewise: false)
    return server
  }

  /// Frames back and forth until the sender finishes; the window is never exceeded.
  func exchange(_ sender: inout Sender, with server: inout Server, bytewise: Bool) {
    while sender.round == nil {
      let frames = sender.take()
      XCTAssertLessThanOrEqual(frames.count, DeliverySender.window)
      server.feed(frames, bytewise: bytewise)
      let answers = server.take()
      guard !frames.isEmpty || !answers.isEmpty else { return XCTFail("the exchange stalled") }
      sender.feed(answers, bytewise: bytewise)
      XCTAssertLessThanOrEqual(sender.machine.batchesInFlight.count, DeliverySender.window)
    }
  }

  // MARK: - Against the receiver's machine

  func testEntriesTravelInBatchesOfAtMost256AgainstTheReceiversMachineAByteAtATime() throws {
    for bytewise in [true, false] {
      let queued = entries(600)
      var sender = Sender(queued)
      var receiver = server()
      sender.start()
      // Two batches go out before any receipt; the third waits for the first receipt.
      XCTAssertEqual(sender.outbox.compactMap(Self.ids).map(\.count), [256, 256])
      XCTAssertTrue(sender.machine.needsFrame)
      XCTAssertEqual(sender.reads.count, 512, "nothing of the third batch read yet")
      exchange(&sender, with: &receiver, bytewise: bytewise)
      XCTAssertEqual(receiver.batches.map(\.count), [256, 256, 88])
      XCTAssertEqual(receiver.batches.flatMap { $0.map(\.id) }, queued.map(\.0), "in order, each once")
      XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 600, pending: 0, waitingFor: nil))
      XCTAssertEqual(sender.delivered(), queued.map(\.0))
      XCTAssertEqual(sender.reads, queued.map(\.0), "each memo opened once")
      XCTAssertNil(receiver.ended, "the session goes on")
    }
  }

  func testEachBatchIsMarkedSendingJustBeforeItGoesOut() {
    var sender = Sender(entries(300))
    sender.start()
    var batches: [[String]] = []
    for (index, action) in sender.log.enumerated() {
      guard case .send(let frame) = action else { continue }
      guard index > 0, case .markSending(let ids) = sender.log[index - 1] else {
        XCTFail("a batch sent without being marked first")
        continue
      }
      XCTAssertEqual(Self.ids(of: frame), ids)
      batches.append(ids)
    }
    XCTAssertEqual(batches.map(\.count), [256, 44])
    XCTAssertEqual(sender.markedSending, batches)
    XCTAssertTrue(sender.fates.isEmpty, "no fate before a receipt")
  }

  func testBatchesArePackedBySizeAndAMemoNoFrameCarriesFailsAlone() throws {
    // 300 KB memos: three fit in a batch of 1 MiB, a fourth starts the next one.
    var queued = entries(7) { _ in String(repeating: "x", count: 300_000) }
    queued.insert(("huge", memo(String(repeating: "y", count: DeliveryMessage.maximumBatchBytes))), at: 2)
    var sender = Sender(queued)
    var receiver = server()
    sender.start()
    exchange(&sender, with: &receiver, bytewise: false)
    XCTAssertEqual(
      receiver.batches.map { $0.map(\.id) },
      [
        ["entry-0000", "entry-0001", "entry-0002"], ["entry-0003", "entry-0004", "entry-0005"], ["entry-0006"],
      ])
    XCTAssertEqual(sender.fates["huge"], .failed("peer refused: \(RefusalReason.tooLarge.explanation)"))
    XCTAssertFalse(sender.markedSending.joined().contains("huge"), "never sent")
    XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 7, pending: 0, waitingFor: nil))
    XCTAssertEqual(sender.reads, queued.map(\.0), "an entry that starts the next batch is not opened twice")
  }

  func testRefusalsInABatchAreEachEntrysOwn() {
    let names = ["ok", "full", "big", "seen"]
    var sender = Sender(names.map { ($0, memo($0)) })
    sender.start()
    sender.feed(
      [
        receipt([
          .init(id: "ok", fate: "stored", stored: "inbox"),
          .init(id: "full", fate: "refused", reason: RefusalReason.inboxFull.rawValue),
          .init(id: "big", fate: "refused", reason: RefusalReason.tooLarge.rawValue),
          .init(id: "seen", fate: "duplicate", stored: "memos"),
        ])
      ], bytewise: true)
    let full = "peer refused: \(RefusalReason.inboxFull.explanation)"
    XCTAssertEqual(
      sender.fates,
      [
        "ok": .delivered, "full": .waiting(full), "big": .failed("peer refused: \(RefusalReason.tooLarge.explanation)"),
        "seen": .delivered,
      ])
    XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 2, pending: 1, waitingFor: full))
  }

  func testNothingToSendFinishesAtOnce() {
    var sender = Sender([])
    sender.start()
    XCTAssertEqual(sender.log, [.finish(DeliverySender.Round())])
    XCTAssertFalse(sender.machine.needsFrame)
  }

  // MARK: - A lying receiver

  func testOnlyAReceiptForExactlyTheOldestBatchInFlightMarksAnything() {
    // 300 entries: a batch of 256 and one of 44, both in flight.
    let queued = entries(300)
    let first = Array(queued.prefix(256).map(\.0))
    let second = Array(queued.suffix(44).map(\.0))
    let lies: [(String, Frame)] = [
      ("a receipt for the second batch first", receipt(stored(second))),
      ("a receipt for entries never sent", receipt(stored(first.map { $0 + "x" }))),
      ("a receipt for both batches at once", receipt(stored(first + second))),
      ("a duplicate fate", receipt(stored([first[0]] + first.dropLast()))),
      ("the same entry twice, one left out", receipt(stored(first.dropLast() + [first[0]]))),
      ("one result too few", receipt(stored(first.dropLast()))),
      ("the batch in another order", receipt(stored(first.reversed()))),
      ("version 1", receipt(stored(first), version: 1)),
      ("version 3", receipt(stored(first), version: 3)),
      ("an unknown fate", receipt(stored(first.dropLast()) + [.init(id: first[255], fate: "eaten")])),
      ("stored nowhere", receipt(stored(first.dropLast()) + [.init(id: first[255], fate: "stored")])),
      ("stored elsewhere", receipt(stored(first.dropLast()) + [.init(id: first[255], fate: "stored", stored: "/etc")])),
      ("not JSON", Frame(.batchReceipt, payload: Array("{".utf8))),
      (
        "a single entry's receipt",
        Frame(
          .receipt,
          payload: PeerMessage.encode(DeliveryMessage.Receipt(id: first[0], stored: "inbox", duplicate: false)))
      ),
      ("a pong", Frame(.pong)),
      ("a deliver-batch of its own", Frame(.deliverBatch, payload: DeliveryMessage.Batch.payload(encodedEntries: []))),
    ]
    for (name, lie) in lies {
      for bytewise in [true, false] {
        var sender = Sender(queued)
        sender.start()
        XCTAssertEqual(sender.machine.batchesInFlight, [first, second], name)
        sender.feed([lie], bytewise: bytewise)
        XCTAssertEqual(sender.delivered(), [], name)
        XCTAssertEqual(
          sender.round, DeliverySender.Round(delivered: 0, pending: 300, waitingFor: "protocol error"), name)
        XCTAssertEqual(Set(sender.fates.keys), Set(queued.map(\.0)), name)
        for fate in sender.fates.values {
          guard case .waiting(let why) = fate, why.hasPrefix("the peer broke the delivery protocol: ") else {
            XCTFail("\(name): \(fate)")
            break
          }
        }
        XCTAssertTrue(sender.machine.isFinished, name)
        // Nothing it says afterwards changes anything.
        sender.feed([receipt(stored(first))], bytewise: bytewise)
        XCTAssertEqual(sender.delivered(), [], name)
      }
    }
  }

  /// An honest first receipt counts; a lie about the second leaves only the second waiting.
  func testALieAboutTheSecondBatchKeepsTheFirstBatchsFates() {
    let queued = entries(300)
    let first = Array(queued.prefix(256).map(\.0))
    var sender = Sender(queued)
    sender.start()
    sender.feed([receipt(stored(first)), receipt(stored(first))], bytewise: true)
    XCTAssertEqual(sender.delivered(), first)
    XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 256, pending: 44, waitingFor: "protocol error"))
    XCTAssertEqual(sender.fates.values.filter { $0 != .delivered }.count, 44)
  }

  /// Every way of spoiling one true receipt: either it still says exactly what is true, or
  /// nothing of its batch is marked delivered.
  func testEverySpoiledReceiptMarksNothingDelivered() {
    let names = ["a", "b", "c"]
    let truth = stored(names)
    var spoiled: [[DeliveryMessage.BatchResult]] = []
    for index in truth.indices {
      var other = truth
      other[index].id = "z"
      spoiled.append(other)
      other = truth
      other[index].fate = "lost"
      spoiled.append(other)
      other = truth
      other[index].stored = nil
      spoiled.append(other)
      other = truth
      other[index].stored = "../inbox"
      spoiled.append(other)
      other = truth
      other[index] = truth[(index + 1) % truth.count]
      spoiled.append(other)
      other = truth
      other.remove(at: index)
      spoiled.append(other)
      other = truth
      other.insert(truth[index], at: index)
      spoiled.append(other)
      other = truth
      other.swapAt(index, (index + 1) % truth.count)
      spoiled.append(other)
    }
    for results in spoiled {
      var sender = Sender(names.map { ($0, memo($0)) })
      sender.start()
      sender.feed([receipt(results)], bytewise: true)
      XCTAssertEqual(sender.delivered(), [], "\(results)")
      XCTAssertEqual(sender.round?.pending, 3, "\(results)")
      XCTAssertEqual(sender.round?.waitingFor, "protocol error", "\(results)")
    }
  }

  func testAReceiptWithNoBatchInFlightIsALie() {
    var sender = Sender(entries(3))
    // The receipt arrives before anything was sent (the first memo is still being opened).
    sender.run(sender.machine.handle(.frame(receipt(stored(["entry-0000"])))))
    XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 0, pending: 0, waitingFor: "protocol error"))
    XCTAssertTrue(sender.fates.isEmpty, "nothing was in flight to mark")
    // After the last receipt, one more is a lie too: the round is already over.
    var done = Sender(entries(1))
    done.start()
    done.feed([receipt(stored(["entry-0000"]))], bytewise: false)
    XCTAssertEqual(done.round, DeliverySender.Round(delivered: 1))
    XCTAssertEqual(done.machine.handle(.frame(receipt(stored(["entry-0000"])))), [])
  }

  func testGoodbyesAndTheEndOfTheConnectionLeaveEveryEntryInFlightWaiting() {
    let cases: [(String, (inout Sender) -> Void, fate: String, reason: String)] = [
      (
        "another version",
        { $0.feed([SessionMachine.goodbye(DeliveryExchange.unsupportedVersionReason)], bytewise: true) },
        "the peer does not take this delivery version (update memo-peer on both devices)", "protocol error"
      ),
      (
        "a store that failed", { $0.feed([SessionMachine.goodbye("delivery-failed")], bytewise: true) },
        "peer not reachable", "protocol error"
      ),
      ("the connection ended", { $0.run($0.machine.handle(.closed)) }, "peer not reachable", "peer not reachable"),
      (
        "a frame of an unknown type",
        { $0.run($0.machine.receive(bytes: [Frame.version, 0xEE, 0, 0, 0, 0], through: &$0.decoder)) },
        "the peer broke the delivery protocol: a frame that breaks the framing (unknown frame type 238)",
        "protocol error"
      ),
    ]
    for (name, answer, fate, reason) in cases {
      var sender = Sender(entries(300))
      sender.start()
      answer(&sender)
      XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 0, pending: 300, waitingFor: reason), name)
      XCTAssertEqual(Set(sender.fates.values), [.waiting(fate)], name)
    }
  }

  func testASendThatFailsEndsTheRoundWithItsBatchWaiting() {
    var sender = Sender(entries(300))
    sender.failSends = true
    sender.start()
    XCTAssertEqual(sender.markedSending.map(\.count), [256], "only the first batch was tried")
    XCTAssertEqual(sender.reads.count, 256, "nothing more opened")
    XCTAssertEqual(sender.round, DeliverySender.Round(delivered: 0, pending: 256, waitingFor: "peer not reachable"))
    XCTAssertEqual(Set(sender.fates.values), [.waiting("peer not reachable")])
  }

  func testAnswersNobodyAskedForAreIgnored() {
    var sender = Sender(entries(2))
    sender.start()
    XCTAssertTrue(sender.machine.needsFrame)
    XCTAssertEqual(sender.machine.handle(.read(json: DeliveryMessage.encode(memo("again")))), [])
    XCTAssertEqual(sender.machine.handle(.sent), [])
    XCTAssertEqual(sender.machine.batchesInFlight, [["entry-0000", "entry-0001"]])
  }
}
