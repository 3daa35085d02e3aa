import MemoCore

/// The sender's side of batched delivery (delivery version 2; docs/PROTOCOL.md, "Batched
/// delivery"), as a value-type state machine in the mould of `SyncMachine`: the pending
/// outbox entries, their memos as the store opens them, what became of each send and the
/// receiver's frames go in; store work (open a memo, mark a batch `sending`, record fates)
/// and frames to send come out, and at the end the round's tally.
///
/// What it decides: how entries are packed (at most `maximumBatchEntries` and
/// `maximumBatchBytes` a batch; an entry no frame could carry fails at once), that at most
/// `window` batches are in flight (the next is packed while the receiver stores this one),
/// that a batch is marked `sending` before it goes out, that only a `batch-receipt` for
/// exactly the oldest batch in flight gives its entries their fates
/// (`DeliveryExchange.batchAnswer`), and how the round ends. Any other answer — a receipt
/// naming other entries, another number of results, an unknown fate, another version, a
/// goodbye, a frame that breaks the framing, the end of the connection — marks nothing
/// delivered: every entry in flight waits (its retransmission is recognised by the
/// receiver) and the round ends.
///
/// No I/O: `OutboxDelivery` (MemoNode) carries the frames and does the store work; tests
/// drive it a byte at a time against the receiver's `SessionMachine` and lying receivers.
public struct DeliverySender: DrivenMachine, Sendable {
  /// Batches sent ahead of their receipts: two, so that packing the next batch overlaps with
  /// the receiver storing this one. The receiver reads one frame at a time, so the second
  /// waits in the connection's buffers (at most 1 MiB more); its receipt is small.
  public static let window = 2

  /// What one round did for a peer.
  public struct Round: Sendable, Equatable {
    public var delivered: Int
    public var pending: Int
    /// Why the round stopped without delivering everything (nil: nothing left).
    public var waitingFor: String?

    public init(delivered: Int = 0, pending: Int = 0, waitingFor: String? = nil) {
      self.delivered = delivered
      self.pending = pending
      self.waitingFor = waitingFor
    }
  }

  /// What the receiver's answer (or its absence) made of an entry in flight.
  public enum Fate: Sendable, Hashable {
    /// Stored by the receiver, now or before: delivered at the time it is recorded.
    case delivered
    /// A final refusal (or a memo no frame carries): never offered again.
    case failed(String)
    /// Offered again later, for this reason.
    case waiting(String)

    /// The outbox state the fate is recorded as, `now` for a delivery.
    public func state(at now: Timestamp) -> OutboxState {
      switch self {
      case .delivered: .delivered(now)
      case .failed(let reason): .failed(reason)
      case .waiting(let reason): .waiting(reason)
      }
    }
  }

  public struct Change: Sendable, Equatable {
    public var id: String
    public var fate: Fate

    public init(id: String, fate: Fate) {
      self.id = id
      self.fate = fate
    }
  }

  /// What the driver feeds in: the answers to `.read` and `.send`, and the receiver's
  /// frames (or the end of the connection) whenever `needsFrame`.
  public enum Event: Sendable, Equatable {
    /// The answer to `.read`: the entry's memo, opened, as the JSON object a batch carries
    /// (`DeliveryMessage.encode(_:)` of it, or its stored JSON that
    /// `DeliveryMessage.sendableJSON` let through).
    case read(json: [UInt8])
    /// The answer to `.send`: the frame went out.
    case sent
    case frame(Frame)
    /// The connection ended, or a `.send` on it failed.
    case closed
  }

  /// What the driver does, in order. `.read` and `.send` are each answered with one event
  /// before the machine needs anything else; the store writes need no answer (a store that
  /// fails ends the round in the driver, with nothing more sent).
  public enum Action: Sendable, Equatable {
    /// Open outbox entry `id`'s memo; answer `.read`.
    case read(id: String)
    /// Mark these entries `sending`, counting an attempt, in one transaction: their batch
    /// goes out next.
    case markSending([String])
    /// Record these fates in one transaction.
    case record([Change])
    /// Send this frame; answer `.sent`, or `.closed` if the connection broke.
    case send(Frame)
    /// The round is over: nothing more is sent or recorded.
    case finish(Round)
  }

  private enum Awaiting: Sendable, Equatable {
    case read(String)
    case sent
  }

  /// Running (waiting for the answer to a read or a send, or for nothing the driver does),
  /// or over. Packing, the batches in flight and the tally are not phases: they go on side
  /// by side while the round runs.
  private enum State: Sendable, Equatable {
    case running(awaiting: Awaiting?)
    case finished
  }

  /// The batch being packed: its entries' ids and encodings, and its payload's size so far.
  private struct Packing: Sendable {
    var ids: [String] = []
    var encoded: [[UInt8]] = []
    var bytes = DeliveryMessage.Batch.overheadBytes
  }

  private let entries: [String]
  private let window: Int
  private var next = 0
  private var state = State.running(awaiting: nil)
  private var packing = Packing()
  private var inFlight: [[String]] = []
  private var round = Round()

  /// `entries`: the ids of the outbox entries to deliver, in order (pending for this peer,
  /// the expired ones already set aside).
  public init(entries: [String], window: Int = DeliverySender.window) {
    self.entries = entries
    self.window = max(1, window)
  }

  public var isFinished: Bool { state == .finished }

  /// Whether the machine waits for the receiver (not for a read or a send): the driver
  /// reads a frame.
  public var needsFrame: Bool { state == .running(awaiting: nil) && !inFlight.isEmpty }

