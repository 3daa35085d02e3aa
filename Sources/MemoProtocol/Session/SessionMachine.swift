import MemoCore

/// A trusted session from both ends (docs/PROTOCOL.md, "A trusted session"), as a value-type
/// state machine: both sides send `hello` at once and check the other's; then the client
/// asks and the server answers. The server's side dispatches each frame (`ping` → `pong`,
/// `deliver` → store it and answer, `sync-hello` → a `SyncMachine`, `history-ask` → the
/// relayed history of one memo, `goodbye` → the end, anything else → `goodbye {"reason":
/// "unexpected-frame"}` and the end). The client's side is driven by what it asks (`ping`,
/// `deliver`, `history-ask`: `PingExchange`, `DeliveryExchange`, `HistoryExchange`).
///
/// No I/O: the drivers (MemoNode's `PeerSession`) carry frames and do the store work, so the
/// session is tested client against server on one thread, a byte at a time.
public struct SessionMachine: DrivenMachine, Sendable {
  public enum Role: Sendable, Equatable {
    /// The side that dialled: greets, then asks.
    case client
    /// The daemon: greets, then answers until the client leaves.
    case server
  }

  public enum Event: Sendable, Equatable {
    case frame(Frame)
    case closed
    /// The answer to `.deliver`: what storing the delivery gave.
    case delivered(DeliveryExchange.Stored)
    /// The answer to `.deliverBatch`: what storing each of its entries gave, in order (one
    /// `.failed` fails the whole batch: nothing of it was stored).
    case deliveredBatch([DeliveryExchange.Stored])
    /// The answer to the store work of the sync the session runs (`.sync`).
    case sync(SyncMachine.Event)
  }

  public enum Action: Sendable, Equatable {
    case send(Frame)
    /// The peer's hello arrived and is valid: learn its discovery key and rotation.
    case greeted(PeerMessage.Hello)
    /// Server: store this delivery (already checked) and answer `.delivered`.
    case deliver(DeliveryMessage.Deliver)
    /// Server: what the sync a `sync-hello` opened asks for (the session runs it as a
    /// `SyncMachine` of its own and hands it every frame until it ends): a frame to send,
    /// store work to answer with `.sync`, progress, and its ending. A sync that completed,
    /// or told the asker it cannot sync now, leaves the session serving; any other ending
    /// is followed by `.end` (`SyncMachine.Ending.answererError`).
    case sync(SyncMachine.Action)
    /// Server: send the sealed history this device kept of `memo` in `notebook` when it
    /// relays that notebook for the peer (`HistoryFetch.answer`; none otherwise).
    case answerHistory(notebook: NotebookID, memo: MemoID)
    /// Server: store these entries of a `deliver-batch` (each already checked), all in one
    /// transaction, and answer `.deliveredBatch` with one result per entry, in order.
    case deliverBatch([DeliveryMessage.Deliver])
    /// Server: a delivery was refused before storing it: log the rule it broke.
    case refusedDelivery(id: String, SyncViolation)
    /// Server: a whole `deliver-batch` was refused (malformed, or of another version): log
    /// it, naming the sender; the session ends.
    case refusedBatch(String)
    /// The session is over: `nil` a clean end, else the violation that ended it.
    case end(TransportError?)
  }

  /// Where the session stands, each phase with the data that means something in it only.
  private enum State: Sendable {
    /// Waiting for the peer's hello.
    case greeting
    /// Greeted: serving the peer's frames (the server) or asking (the client).
    case serving
    /// The store takes the delivery of this id; `.delivered` answers it.
    case storingDelivery(id: String)
    /// The store takes a `deliver-batch`: every entry's id in order, with the refusal of
    /// those refused before the store (nil: sent to the store); `.deliveredBatch` answers it.
    case storingBatch([(id: String, refused: RefusalReason?)])
    /// A sync runs on the channel: every frame and `.sync` answer goes to it.
    case syncing(SyncMachine)
    case finished
  }

