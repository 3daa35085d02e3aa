import Foundation
import MemoCore
import XCTest

@testable import MemoProtocol

/// The trusted session's hello, the server's dispatch, ping and delivery, with no I/O: a
/// client machine and a server machine on one thread, fed whole frames or single bytes, and
/// a lying peer.
final class SessionMachineTests: XCTestCase {
  let clientHello = PeerMessage.Hello(
    discoveryKey: Data(repeating: 1, count: 32).base64EncodedString(), rotationSeconds: 900)
  let serverHello = PeerMessage.Hello(
    discoveryKey: Data(repeating: 2, count: 32).base64EncodedString(), rotationSeconds: 60)

  enum Ended {
    case clean
    case failed(TransportError)

    var error: TransportError? {
      if case .failed(let error) = self { return error }
      return nil
    }
    var isClean: Bool {
      if case .clean = self { return true }
      return false
    }
  }

  /// One side: its machine, what it sent, what it was told.
  struct Side {
    var machine: SessionMachine
    /// The parser `TLSConnection` reads with: bytes fed here are framed as in production.
    var decoder = FrameDecoder(maximumPayload: Frame.defaultMaximumPayload)
    var sent: [Frame] = []
    var outbox: [Frame] = []
    var greeted: PeerMessage.Hello?
    var deliveries: [DeliveryMessage.Deliver] = []
    var refusedDeliveries: [SyncViolation] = []
    /// What the sync the session ran asked for (its frames are in `sent`); its store says it
    /// cannot sync now (`locked`).
    var syncs: [SyncMachine.Action] = []
    /// The history asks handed to the store ("notebook memo"), and the records it answers.
    var historyAsks: [String] = []
    var history: [SyncRecord] = []
    var ended: Ended?
    /// What the store does with a delivery.
    var store: (DeliveryMessage.Deliver) -> DeliveryExchange.Stored = { _ in .stored(place: "inbox", duplicate: false) }
    /// The batches handed to the store, and what the store does with each (by default
    /// `store` for every entry).
    var batches: [[DeliveryMessage.Deliver]] = []
    var storeBatch: (([DeliveryMessage.Deliver]) -> [DeliveryExchange.Stored])?
    var refusedBatches: [String] = []

    mutating func run(_ actions: [SessionMachine.Action]) {
      var pending = actions
      var next = 0
      while next < pending.count {
        let action = pending[next]
        next += 1
        switch action {
        case .send(let frame):
          sent.append(frame)
          outbox.append(frame)
        case .greeted(let hello): greeted = hello
        case .deliver(let deliver):
          deliveries.append(deliver)
          pending += machine.handle(.delivered(store(deliver)))
        case .deliverBatch(let entries):
          batches.append(entries)
          pending += machine.handle(.deliveredBatch(storeBatch?(entries) ?? entries.map(store)))
        case .refusedBatch(let why): refusedBatches.append(why)
        case .refusedDelivery(_, let violation): refusedDeliveries.append(violation)
        case .sync(.send(let frame)):
          sent.append(frame)
          outbox.append(frame)
        case .sync(let action):
          syncs.append(action)
          if case .plan = action { pending += machine.handle(.sync(.unavailable(.locked))) }
        case .answerHistory(let notebook, let memo):
          historyAsks.append("\(notebook.rawValue) \(memo.rawValue)")
          for frame in HistoryFetch.answer(history, bindings: []) {
            sent.append(frame)
            outbox.append(frame)
          }
        case .end(let error):
          XCTAssertNil(ended, "ends once")
          ended = error.map(Ended.failed) ?? .clean
        }
      }
    }

    mutating func feed(_ frames: [Frame], bytewise: Bool) {
      let bytes = frames.flatMap { $0.encoded() }
      if bytewise {
        for byte in bytes where ended == nil { run(machine.receive(bytes: [byte], through: &decoder)) }
      } else {
        run(machine.receive(bytes: bytes, through: &decoder))
      }
    }

    mutating func take() -> [Frame] {
      defer { outbox = [] }
      return outbox
    }
  }

  func greeted(bytewise: Bool = false) -> (client: Side, server: Side) {
    var client = Side(machine: SessionMachine(role: .client, hello: clientHello))
    var server = Side(machine: SessionMachine(role: .server, hello: serverHello))
    client.run(client.machine.start())
    server.run(server.machine.start())
    server.feed(client.take(), bytewise: bytewise)
    client.feed(server.take(), bytewise: bytewise)
    return (client, server)
  }

