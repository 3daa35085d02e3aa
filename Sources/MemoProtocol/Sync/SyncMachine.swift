import MemoCore

/// One side of a sync session (docs/PROTOCOL.md, "Sync"), as a value-type state machine in
/// the mould of `PairingMachine`: frames and the results of store work go in, frames to send
/// and store work to do come out. It does no I/O and touches no store, so two machines are
/// tested against each other on one thread (a byte at a time, reordered, with a lying peer),
/// and `SyncSession` (MemoNode) is only a driver that carries frames between a machine and
/// a `FrameChannel` and does the store work it is told.
///
/// The session, after both hellos of a trusted connection:
///
///     asker                                   answerer
///     sync-hello {notebooks, heads}       →
///                                         ←   sync-hello {notebooks, heads, pending} | sync-refuse
///                                         ←   sync-ops {the ops the asker lacks}
///     sync-ops {the ops the answerer lacks} →
///     (answerer → asker)                  ←   sync-batch × n, at most `window` unacknowledged
///     sync-ack {position} per batch       →
///                                         ←   sync-done {position, knowledge}
///     sync-ack {position, outcome}        →
///     (asker → answerer)                  →   the same, the other way
///
/// What the machine decides: the order of every frame, the window (the sender keeps at
/// most `window` batches unacknowledged), that each acknowledgement answers a batch and
/// acknowledges no more than was sent, that a peer sends no more than a window's worth
/// before it needs an answer, the decoding
/// and range checks of every message (`SyncMessage`, `SyncRecordBatch`, `NotebookEntries`,
/// the shape of `SyncOps`),
/// and how a session ends. What the driver decides: everything that needs the store (the
/// plan, applying a batch, the guard at `sync-done`, reading the feed), whose rule
/// violations come back as `.refused`.
///
/// Any violation — a frame out of order, a message that does not decode, a number out of
/// range, a rule the store found broken — ends the session with `sync-refuse` naming the
/// reason; nothing of the message at fault has been committed by then (the driver commits a
/// batch only when its `.apply` succeeds).
public struct SyncMachine: DrivenMachine, Sendable {
  public enum Role: Sendable, Equatable {
    /// `memo-peer sync`: sends the first `sync-hello`, receives first, then sends.
    case asker
    /// The daemon: answers a `sync-hello`, sends first, then receives.
    case answerer
  }

  /// Unacknowledged batches in flight: enough to keep the link busy while the receiver
  /// commits, few enough that at most a few hundred KiB wait in buffers.
  public static let window = 4

  /// Progress of one direction: records so far, and the sender's upper estimate.
  public struct Progress: Sendable, Equatable {
    public var receiving: Bool
    public var done: Int
    public var estimate: Int

    public init(receiving: Bool, done: Int, estimate: Int) {
      self.receiving = receiving
      self.done = done
      self.estimate = estimate
    }
  }

  /// What a completed session did.
  public struct Summary: Sendable, Equatable {
    /// The direction into this side, as its store reported it.
    public var received = SyncMessage.Outcome()
    /// The direction into the peer, as the peer reported it.
    public var sent = SyncMessage.Outcome()
    /// Records this side sent.
    public var sentRecords = 0
    /// Records this side received.
    public var receivedRecords = 0

    public init() {}
  }

  /// How a session ended.
  public enum Ending: Sendable, Equatable {
    case completed(Summary)
    /// This side refused what the peer sent; the `sync-refuse` went out before this.
    case refusedPeer(SyncViolation)
    /// The peer ended the session with `sync-refuse` (nil: a reason this version does not
    /// know, or none).
    case refusedByPeer(SyncRefuseReason?)
    /// The peer refused this side's sync version, saying the one it speaks (nil: a peer
    /// from before version 3, which does not say).
    case refusedVersion(peerVersion: Int?)
    /// This side (the answerer) cannot sync now and told the asker (`locked`, `storage`).
    case unavailable(SyncRefuseReason)
    /// This side's store failed; an answerer told the asker `storage`.
    case storeFailed
    /// The connection ended before the session did.
    case closed
  }