  public let role: Role
  private let hello: PeerMessage.Hello
  private var state = State.greeting
  /// Frames that arrived while a batch was being stored (fed as bytes, several at once),
  /// served in order once it is answered; at most `maximumHeldFrames`. A queue that outlives
  /// the phase it filled in: what is left when a held frame starts other store work waits
  /// for that work's end.
  private var heldFrames: [Frame] = []
  /// A sender keeps at most two batches in flight; a little room beyond that for a ping.
  static let maximumHeldFrames = 4

  public init(role: Role, hello: PeerMessage.Hello) {
    self.role = role
    self.hello = hello
  }

  public var isFinished: Bool {
    if case .finished = state { return true }
    return false
  }

  /// Whether the hellos crossed: a client may ask from then on.
  public var isGreeted: Bool {
    switch state {
    case .greeting, .finished: false
    case .serving, .storingDelivery, .storingBatch, .syncing: true
    }
  }

  /// Both sides begin by sending their hello.
  public func start() -> [Action] {
    [.send(Frame(.hello, payload: PeerMessage.encode(hello)))]
  }

  /// Bytes that break the framing end the session with that violation.
  public mutating func framingFailed(_ error: FrameError) -> [Action] { end(.frame(error)) }

  public static func received(_ frame: Frame?) -> Event { frame.map { .frame($0) } ?? .closed }

  public mutating func handle(_ event: Event) -> [Action] {
    switch (state, event) {
    case (.finished, _): return []
    case (.greeting, .frame(let frame)): return greet(frame)
    case (.greeting, .closed):
      // A peer that does not trust us closes before its hello: this is where a client
      // learns it was refused.
      return end(TransportError(.closed, "closed before hello"))
    case (.serving, .frame(let frame)): return serve(frame)
    case (.serving, .closed): return end(nil)
    case (.storingDelivery(let id), .delivered(let stored)):
      // Each answer is taken only for the store work it answers; any other is ignored.
      state = .serving
      guard let answer = DeliveryExchange.answer(stored, id: id) else {
        return [.send(Self.goodbye("delivery-failed"))]
          + end(TransportError(.protocolViolation, "a delivery could not be stored"))
      }
      return [.send(answer)]
    case (.storingBatch(let batch), .deliveredBatch(let stored)):
      state = .serving
      guard let answer = DeliveryExchange.batchReceipt(batch, stored: stored) else {
        return [.send(Self.goodbye("delivery-failed"))]
          + end(TransportError(.protocolViolation, "a delivery batch could not be stored"))
      }
      return [.send(answer)] + serveHeldFrames()
    case (.storingBatch, .frame(let frame)):
      // A sender keeps a second batch in flight: it is served, in order, once this one's
      // receipt is out. More than that ahead of the answers is not a sender of this protocol.
      guard heldFrames.count < Self.maximumHeldFrames else {
        return [.send(Self.goodbye("unexpected-frame"))]
          + end(TransportError(.protocolViolation, "more frames ahead of the answers than a sender keeps in flight"))
      }
      heldFrames.append(frame)
      return []
    case (.syncing(var sync), .frame(let frame)): return syncing(&sync, sync.handle(.frame(frame)))
    case (.syncing(var sync), .closed): return syncing(&sync, sync.handle(.closed))
    case (.syncing(var sync), .sync(let answer)): return syncing(&sync, sync.handle(answer))
    default:
      return []
    }
  }

  /// Whether a sync runs: the frames read belong to it.
  public var isSyncing: Bool {
    if case .syncing = state { return true }
    return false
  }

  /// The sync's actions, as the session's; its ending ends the sync or the session.
  private mutating func syncing(_ sync: inout SyncMachine, _ actions: [SyncMachine.Action]) -> [Action] {
    var wrapped = actions.map(Action.sync)
    guard sync.isFinished else {
      state = .syncing(sync)
      return wrapped
    }
    state = .serving
    for case .finish(let ending) in actions {
      if let error = ending.answererError { wrapped += end(error) }
    }
    return wrapped
  }