  func frame(_ kind: Frame.Kind, _ value: some Encodable) -> Frame { Frame(kind, payload: PeerMessage.encode(value)) }

  func testHellosCrossAndEachSideLearnsTheOthersKey() {
    for bytewise in [false, true] {
      let (client, server) = greeted(bytewise: bytewise)
      XCTAssertEqual(client.greeted, serverHello)
      XCTAssertEqual(server.greeted, clientHello)
      XCTAssertTrue(client.machine.isGreeted && server.machine.isGreeted)
      XCTAssertNil(server.ended)
    }
  }

  func testAnythingButAValidHelloFirstEndsTheSession() {
    var wrongProtocol = clientHello
    wrongProtocol.protocolVersion = 2
    var badKey = clientHello
    badKey.discoveryKey = "c2hvcnQ="
    var badRotation = clientHello
    badRotation.rotationSeconds = 604_801
    let cases: [(Frame, String)] = [
      (Frame(.ping, payload: []), "expected hello"),
      (Frame(.hello, payload: Array("{".utf8)), "expected hello"),
      (frame(.hello, wrongProtocol), "protocol 2"),
      (frame(.hello, badKey), "discovery key"),
      (frame(.hello, badRotation), "rotation"),
    ]
    for (first, expected) in cases {
      var server = Side(machine: SessionMachine(role: .server, hello: serverHello))
      server.run(server.machine.start())
      server.feed([first, Frame(.ping, payload: [1])], bytewise: true)
      guard let error = server.ended?.error else { return XCTFail("ends with an error: \(expected)") }
      XCTAssertEqual(error.kind, .protocolViolation)
      XCTAssertTrue(error.description.contains(expected), error.description)
      XCTAssertNil(server.greeted)
      XCTAssertEqual(server.sent.map(\.kind), [.hello], "no pong after a bad hello")
    }
    var client = Side(machine: SessionMachine(role: .client, hello: clientHello))
    client.run(client.machine.handle(.closed))
    guard let error = client.ended?.error else { return XCTFail("a close before hello is an error") }
    XCTAssertEqual(error.kind, .closed, "a device that does not trust us closes before its hello")
  }

  func testThePingIsAnsweredWithItsOwnBytesAndOnlyThatPongAnswers() {
    var (client, server) = greeted(bytewise: true)
    var exchange = PingExchange()
    for _ in 0..<3 {
      server.feed([exchange.next()], bytewise: true)
      let answer = server.take()
      XCTAssertEqual(answer.count, 1)
      XCTAssertTrue(exchange.answers(answer.first))
    }
    XCTAssertFalse(exchange.answers(Frame(.pong, payload: Array("1".utf8))), "an earlier pong answers nothing")
    XCTAssertFalse(exchange.answers(Frame(.ping, payload: Array("2".utf8))), "a ping is no pong")
    XCTAssertFalse(exchange.answers(nil))
    XCTAssertFalse(PingExchange().answers(Frame(.pong, payload: Array("0".utf8))), "a pong before any ping")
    // The client's machine reads no frame of its own after the hellos: a pong there is
    // read by the ping driver, anything reaching the machine is unexpected.
    client.feed([Frame(.pong, payload: [])], bytewise: false)
    XCTAssertEqual(client.sent.last, SessionMachine.goodbye("unexpected-frame"))
  }

  func testAGoodbyeEndsCleanlyAndAnUnexpectedFrameGetsItsReason() {
    var (_, server) = greeted()
    server.feed([SessionMachine.goodbye("done"), Frame(.ping, payload: [])], bytewise: true)
    XCTAssertEqual(server.ended?.isClean, true, "a clean end")
    XCTAssertEqual(server.sent.map(\.kind), [.hello])
    for kind in [Frame.Kind.pairCommit, .receipt, .syncAck, .pong] {
      var (_, server) = greeted()
      server.feed([Frame(kind, payload: [])], bytewise: false)
      XCTAssertEqual(server.sent.last, SessionMachine.goodbye("unexpected-frame"))
      guard let error = server.ended?.error else { return XCTFail("\(kind) ends the session") }
      XCTAssertEqual(error.kind, .protocolViolation)
    }
    var (_, closing) = greeted()
    closing.run(closing.machine.handle(.closed))
    XCTAssertEqual(closing.ended?.isClean, true, "the peer left between frames")
  }