  /// What the driver feeds in: frames, the end of the connection, and the answers to the
  /// store work the machine asked for (each answers the one action awaiting it).
  public enum Event: Sendable, Equatable {
    case frame(Frame)
    case closed
    /// The answer to `.plan`: an answerer replies with `reply` and `ops` (what the asker
    /// lacks); an asker took the answerer's ops, made its plan, and sends `ops` (what the
    /// answerer lacks).
    case planned(reply: SyncMessage.Hello?, ops: [SyncOps.Notebook])
    /// The answer to `.takeOps` (the answerer): the asker's ops are in, the plan is made.
    case opsTaken
    /// The answer to `.plan` on an answerer that cannot sync now (`locked`, `storage`).
    case unavailable(SyncRefuseReason)
    /// The answer to `.prepareReceiving` and `.prepareSending`: the sender's upper estimate
    /// of the records of that direction (for progress).
    case prepared(estimate: Int)
    /// The answer to `.apply`: the batch is committed up to `position` of the sender's feed.
    case applied(position: UInt64)
    /// The answer to `.finishReceiving`: the receiving direction's outcome.
    case received(SyncMessage.Outcome)
    /// An answer to `.readBatch`: the next batch of this side's feed.
    case read(SyncRecordBatch.Batch)
    /// An answer to `.readBatch`: the feed is read to its end; `done` closes the direction.
    case exhausted(SyncMessage.Done)
    /// The answer to `.recordProgress`.
    case recorded
    /// The store found a rule broken by what the peer sent (in answer to `.plan`, `.apply`
    /// or `.finishReceiving`); nothing of it was committed.
    case refused(SyncViolation)
    /// The store failed in answer to any store action.
    case failed
  }

  /// What the driver does, in order. Each store action is answered with one event before
  /// the machine needs anything else.
  public enum Action: Sendable, Equatable {
    case send(Frame)
    /// The answerer (`ops` nil): open the store (`.unavailable` if it cannot), take the
    /// asker's hello and answer with its own and the ops the asker lacks. The asker: take
    /// the answerer's hello and ops, make the session's plan, and give the ops the answerer
    /// lacks.
    case plan(SyncMessage.Hello, entries: [CheckedEntry], ops: [SyncOps.Notebook]?)
    /// The answerer: take the asker's ops and make the session's plan.
    case takeOps([SyncOps.Notebook])
    /// Get ready to receive (the receiving direction's bookkeeping); answer `.prepared`
    /// with the peer's estimate (its hello's `pending`, on the asker).
    case prepareReceiving
    /// Commit this batch in one transaction with the sender's feed position; answer
    /// `.applied` or `.refused`.
    case apply(SyncRecordBatch.Batch)
    /// The sender sent everything: the guard decides on held removals, knowledge may be
    /// adopted; answer `.received` with the outcome.
    case finishReceiving(SyncMessage.Done)
    /// Get ready to send (read the knowledge to claim); answer `.prepared`.
    case prepareSending
    /// Read the next batch of the feed; answer `.read` or `.exhausted`.
    case readBatch
    /// The peer committed up to `acknowledged` of this feed: record it; answer `.recorded`.
    case recordProgress(acknowledged: UInt64)
    case progress(Progress)
    /// The session is over; nothing more is sent or done.
    case finish(Ending)
  }

  /// Where the session stands, each phase with the data that means something in it only:
  /// a state that mixes phases cannot be written.
  private enum State: Sendable {
    case notStarted
    /// Asker: its hello is out; answerer: waiting for the asker's hello, then (`planning`)
    /// for its store to plan.
    case awaitingHello(planning: Bool)
    /// Hellos exchanged; waiting for the peer's `sync-ops` (the answerer's come right after
    /// its hello, the asker's after it took them).
    case awaitingOps(AwaitingOps)
    case receiving(Receiving)
    case sending(Sending)
    case finished
  }