  private mutating func serveHeldFrames() -> [Action] {
    var actions: [Action] = []
    while case .serving = state, !heldFrames.isEmpty {
      actions += serve(heldFrames.removeFirst())
    }
    return actions
  }

  private mutating func greet(_ frame: Frame) -> [Action] {
    guard frame.kind == .hello, let peer = PeerMessage.decode(PeerMessage.Hello.self, from: frame.payload) else {
      return end(TransportError(.protocolViolation, "expected hello, got \(frame.kind)"))
    }
    do throws(TransportError) {
      try PeerMessage.check(peer)
    } catch {
      return end(error)
    }
    state = .serving
    return [.greeted(peer)]
  }

  /// A frame after the hellos. The client's own exchanges (pongs, receipts) are read by
  /// their drivers, never here: on the client side any frame here is unexpected.
  private mutating func serve(_ frame: Frame) -> [Action] {
    guard role == .server else { return unexpected(frame) }
    switch frame.kind {
    case .ping: return [.send(Frame(.pong, payload: frame.payload))]
    case .goodbye: return end(nil)
    case .deliver:
      switch DeliveryExchange.request(frame.payload) {
      case .store(let deliver):
        state = .storingDelivery(id: deliver.id)
        return [.deliver(deliver)]
      case .refuse(let id, let violation):
        return [.refusedDelivery(id: id, violation), .send(DeliveryExchange.refusal(id: id, .invalid))]
      case .malformed:
        return [.send(Self.goodbye("delivery-failed"))]
          + end(TransportError(.protocolViolation, "a delivery could not be stored"))
      }
    case .deliverBatch:
      switch DeliveryExchange.batchRequest(frame.payload) {
      case .store(let items):
        var actions: [Action] = []
        var toStore: [DeliveryMessage.Deliver] = []
        var batch: [(id: String, refused: RefusalReason?)] = []
        for item in items {
          switch item {
          case .store(let deliver):
            toStore.append(deliver)
            batch.append((deliver.id, nil))
          case .refuse(let id, let violation):
            actions.append(.refusedDelivery(id: id, violation))
            batch.append((id, .invalid))
          }
        }
        state = .storingBatch(batch)
        // Nothing for the store when the checks refused every entry: answered at once.
        if toStore.isEmpty { return actions + handle(.deliveredBatch([])) }
        return actions + [.deliverBatch(toStore)]
      case .unsupportedVersion(let version):
        return [
          .refusedBatch("a delivery batch of version \(version)"),
          .send(Self.goodbye(DeliveryExchange.unsupportedVersionReason)),
        ]
          + end(
            TransportError(
              .protocolViolation,
              "the peer sent delivery batch version \(version), this node speaks \(DeliveryMessage.batchVersion)"))
      case .malformed(let why):
        return [.refusedBatch(why), .send(Self.goodbye("delivery-failed"))]
          + end(TransportError(.protocolViolation, "a delivery batch that is not one (\(why))"))
      }
    case .syncHello:
      var sync = SyncMachine(role: .answerer)
      return syncing(&sync, sync.handle(.frame(frame)))
    case .historyAsk:
      switch HistoryFetch.request(frame.payload) {
      case .answer(let notebook, let memo): return [.answerHistory(notebook: notebook, memo: memo)]
      case .unsupportedVersion(let version):
        return [.send(Self.goodbye(HistoryFetch.unsupportedVersionReason))]
          + end(
            TransportError(
              .protocolViolation,
              "the peer asked for history of version \(version), this node speaks \(HistoryFetch.version)"))
      case .malformed:
        return [.send(Self.goodbye("malformed"))]
          + end(TransportError(.protocolViolation, "a history-ask that is not one"))
      }
    default:
      return unexpected(frame)
    }
  }

  private mutating func unexpected(_ frame: Frame) -> [Action] {
    [.send(Self.goodbye("unexpected-frame"))]
      + end(TransportError(.protocolViolation, "unexpected \(frame.kind) frame"))
  }