  func testDeliveriesAreCheckedStoredAndAnswered() {
    let memo = DeliveryMessage.Content(title: "t", body: "b", tags: [], isPrivate: false, sent: 1)
    var (_, server) = greeted(bytewise: true)
    server.feed([DeliveryExchange.deliver(id: "entry-1", memo: memo)], bytewise: true)
    XCTAssertEqual(server.deliveries.map(\.id), ["entry-1"])
    let receipt = server.take()
    XCTAssertEqual(
      DeliveryExchange.answer(receipt.first, to: "entry-1"), .delivered(place: "inbox", duplicate: false))
    XCTAssertEqual(DeliveryExchange.answer(receipt.first, to: "entry-2"), .protocolError, "a receipt for another")

    // A delivery that breaks a rule is refused before the store sees it; the session goes on.
    var late = memo
    late.sent = Int64(1) << 60
    server.feed([DeliveryExchange.deliver(id: String(repeating: "x", count: 65), memo: memo)], bytewise: false)
    server.feed([DeliveryExchange.deliver(id: "entry-3", memo: late)], bytewise: false)
    XCTAssertEqual(server.deliveries.count, 1)
    XCTAssertEqual(server.refusedDeliveries.map(\.reason), [.malformed, .outOfRange])
    XCTAssertEqual(
      server.take().map { DeliveryExchange.answer($0, to: "entry-3") }.last, .refused(.invalid))
    XCTAssertNil(server.ended)

    // The store's refusal is the peer's; a store that fails ends the session.
    server.store = { _ in .refused(.inboxFull) }
    server.feed([DeliveryExchange.deliver(id: "entry-4", memo: memo)], bytewise: false)
    XCTAssertEqual(DeliveryExchange.answer(server.take().first, to: "entry-4"), .refused(.inboxFull))
    server.store = { _ in .failed }
    server.feed([DeliveryExchange.deliver(id: "entry-5", memo: memo)], bytewise: false)
    XCTAssertEqual(server.sent.last, SessionMachine.goodbye("delivery-failed"))
    XCTAssertNotNil(server.ended?.error)

    // Not a delivery at all.
    var (_, other) = greeted()
    other.feed([Frame(.deliver, payload: Array("[1]".utf8))], bytewise: false)
    XCTAssertEqual(other.sent.last, SessionMachine.goodbye("delivery-failed"))
    XCTAssertTrue(other.deliveries.isEmpty)
  }