  /// Waiting for the peer's `sync-ops`, then for the store to take them.
  private struct AwaitingOps: Sendable {
    /// The asker: the answerer's hello, kept until its ops arrive.
    var peerHello: (hello: SyncMessage.Hello, entries: [CheckedEntry])?
    /// The store work awaited: the asker's plan, the answerer's taking of the ops.
    var work: OpsWork?
  }

  private enum OpsWork: Sendable { case plan, takeOps }

  /// The receiving direction.
  private struct Receiving: Sendable {
    /// Whether this side's sending direction is behind it (then the end follows).
    var sentAll: Bool
    /// The sender's upper estimate of the records of this direction.
    var estimate = 0
    /// The position of the last batch in, so that batches come in the order they were read
    /// and `sync-done` comes after the last of them: its knowledge claims every record sent,
    /// which is true only once all of them are here.
    var lastPosition: UInt64?
    var work: Work? = .prepare

    enum Work: Sendable {
      case prepare
      case apply(records: Int)
      case finish(position: UInt64)
    }
  }

  /// The sending direction.
  private struct Sending: Sendable {
    /// Whether this side's receiving direction is behind it (then the end follows).
    var receivedAll: Bool
    var estimate = 0
    /// Batches out without an acknowledgement.
    var inFlight = 0
    /// The highest position sent, and acknowledged.
    var sentUpTo: UInt64 = 0
    var acknowledged: UInt64 = 0
    /// Whether `sync-done` is out, and whether a batch went before it.
    var doneSent = false
    var batchSent = false
    var work: Work? = .prepare

    enum Work: Sendable { case prepare, read, record }
  }

  private enum Incoming: Sendable, Equatable {
    case frame(Frame)
    case closed
  }

  public let role: Role
  private let window: Int
  private var state = State.notStarted
  /// Frames that arrived while store work was awaited (in any phase), served in order once
  /// it is done.
  private var inbox: [Incoming] = []
  /// What the session did so far, both directions.
  private var summary = Summary()

  public init(role: Role, window: Int = SyncMachine.window) {
    self.role = role
    self.window = max(1, window)
  }

  /// Whether the session is over (after `.finish`).
  public var isFinished: Bool {
    if case .finished = state { return true }
    return false
  }

  /// Whether store work is awaited: frames that arrive meanwhile wait in `inbox`.
  private var isAwaitingWork: Bool {
    switch state {
    case .notStarted, .finished: false
    case .awaitingHello(let planning): planning
    case .awaitingOps(let ops): ops.work != nil
    case .receiving(let receiving): receiving.work != nil
    case .sending(let sending): sending.work != nil
    }
  }

  /// Whether the machine waits for the peer (not for store work): the driver reads a frame.
  public var needsFrame: Bool { !isFinished && !isAwaitingWork }

  /// The asker's first actions: its `sync-hello`.
  public mutating func ask(_ hello: SyncMessage.Hello) -> [Action] {
    guard role == .asker, case .notStarted = state else { return [] }
    state = .awaitingHello(planning: false)
    return [.send(Self.frame(.syncHello, hello))]
  }

  public mutating func handle(_ event: Event) -> [Action] {
    guard !isFinished else { return [] }
    if case .notStarted = state, role == .answerer { state = .awaitingHello(planning: false) }
    switch event {
    case .frame(let frame): return incoming(.frame(frame))
    case .closed: return incoming(.closed)
    default: return answered(event) + drain()
    }
  }

  // MARK: - Frames

  private mutating func incoming(_ item: Incoming) -> [Action] {
    guard !isAwaitingWork, inbox.isEmpty else {
      // A correct peer sends at most a window of batches and its `sync-done` (or their
      // acknowledgements) before it needs an answer: anything beyond is a flood.
      guard inbox.count <= window + 2 else {
        return refuse(SyncViolation(.unexpectedFrame, "more frames than the window allows"))
      }
      inbox.append(item)
      return []
    }
    return process(item)
  }