  private mutating func end(_ error: TransportError?) -> [Action] {
    state = .finished
    return [.end(error)]
  }

  /// A `goodbye` frame with its reason (a stable code, never user content).
  public static func goodbye(_ reason: String) -> Frame {
    Frame(.goodbye, payload: PeerMessage.encode(PeerMessage.Goodbye(reason: reason)))
  }
}

/// The client's `ping`: each ping carries its number, and only a `pong` with the same bytes
/// answers it. Pure: the driver sends, reads one frame, and asks this what it was.
public struct PingExchange: Sendable, Equatable {
  public private(set) var sent = 0

  public init() {}

  /// The next ping.
  public mutating func next() -> Frame {
    defer { sent += 1 }
    return Frame(.ping, payload: Array(String(sent).utf8))
  }

  /// Whether `frame` (nil: the connection ended) answers the last ping.
  public func answers(_ frame: Frame?) -> Bool {
    guard let frame, sent > 0 else { return false }
    return frame.kind == .pong && frame.payload == Array(String(sent - 1).utf8)
  }
}

/// Delivery on a trusted session (docs/PROTOCOL.md, "Delivery"): one `deliver` in, one
/// `receipt` or `refuse` out. The sender's side sends one entry and reads what its one
/// answer says; the receiver's side decodes and checks a `deliver` before anything is
/// stored, and frames the answer from what storing it gave. Pure; the drivers keep the
/// outbox and the inbox.
public enum DeliveryExchange {
  /// What the receiver's store did with an entry.
  public enum Stored: Sendable, Equatable {
    /// Stored in `place` (`inbox` or `memos`), or seen before (`duplicate`).
    case stored(place: String, duplicate: Bool)
    case refused(RefusalReason)
    /// The store failed: the session ends with `goodbye {"reason": "delivery-failed"}`.
    case failed
  }

  /// What a sender learns from the answer to one entry.
  public enum Answer: Sendable, Equatable {
    case delivered(place: String, duplicate: Bool)
    /// Refused: final (`too-large`, `invalid`: the entry fails) or not (it waits).
    case refused(RefusalReason)
    /// A receipt naming another entry, or a frame that is no answer: the peer broke the
    /// protocol, so the entry waits (and is offered again) rather than being marked.
    case protocolError
    /// No answer: the connection ended (the entry waits).
    case unreachable
  }

  /// The `deliver` frame of one outbox entry.
  public static func deliver(id: String, memo: DeliveryMessage.Content) -> Frame {
    Frame(.deliver, payload: PeerMessage.encode(DeliveryMessage.Deliver(id: id, memo: memo)))
  }

  /// What `frame` (nil: the connection ended first) says about entry `id`.
  public static func answer(_ frame: Frame?, to id: String) -> Answer {
    guard let frame else { return .unreachable }
    switch frame.kind {
    case .receipt:
      guard let receipt = PeerMessage.decode(DeliveryMessage.Receipt.self, from: frame.payload), receipt.id == id
      else { return .protocolError }
      return .delivered(place: receipt.stored, duplicate: receipt.duplicate)
    case .refuse:
      let refuse = PeerMessage.decode(DeliveryMessage.Refuse.self, from: frame.payload)
      return .refused(refuse.flatMap { RefusalReason(rawValue: $0.reason) } ?? .invalid)
    default:
      return .protocolError
    }
  }

  /// What the receiver does with a `deliver` payload before its store sees it.
  public enum Request: Sendable, Equatable {
    case store(DeliveryMessage.Deliver)
    /// Decodes, but breaks a rule: refused as `invalid` with the rule for the log.
    case refuse(id: String, SyncViolation)
    /// Not a delivery at all, or one whose id is too long to name in a `refuse`
    /// (`DeliveryMessage.maximumAnsweredIDBytes`): the session ends.
    case malformed
  }