  func testASenderReadsEveryKindOfAnswer() {
    let refuse = { (reason: String) in Frame(.refuse, payload: Array(#"{"id":"e","reason":"\#(reason)"}"#.utf8)) }
    XCTAssertEqual(DeliveryExchange.answer(refuse("policy"), to: "e"), .refused(.policy))
    XCTAssertEqual(DeliveryExchange.answer(refuse("from-the-future"), to: "e"), .refused(.invalid))
    XCTAssertEqual(DeliveryExchange.answer(Frame(.receipt, payload: Array("{".utf8)), to: "e"), .protocolError)
    XCTAssertEqual(DeliveryExchange.answer(Frame(.pong, payload: []), to: "e"), .protocolError)
    XCTAssertEqual(DeliveryExchange.answer(nil, to: "e"), .unreachable)
  }

  static let syncHello = SyncMessage.Hello(
    replica: ReplicaID(String(repeating: "a", count: 32))!, knowledge: VersionVector(), cursor: nil, pending: 0)

  /// The session runs the sync a `sync-hello` opens as its own sub-machine: the sync's
  /// frames and store work come out as `.sync`, and once the sync ended (here: the store
  /// cannot sync now, the asker is told) the session serves again.
  func testASyncHelloOpensASyncAndTheSessionGoesOnAfterIt() {
    var (_, server) = greeted()
    let hello = Frame(.syncHello, payload: PeerMessage.encode(Self.syncHello))
    server.feed([hello, Frame(.ping, payload: [7])], bytewise: true)
    XCTAssertEqual(server.syncs, [.plan(Self.syncHello, entries: [], ops: nil), .finish(.unavailable(.locked))])
    XCTAssertEqual(Array(server.sent.suffix(2)), [SyncMachine.refusal(.locked), Frame(.pong, payload: [7])])
    XCTAssertNil(server.ended)
  }

  /// A sync that ends badly (here: a hello that does not decode, refused) ends the session
  /// with the error an answerer's sync ending is; nothing after it is served.
  func testASyncThatBreaksEndsTheSession() {
    var (_, server) = greeted()
    server.feed([Frame(.syncHello, payload: Array("{}".utf8)), Frame(.ping)], bytewise: false)
    guard case .finish(.refusedPeer(let violation))? = server.syncs.last else {
      return XCTFail("\(server.syncs)")
    }
    XCTAssertEqual(violation.reason, .malformed)
    XCTAssertEqual(server.sent.last, SyncMachine.refusal(.malformed))
    guard case .failed(let error)? = server.ended else { return XCTFail("\(String(describing: server.ended))") }
    XCTAssertEqual(error, SyncMachine.Ending.refusedPeer(violation).answererError)
    XCTAssertFalse(server.machine.isSyncing)
  }

  /// Each store answer counts only for the work it answers: given with no work awaited, or
  /// while a delivery is stored, a sync's answer changes nothing (the delivery is still
  /// answered, the session still serves), and a delivery's answer changes nothing in a sync.
  func testEachStoreAnswerCountsOnlyForTheWorkItAnswers() throws {
    var (_, server) = greeted()
    XCTAssertEqual(server.machine.handle(.sync(.opsTaken)), [])
    let memo = DeliveryMessage.Content(title: "t", body: "b", tags: [], isPrivate: false, sent: 1)
    let stored = DeliveryExchange.Stored.stored(place: "inbox", duplicate: false)
    XCTAssertEqual(
      server.machine.receive(bytes: DeliveryExchange.deliver(id: "e1", memo: memo).encoded(), through: &server.decoder),
      [.deliver(DeliveryMessage.Deliver(id: "e1", memo: memo))])
    XCTAssertEqual(server.machine.handle(.sync(.opsTaken)), [])
    XCTAssertEqual(server.machine.handle(.deliveredBatch([])), [])
    XCTAssertEqual(
      server.machine.handle(.delivered(stored)), [.send(try XCTUnwrap(DeliveryExchange.answer(stored, id: "e1")))])
    let hello = Frame(.syncHello, payload: PeerMessage.encode(Self.syncHello))
    XCTAssertEqual(
      server.machine.receive(bytes: hello.encoded(), through: &server.decoder),
      [.sync(.plan(Self.syncHello, entries: [], ops: nil))])
    XCTAssertTrue(server.machine.isSyncing)
    XCTAssertEqual(server.machine.handle(.delivered(stored)), [])
    XCTAssertEqual(server.machine.handle(.sync(.opsTaken)), [])
    XCTAssertEqual(
      server.machine.handle(.sync(.unavailable(.locked))),
      [.sync(.send(SyncMachine.refusal(.locked))), .sync(.finish(.unavailable(.locked)))])
    XCTAssertEqual(
      server.machine.receive(bytes: Frame(.ping, payload: [1]).encoded(), through: &server.decoder),
      [.send(Frame(.pong, payload: [1]))])
    XCTAssertFalse(server.machine.isFinished)
  }

  // MARK: - History from a relay

  /// A `history-ask` is handed to the store and answered in frames of 8 records counting
  /// down; the client's exchange takes them, a byte at a time, and the session goes on.
  func testAHistoryAskIsAnsweredInFramesTheClientCountsDown() {
    var (_, server) = greeted()
    let memo = MemoID()
    server.history = (1...19).map { record(memo, seq: UInt64($0)) }
    var exchange = HistoryExchange(notebook: SyncMachineTests.notebook, memo: memo)
    server.feed([exchange.ask, Frame(.ping, payload: [7])], bytewise: true)
    XCTAssertEqual(server.historyAsks, ["\(SyncMachineTests.notebook.rawValue) \(memo.rawValue)"])
    var frames = server.take()
    XCTAssertEqual(frames.removeLast(), Frame(.pong, payload: [7]), "the session goes on after the answer")
    XCTAssertEqual(frames.count, 3)
    var steps = frames.map { exchange.receive($0) }
    XCTAssertEqual(steps.removeLast(), .done(records: server.history, bindings: []))
    XCTAssertEqual(steps, [.more, .more])
    XCTAssertNil(server.ended)
  }

  /// Nothing kept (or an asker the relay does not serve): one empty frame, and done.
  func testAnEmptyAnswerIsOneFrame() {
    let memo = MemoID()
    let frames = HistoryFetch.answer([], bindings: [])
    XCTAssertEqual(frames.count, 1)
    var exchange = HistoryExchange(notebook: SyncMachineTests.notebook, memo: memo)
    XCTAssertEqual(exchange.receive(frames[0]), .done(records: [], bindings: []))
    XCTAssertTrue(exchange.isFinished)
  }

  /// A malformed ask, or one of another version, ends the session with its reason.
  func testAMalformedHistoryAskEndsTheSession() {
    for (payload, reason) in [
      (Array("{\"version\": 1, \"notebook\": \"x\", \"memo\": \"y\"}".utf8), "malformed"),
      (Array("not json".utf8), "malformed"),
      (
        PeerMessage.encode(["version": "2", "notebook": SyncMachineTests.notebook.rawValue, "memo": MemoID().rawValue]),
        "malformed"
      ),
    ] {
      var (_, server) = greeted()
      server.feed([Frame(.historyAsk, payload: payload)], bytewise: false)
      XCTAssertEqual(server.historyAsks, [])
      XCTAssertEqual(
        server.sent.last.flatMap { PeerMessage.decode(PeerMessage.Goodbye.self, from: $0.payload) }?.reason, reason)
      XCTAssertNotNil(server.ended?.error)
    }
    var (_, server) = greeted()
    var ask = HistoryFetch.Ask(notebook: SyncMachineTests.notebook, memo: MemoID())
    ask.version = 2
    server.feed([frame(.historyAsk, ask)], bytewise: false)
    XCTAssertEqual(
      server.sent.last.flatMap { PeerMessage.decode(PeerMessage.Goodbye.self, from: $0.payload) }?.reason,
      HistoryFetch.unsupportedVersionReason)
    XCTAssertNotNil(server.ended?.error)
  }

  /// A lying relay: counts that do not add up, records of another memo or notebook, too
  /// many to a frame or in all, another frame kind, a goodbye from an older peer, a close,
  /// and frames after the answer. Each fails the whole fetch.
  func testALyingRelaysAnswerIsRefusedWhole() {
    let memo = MemoID()
    let records = (1...10).map { record(memo, seq: UInt64($0)) }
    func batch(_ position: UInt64, _ records: [SyncRecord]) -> Frame {
      Frame(.historyRecords, payload: SyncRecordBatch.encode(.init(position: position, records: records)))
    }
    func failed(_ frames: [Frame?]) -> Bool {
      var exchange = HistoryExchange(notebook: SyncMachineTests.notebook, memo: memo)
      for frame in frames {
        if case .failed = exchange.receive(frame) { return true }
      }
      return false
    }
    let otherMemo = record(MemoID(), seq: 1)
    var otherNotebook = record(memo, seq: 1)
    otherNotebook.notebook = NotebookID(String(repeating: "e", count: 32))!
    XCTAssertTrue(
      failed([batch(5, Array(records.prefix(8))), batch(0, Array(records.suffix(2)))]), "5 announced, 2 sent")
    XCTAssertTrue(failed([batch(2, Array(records.prefix(8))), batch(1, Array(records.suffix(2)))]), "no count down")
    XCTAssertTrue(failed([batch(3, [])]), "an empty frame that announces more")
    XCTAssertTrue(failed([batch(1, [records[0]]), batch(0, [])]), "an empty frame after the first")
    XCTAssertTrue(failed([batch(0, records)]), "10 records in one frame")
    XCTAssertTrue(failed([batch(UInt64(HistoryFetch.maximumRecords), [records[0]])]), "more than 256 in all")
    XCTAssertTrue(failed([batch(UInt64.max, [records[0]])]), "a count that overflows")
    XCTAssertTrue(failed([batch(0, [otherMemo])]), "another memo")
    XCTAssertTrue(failed([batch(0, [otherNotebook])]), "another notebook")
    XCTAssertTrue(failed([Frame(.historyRecords, payload: [3, 0, 1])]), "not a sync-batch")
    XCTAssertTrue(failed([Frame(.pong, payload: [])]), "another frame")
    XCTAssertTrue(failed([SessionMachine.goodbye("unexpected-frame")]), "an older peer")
    XCTAssertTrue(failed([nil]), "a close")
    XCTAssertTrue(failed([batch(0, [records[0]]), batch(0, [records[1]])]), "a frame after the answer")
    XCTAssertFalse(failed([batch(2, Array(records.prefix(8))), batch(0, Array(records[8...]))]), "an honest answer")
  }

  func record(_ memo: MemoID, seq: UInt64) -> SyncRecord {
    var record = SyncMachineTests.record(SyncMachineTests.answererReplica, seq)
    record.memo = memo
    return record
  }
}