  /// Frames that waited for store work, once it is done.
  private mutating func drain() -> [Action] {
    var actions: [Action] = []
    while !isAwaitingWork, !isFinished, !inbox.isEmpty {
      actions += process(inbox.removeFirst())
    }
    return actions
  }

  private mutating func process(_ item: Incoming) -> [Action] {
    guard case .frame(let frame) = item else { return finish(.closed) }
    if frame.kind == .syncRefuse {
      let reason = SyncMessage.decodeRefuse(frame.payload)
      if reason == .version { return finish(.refusedVersion(peerVersion: SyncMessage.refusingVersion(frame.payload))) }
      return finish(.refusedByPeer(reason))
    }
    do throws(SyncViolation) {
      switch state {
      case .awaitingHello: return try hello(frame)
      case .awaitingOps(let waiting): return try ops(frame, waiting)
      case .receiving(var receiving):
        let actions = try receivingFrame(frame, &receiving)
        state = .receiving(receiving)
        return actions
      case .sending(var sending):
        let actions = try sendingFrame(frame, &sending)
        state = .sending(sending)
        return actions
      case .notStarted, .finished:
        throw SyncViolation(.unexpectedFrame, "\(frame.kind) before the sync began")
      }
    } catch {
      return refuse(error)
    }
  }

  private mutating func hello(_ frame: Frame) throws(SyncViolation) -> [Action] {
    guard frame.kind == .syncHello else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-hello") }
    let hello = try SyncMessage.decodeHello(frame.payload)
    let entries = try NotebookEntries.check(hello.notebooks ?? [])
    if role == .asker {
      state = .awaitingOps(AwaitingOps(peerHello: (hello, entries)))
      return []
    }
    state = .awaitingHello(planning: true)
    return [.plan(hello, entries: entries, ops: nil)]
  }

  private mutating func ops(_ frame: Frame, _ waiting: AwaitingOps) throws(SyncViolation) -> [Action] {
    guard frame.kind == .syncOps else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-ops") }
    let ops = try SyncOps.decode(frame.payload)
    if role == .answerer {
      state = .awaitingOps(AwaitingOps(work: .takeOps))
      return [.takeOps(ops)]
    }
    guard let (hello, entries) = waiting.peerHello else {
      throw SyncViolation(.unexpectedFrame, "sync-ops before sync-hello")
    }
    state = .awaitingOps(AwaitingOps(work: .plan))
    return [.plan(hello, entries: entries, ops: ops)]
  }

  private func receivingFrame(_ frame: Frame, _ receiving: inout Receiving) throws(SyncViolation) -> [Action] {
    switch frame.kind {
    case .syncBatch:
      let batch = try SyncRecordBatch.decode(frame.payload)
      if let last = receiving.lastPosition, batch.position <= last {
        throw SyncViolation(.unexpectedFrame, "a sync-batch at position \(batch.position) after one at \(last)")
      }
      receiving.lastPosition = batch.position
      receiving.work = .apply(records: batch.records.count)
      return [.apply(batch)]
    case .syncDone:
      let done = try SyncMessage.decodeDone(frame.payload)
      guard let last = receiving.lastPosition, done.position == last else {
        throw SyncViolation(
          .unexpectedFrame,
          "a sync-done at position \(done.position) after "
            + (receiving.lastPosition.map { "the last sync-batch at \($0)" } ?? "no sync-batch"))
      }
      receiving.work = .finish(position: done.position)
      return [.finishReceiving(done)]
    default:
      throw SyncViolation(.unexpectedFrame, "\(frame.kind) during a sync")
    }
  }