  public static func request(_ payload: [UInt8]) -> Request {
    guard let deliver = PeerMessage.decode(DeliveryMessage.Deliver.self, from: payload),
      deliver.id.utf8.count <= DeliveryMessage.maximumAnsweredIDBytes
    else { return .malformed }
    do throws(SyncViolation) {
      try DeliveryMessage.check(deliver)
    } catch {
      return .refuse(id: deliver.id, error)
    }
    return .store(deliver)
  }

  /// The receiver's answer to entry `id` after its store did `stored`; nil when the store
  /// failed (the session ends).
  public static func answer(_ stored: Stored, id: String) -> Frame? {
    switch stored {
    case .stored(let place, let duplicate):
      Frame(
        .receipt, payload: PeerMessage.encode(DeliveryMessage.Receipt(id: id, stored: place, duplicate: duplicate)))
    case .refused(let reason): refusal(id: id, reason)
    case .failed: nil
    }
  }

  public static func refusal(id: String, _ reason: RefusalReason) -> Frame {
    Frame(.refuse, payload: PeerMessage.encode(DeliveryMessage.Refuse(id: id, reason: reason)))
  }
}

// MARK: - Batches (delivery version 2)

extension DeliveryExchange {
  /// The `goodbye` reason for a batch of a version this node does not speak.
  public static let unsupportedVersionReason = "unsupported-delivery-version"

  /// One entry of a `deliver-batch` after the checks: for the store, or refused as `invalid`
  /// with the rule it broke (the rest of the batch goes on).
  public enum BatchItem: Sendable, Equatable {
    case store(DeliveryMessage.Deliver)
    case refuse(id: String, SyncViolation)
  }

  /// What the receiver does with a `deliver-batch` payload before its store sees it.
  public enum BatchRequest: Sendable, Equatable {
    /// Every entry, in order, checked one by one as a `deliver` is.
    case store([BatchItem])
    /// A batch of another delivery version: refused whole, the session ends.
    case unsupportedVersion(Int)
    /// Not a batch (not JSON of its shape, no entries or more than 256, an entry without a
    /// string id, an id twice, an id longer than `maximumAnsweredIDBytes`): refused whole,
    /// the session ends. The text is for the log.
    case malformed(String)
  }

  public static func batchRequest(_ payload: [UInt8]) -> BatchRequest {
    guard payload.count <= DeliveryMessage.maximumBatchBytes else { return .malformed("larger than 1 MiB") }
    guard let batch = PeerMessage.decode(DeliveryMessage.Batch.self, from: payload) else {
      return .malformed("not a batch")
    }
    guard batch.version == DeliveryMessage.batchVersion else { return .unsupportedVersion(batch.version) }
    guard (1...DeliveryMessage.maximumBatchEntries).contains(batch.entries.count) else {
      return .malformed("\(batch.entries.count) entries, not 1–\(DeliveryMessage.maximumBatchEntries)")
    }
    var seen = Set<String>()
    var items: [BatchItem] = []
    items.reserveCapacity(batch.entries.count)
    for entry in batch.entries {
      guard entry.id.utf8.count <= DeliveryMessage.maximumAnsweredIDBytes else {
        return .malformed("an entry id longer than \(DeliveryMessage.maximumAnsweredIDBytes) bytes")
      }
      guard seen.insert(entry.id).inserted else { return .malformed("an entry id twice") }
      guard let memo = entry.memo else {
        items.append(.refuse(id: entry.id, SyncViolation(.malformed, "an entry whose memo is not one")))
        continue
      }
      let deliver = DeliveryMessage.Deliver(id: entry.id, memo: memo)
      do throws(SyncViolation) {
        try DeliveryMessage.check(deliver)
        items.append(.store(deliver))
      } catch {
        items.append(.refuse(id: entry.id, error))
      }
    }
    return .store(items)
  }