  /// The batches sent and not answered yet, oldest first.
  public var batchesInFlight: [[String]] { inFlight }

  /// The first actions: read the first entry (or finish at once when there is none).
  public mutating func start() -> [Action] { fill() }

  /// Bytes that break the framing: every entry in flight waits, the round ends.
  public mutating func framingFailed(_ error: FrameError) -> [Action] {
    stop(waiting: Self.brokeProtocol("a frame that breaks the framing (\(error.description))"))
  }

  public static func received(_ frame: Frame?) -> Event { frame.map { .frame($0) } ?? .closed }

  public mutating func handle(_ event: Event) -> [Action] {
    guard !isFinished else { return [] }
    switch event {
    case .read(let memo):
      guard case .running(awaiting: .read(let id)) = state else { return [] }
      state = .running(awaiting: nil)
      return pack(id, memo) + fill()
    case .sent:
      guard state == .running(awaiting: .sent) else { return [] }
      state = .running(awaiting: nil)
      return fill()
    case .frame(let frame):
      return answer(frame)
    case .closed:
      return stop(waiting: Self.unreachable, reason: Self.unreachable)
    }
  }

  // MARK: - Packing and sending

  /// What comes next once nothing is awaited: the next entry's memo while a batch may still
  /// go out, the last batch, the receipt of the oldest batch in flight, or the end.
  private mutating func fill() -> [Action] {
    guard state == .running(awaiting: nil) else { return [] }
    if inFlight.count < window {
      let full = packing.ids.count == DeliveryMessage.maximumBatchEntries
      if full || (next == entries.count && !packing.ids.isEmpty) { return closeBatch() }
      if next < entries.count {
        let id = entries[next]
        state = .running(awaiting: .read(id))
        return [.read(id: id)]
      }
    }
    guard inFlight.isEmpty else { return [] }
    state = .finished
    return [.finish(round)]
  }

  /// Adds an entry's memo to the batch being packed; a batch the entry would take past its
  /// size goes out first (a full one goes out from `fill`).
  private mutating func pack(_ id: String, _ memo: [UInt8]) -> [Action] {
    next += 1
    let entry = DeliveryMessage.Batch.encodedEntry(id: id, memoJSON: memo)
    guard DeliveryMessage.Batch.overheadBytes + entry.count + 1 <= DeliveryMessage.maximumBatchBytes else {
      // Larger than any frame carries on its own: no peer could take it.
      return [.record([Change(id: id, fate: .failed("peer refused: \(RefusalReason.tooLarge.explanation)"))])]
    }
    var actions: [Action] = []
    // The entry starts the next batch (it fits in an empty one, so this one is not empty).
    if packing.bytes + entry.count + 1 > DeliveryMessage.maximumBatchBytes { actions += closeBatch() }
    packing.ids.append(id)
    packing.encoded.append(entry)
    packing.bytes += entry.count + 1
    return actions
  }

  /// The batch packed so far goes out: its entries are marked `sending`, then it is sent.
  private mutating func closeBatch() -> [Action] {
    let ids = packing.ids
    let frame = Frame(.deliverBatch, payload: DeliveryMessage.Batch.payload(encodedEntries: packing.encoded))
    packing = Packing()
    inFlight.append(ids)
    state = .running(awaiting: .sent)
    return [.markSending(ids), .send(frame)]
  }

  // MARK: - Answers

  private mutating func answer(_ frame: Frame) -> [Action] {
    guard let ids = inFlight.first else {
      // Nothing was asked: a receipt here answers entries that are not in flight.
      return stop(waiting: Self.brokeProtocol("a \(frame.kind) frame with no batch in flight"))
    }
    switch DeliveryExchange.batchAnswer(frame, to: ids) {
    case .answered(let answers):
      var changes: [Change] = []
      changes.reserveCapacity(ids.count)
      for (id, answer) in zip(ids, answers) {
        switch answer {
        case .delivered:
          changes.append(Change(id: id, fate: .delivered))
          round.delivered += 1
        case .refused(let reason) where reason.isFinal:
          changes.append(Change(id: id, fate: .failed("peer refused: \(reason.explanation)")))
        case .refused(let reason):
          changes.append(Change(id: id, fate: .waiting("peer refused: \(reason.explanation)")))
          round.pending += 1
          round.waitingFor = "peer refused: \(reason.explanation)"
        case .protocolError, .unreachable:
          changes.append(Change(id: id, fate: .waiting(Self.unreachable)))
          round.pending += 1
        }
      }
      inFlight.removeFirst()
      return [.record(changes)] + fill()
    case .unsupportedVersion:
      return stop(waiting: "the peer does not take this delivery version (update memo-peer on both devices)")
    case .protocolError(let why):
      // A receipt that is not exactly this batch's proves nothing about its entries.
      return stop(waiting: Self.brokeProtocol(why))
    case .ended:
      return stop(waiting: Self.unreachable)
    case .unreachable:
      return stop(waiting: Self.unreachable, reason: Self.unreachable)
    }
  }

  /// The round ends: every entry in flight waits with `waiting`, and the round for `reason`.
  private mutating func stop(waiting: String, reason: String = "protocol error") -> [Action] {
    let ids = inFlight.flatMap { $0 }
    inFlight = []
    state = .finished
    round.pending += ids.count
    round.waitingFor = reason
    let record: [Action] = ids.isEmpty ? [] : [.record(ids.map { Change(id: $0, fate: .waiting(waiting)) })]
    return record + [.finish(round)]
  }

  static let unreachable = "peer not reachable"

  static func brokeProtocol(_ why: String) -> String { "the peer broke the delivery protocol: \(why)" }
}