  private mutating func sendingFrame(_ frame: Frame, _ sending: inout Sending) throws(SyncViolation) -> [Action] {
    guard frame.kind == .syncAck else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-ack") }
    let ack = try SyncMessage.decodeAck(frame.payload, sentUpTo: sending.sentUpTo)
    sending.acknowledged = max(sending.acknowledged, ack.position)
    if let outcome = ack.outcome {
      guard sending.doneSent, sending.inFlight == 0 else {
        throw SyncViolation(.unexpectedFrame, "a final sync-ack before every batch and sync-done were acknowledged")
      }
      summary.sent = outcome
      sending.work = .record
      return [.recordProgress(acknowledged: sending.acknowledged)]
    }
    guard sending.inFlight > 0 else { throw SyncViolation(.unexpectedFrame, "a sync-ack of no batch") }
    sending.inFlight -= 1
    if sending.doneSent { return [] }
    sending.work = .read
    return [.readBatch]
  }

  // MARK: - Store work answered

  /// The answer to the store work awaited; an answer to work that was not asked for is the
  /// driver's mistake, not the peer's, and is ignored.
  private mutating func answered(_ event: Event) -> [Action] {
    guard isAwaitingWork else { return [] }
    switch event {
    case .failed:
      if role == .answerer { return [.send(Self.refusal(.storage))] + finish(.storeFailed) }
      return finish(.storeFailed)
    case .refused(let violation):
      // The store found a rule broken by the plan, the ops, a batch or the guard at the end.
      switch state {
      case .receiving(let receiving):
        if case .apply = receiving.work { return refuse(violation) }
        if case .finish = receiving.work { return refuse(violation) }
        return []
      case .awaitingHello, .awaitingOps: return refuse(violation)
      default: return []
      }
    default: break
    }
    switch state {
    case .awaitingHello: return answeredPlan(event)
    case .awaitingOps(let waiting):
      if case .plan = waiting.work { return answeredPlan(event) }
      guard case .opsTaken = event else { return [] }
      return beginSending(receivedAll: false)
    case .receiving(var receiving):
      let actions = answered(event, &receiving)
      if case .receiving = state { state = .receiving(receiving) }
      return actions
    case .sending(var sending):
      let actions = answered(event, &sending)
      if case .sending = state { state = .sending(sending) }
      return actions
    case .notStarted, .finished:
      return []
    }
  }

  /// The answer to `.plan`: the answerer's hello goes out, or the asker's ops.
  private mutating func answeredPlan(_ event: Event) -> [Action] {
    switch event {
    case .unavailable(let reason) where role == .answerer:
      return [.send(Self.refusal(reason))] + finish(.unavailable(reason))
    case .planned(let reply, let ops):
      let sendOps = Action.send(Frame(.syncOps, payload: SyncOps.encode(ops)))
      if role == .answerer {
        guard let reply else { return [.send(Self.refusal(.storage))] + finish(.storeFailed) }
        state = .awaitingOps(AwaitingOps())
        return [.send(Self.frame(.syncHello, reply)), sendOps]
      }
      return [sendOps] + beginReceiving(sentAll: false)
    default:
      return []
    }
  }

  private mutating func answered(_ event: Event, _ receiving: inout Receiving) -> [Action] {
    switch (receiving.work, event) {
    case (.prepare, .prepared(let estimate)):
      receiving.estimate = max(0, estimate)
      receiving.work = nil
      return []
    case (.apply(let records), .applied(let position)):
      summary.receivedRecords += records
      receiving.work = nil
      return [
        .send(Self.frame(.syncAck, SyncMessage.Ack(position: position))),
        .progress(Progress(receiving: true, done: summary.receivedRecords, estimate: receiving.estimate)),
      ]
    case (.finish(let position), .received(let outcome)):
      summary.received = outcome
      receiving.work = nil
      let ack = Action.send(Self.frame(.syncAck, SyncMessage.Ack(position: position, outcome: outcome)))
      return [ack] + (receiving.sentAll ? finish(.completed(summary)) : beginSending(receivedAll: true))
    default:
      return []
    }
  }