  /// The receiver's `batch-receipt`: `batch` is every entry in order with the refusal of
  /// those the checks refused, `stored` what the store did with the others, in order. Nil
  /// when the store failed or gave another number of results (the session ends).
  public static func batchReceipt(_ batch: [(id: String, refused: RefusalReason?)], stored: [Stored]) -> Frame? {
    guard stored.count == batch.filter({ $0.refused == nil }).count else { return nil }
    var next = stored.makeIterator()
    var results: [DeliveryMessage.BatchResult] = []
    results.reserveCapacity(batch.count)
    for entry in batch {
      if let reason = entry.refused {
        results.append(.init(id: entry.id, fate: DeliveryMessage.BatchResult.refusedFate, reason: reason.rawValue))
        continue
      }
      switch next.next() {
      case .stored(let place, let duplicate):
        results.append(
          .init(
            id: entry.id,
            fate: duplicate ? DeliveryMessage.BatchResult.duplicateFate : DeliveryMessage.BatchResult.storedFate,
            stored: place))
      case .refused(let reason):
        results.append(.init(id: entry.id, fate: DeliveryMessage.BatchResult.refusedFate, reason: reason.rawValue))
      case .failed, nil:
        return nil
      }
    }
    return Frame(.batchReceipt, payload: PeerMessage.encode(DeliveryMessage.BatchReceipt(results: results)))
  }

  /// What a sender learns from the answer to one batch.
  public enum BatchAnswer: Sendable, Equatable {
    /// One answer per entry, in the batch's order (each `.delivered` or `.refused`).
    case answered([Answer])
    /// The peer does not speak this batch version (it said so with its goodbye).
    case unsupportedVersion
    /// A receipt that does not answer this batch (another version, another number of
    /// results, an id not the batch's in its place, a fate it does not know), or a frame
    /// that is no answer: the peer broke the protocol, so every entry waits.
    case protocolError(String)
    /// The peer ended the session instead (its goodbye's reason, e.g. `delivery-failed`
    /// when it could not store): every entry waits.
    case ended(String)
    /// No answer: the connection ended (every entry waits).
    case unreachable
  }

  /// What `frame` (nil: the connection ended first) says about the batch of `ids`.
  public static func batchAnswer(_ frame: Frame?, to ids: [String]) -> BatchAnswer {
    guard let frame else { return .unreachable }
    switch frame.kind {
    case .batchReceipt:
      guard let receipt = PeerMessage.decode(DeliveryMessage.BatchReceipt.self, from: frame.payload) else {
        return .protocolError("a receipt that is not one")
      }
      guard receipt.version == DeliveryMessage.batchVersion else {
        return .protocolError("a receipt of delivery version \(receipt.version)")
      }
      guard receipt.results.count == ids.count else {
        return .protocolError("a receipt with \(receipt.results.count) results for \(ids.count) entries")
      }
      var answers: [Answer] = []
      answers.reserveCapacity(ids.count)
      for (result, id) in zip(receipt.results, ids) {
        guard result.id == id else { return .protocolError("a receipt naming an entry that is not the batch's") }
        switch result.fate {
        case DeliveryMessage.BatchResult.storedFate, DeliveryMessage.BatchResult.duplicateFate:
          guard let place = result.stored, place == "inbox" || place == "memos" else {
            return .protocolError("a receipt that does not say where an entry is stored")
          }
          answers.append(.delivered(place: place, duplicate: result.fate == DeliveryMessage.BatchResult.duplicateFate))
        case DeliveryMessage.BatchResult.refusedFate:
          answers.append(.refused(result.reason.flatMap(RefusalReason.init(rawValue:)) ?? .invalid))
        default:
          return .protocolError("a receipt with an entry fate it does not know")
        }
      }
      return .answered(answers)
    case .goodbye:
      let goodbye = PeerMessage.decode(PeerMessage.Goodbye.self, from: frame.payload)
      return goodbye?.reason == unsupportedVersionReason ? .unsupportedVersion : .ended(goodbye?.reason ?? "")
    default:
      return .protocolError("a \(frame.kind) frame where a receipt belongs")
    }
  }
}