  private mutating func answered(_ event: Event, _ sending: inout Sending) -> [Action] {
    switch (sending.work, event) {
    case (.prepare, .prepared(let estimate)):
      sending.estimate = max(0, estimate)
      sending.work = .read
      return [.readBatch]
    case (.read, .read(let batch)):
      sending.sentUpTo = max(sending.sentUpTo, batch.position)
      sending.batchSent = true
      sending.inFlight += 1
      summary.sentRecords += batch.records.count
      let sent: [Action] = [
        .send(Frame(.syncBatch, payload: SyncRecordBatch.encode(batch))),
        .progress(Progress(receiving: false, done: summary.sentRecords, estimate: sending.estimate)),
      ]
      guard sending.inFlight < window else {
        sending.work = nil
        return sent
      }
      return sent + [.readBatch]
    case (.read, .exhausted(let done)):
      sending.sentUpTo = max(sending.sentUpTo, done.position)
      sending.doneSent = true
      sending.work = nil
      // At least one batch goes before sync-done (a position-only one when nothing is
      // owed), so the receiver can tell that none is still on its way.
      var sent: [Action] = []
      if !sending.batchSent {
        sending.batchSent = true
        sending.inFlight += 1
        let positionOnly = SyncRecordBatch.Batch(position: done.position, records: [])
        sent.append(.send(Frame(.syncBatch, payload: SyncRecordBatch.encode(positionOnly))))
      }
      return sent + [.send(Self.frame(.syncDone, done))]
    case (.record, .recorded):
      sending.work = nil
      return sending.receivedAll ? finish(.completed(summary)) : beginReceiving(sentAll: true)
    default:
      return []
    }
  }

  private mutating func beginReceiving(sentAll: Bool) -> [Action] {
    state = .receiving(Receiving(sentAll: sentAll))
    return [.prepareReceiving]
  }

  private mutating func beginSending(receivedAll: Bool) -> [Action] {
    state = .sending(Sending(receivedAll: receivedAll))
    return [.prepareSending]
  }

  // MARK: - Endings

  /// Tells the peer why and ends.
  private mutating func refuse(_ violation: SyncViolation) -> [Action] {
    [.send(Self.refusal(violation.reason))] + finish(.refusedPeer(violation))
  }

  private mutating func finish(_ ending: Ending) -> [Action] {
    state = .finished
    inbox.removeAll()
    return [.finish(ending)]
  }

  /// Bytes that break the framing: refused as malformed, like any message that does not decode.
  public mutating func framingFailed(_ error: FrameError) -> [Action] {
    refuse(SyncViolation(.malformed, "a frame that breaks the protocol: \(error.description)"))
  }

  public static func received(_ frame: Frame?) -> Event { frame.map { .frame($0) } ?? .closed }

  public static func refusal(_ reason: SyncRefuseReason) -> Frame {
    frame(.syncRefuse, SyncMessage.Refuse(reason: reason))
  }

  private static func frame(_ kind: Frame.Kind, _ value: some Encodable) -> Frame {
    Frame(kind, payload: PeerMessage.encode(value))
  }
}

extension SyncMachine.Ending {
  /// How the answerer's connection ends after a sync that ended so: nil when it goes on
  /// (the sync completed, or the asker was told it cannot sync now), else the error that
  /// closes it.
  public var answererError: TransportError? {
    switch self {
    case .completed, .unavailable: nil
    case .refusedPeer(let violation):
      TransportError(.protocolViolation, "refused the peer's sync data: \(violation.reason.rawValue)")
    case .refusedVersion: TransportError(.protocolViolation, "the peer refused this node's sync version")
    case .refusedByPeer(let reason):
      TransportError(.protocolViolation, "the peer refused this node's sync data: \(reason?.rawValue ?? "unknown")")
    case .storeFailed: TransportError(.protocolViolation, "the sync stopped on a storage error")
    case .closed: TransportError(.closed, "closed during sync")
    }
  }
}
