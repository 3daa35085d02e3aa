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
public struct SyncMachine: Sendable {
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

  private enum Phase: Sendable, Equatable {
    case notStarted
    /// Asker: its hello is out; answerer: waiting for the asker's hello.
    case awaitingHello
    /// Hellos exchanged; waiting for the peer's `sync-ops` (the answerer's come right after
    /// its hello, the asker's after it took them).
    case awaitingOps
    case receiving
    case sending
    case finished
  }

  /// The store work awaited: frames that arrive meanwhile wait in `inbox`.
  private enum Awaiting: Sendable, Equatable {
    case plan, takeOps, prepare
    case apply(records: Int)
    case finish(position: UInt64)
    case read, record
  }

  private enum Incoming: Sendable, Equatable {
    case frame(Frame)
    case closed
  }

  public let role: Role
  private let window: Int
  private var phase = Phase.notStarted
  private var awaiting: Awaiting?
  private var inbox: [Incoming] = []
  private var decoder = FrameDecoder(maximumPayload: Frame.defaultMaximumPayload)
  /// The asker: the answerer's hello, kept until its ops arrive.
  private var peerHello: (hello: SyncMessage.Hello, entries: [CheckedEntry])?
  /// Whether this side's receiving direction is behind it (then sending, or the end).
  private var receivedAll = false
  private var sentAll = false
  /// Receiving: the position of the last batch in, so that batches come in the order they
  /// were read and `sync-done` comes after the last of them: its knowledge claims every
  /// record sent, which is true only once all of them are here.
  private var receivedPosition: UInt64?
  private var summary = Summary()
  private var estimate = 0
  // Sending: batches out without an acknowledgement, the highest position sent and acked,
  // whether `sync-done` is out.
  private var inFlight = 0
  private var sentUpTo: UInt64 = 0
  private var acknowledged: UInt64 = 0
  private var doneSent = false
  private var batchSent = false

  public init(role: Role, window: Int = SyncMachine.window) {
    self.role = role
    self.window = max(1, window)
  }

  /// Whether the session is over (after `.finish`).
  public var isFinished: Bool { phase == .finished }

  /// Whether the machine waits for the peer (not for store work): the driver reads a frame.
  public var needsFrame: Bool { !isFinished && awaiting == nil }

  /// The asker's first actions: its `sync-hello`.
  public mutating func ask(_ hello: SyncMessage.Hello) -> [Action] {
    guard role == .asker, phase == .notStarted else { return [] }
    phase = .awaitingHello
    return [.send(Self.frame(.syncHello, hello))]
  }

  /// Bytes as they came off the connection, in pieces of any size.
  public mutating func receive(bytes: some Sequence<UInt8>) -> [Action] {
    guard !isFinished else { return [] }
    let frames: [Frame]
    do { frames = try decoder.push(bytes) } catch {
      return refuse(SyncViolation(.malformed, "a frame that breaks the protocol: \(error.description)"))
    }
    var actions: [Action] = []
    for frame in frames where !isFinished { actions += handle(.frame(frame)) }
    return actions
  }

  public mutating func handle(_ event: Event) -> [Action] {
    guard !isFinished else { return [] }
    if phase == .notStarted, role == .answerer { phase = .awaitingHello }
    switch event {
    case .frame(let frame): return incoming(.frame(frame))
    case .closed: return incoming(.closed)
    default: return answered(event) + drain()
    }
  }

  // MARK: - Frames

  private mutating func incoming(_ item: Incoming) -> [Action] {
    guard awaiting == nil, inbox.isEmpty else {
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
    while awaiting == nil, !isFinished, !inbox.isEmpty {
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
      switch phase {
      case .awaitingHello: return try hello(frame)
      case .awaitingOps: return try ops(frame)
      case .receiving: return try receivingFrame(frame)
      case .sending: return try sendingFrame(frame)
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
      peerHello = (hello, entries)
      phase = .awaitingOps
      return []
    }
    awaiting = .plan
    return [.plan(hello, entries: entries, ops: nil)]
  }

  private mutating func ops(_ frame: Frame) throws(SyncViolation) -> [Action] {
    guard frame.kind == .syncOps else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-ops") }
    let ops = try SyncOps.decode(frame.payload)
    if role == .answerer {
      awaiting = .takeOps
      return [.takeOps(ops)]
    }
    guard let (hello, entries) = peerHello else { throw SyncViolation(.unexpectedFrame, "sync-ops before sync-hello") }
    peerHello = nil
    awaiting = .plan
    return [.plan(hello, entries: entries, ops: ops)]
  }

  private mutating func receivingFrame(_ frame: Frame) throws(SyncViolation) -> [Action] {
    switch frame.kind {
    case .syncBatch:
      let batch = try SyncRecordBatch.decode(frame.payload)
      if let last = receivedPosition, batch.position <= last {
        throw SyncViolation(.unexpectedFrame, "a sync-batch at position \(batch.position) after one at \(last)")
      }
      receivedPosition = batch.position
      awaiting = .apply(records: batch.records.count)
      return [.apply(batch)]
    case .syncDone:
      let done = try SyncMessage.decodeDone(frame.payload)
      guard let last = receivedPosition, done.position == last else {
        throw SyncViolation(
          .unexpectedFrame,
          "a sync-done at position \(done.position) after "
            + (receivedPosition.map { "the last sync-batch at \($0)" } ?? "no sync-batch"))
      }
      awaiting = .finish(position: done.position)
      return [.finishReceiving(done)]
    default:
      throw SyncViolation(.unexpectedFrame, "\(frame.kind) during a sync")
    }
  }

  private mutating func sendingFrame(_ frame: Frame) throws(SyncViolation) -> [Action] {
    guard frame.kind == .syncAck else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-ack") }
    let ack = try SyncMessage.decodeAck(frame.payload, sentUpTo: sentUpTo)
    acknowledged = max(acknowledged, ack.position)
    if let outcome = ack.outcome {
      guard doneSent, inFlight == 0 else {
        throw SyncViolation(.unexpectedFrame, "a final sync-ack before every batch and sync-done were acknowledged")
      }
      summary.sent = outcome
      awaiting = .record
      return [.recordProgress(acknowledged: acknowledged)]
    }
    guard inFlight > 0 else { throw SyncViolation(.unexpectedFrame, "a sync-ack of no batch") }
    inFlight -= 1
    return doneSent ? [] : readNext()
  }

  // MARK: - Store work answered

  private mutating func answered(_ event: Event) -> [Action] {
    guard let work = awaiting else { return [] }
    awaiting = nil
    switch (work, event) {
    case (_, .failed):
      if role == .answerer { return [.send(Self.refusal(.storage))] + finish(.storeFailed) }
      return finish(.storeFailed)
    case (.plan, .refused(let violation)), (.takeOps, .refused(let violation)), (.apply, .refused(let violation)),
      (.finish, .refused(let violation)):
      return refuse(violation)
    case (.plan, .unavailable(let reason)) where role == .answerer:
      return [.send(Self.refusal(reason))] + finish(.unavailable(reason))
    case (.plan, .planned(let reply, let ops)):
      let sendOps = Action.send(Frame(.syncOps, payload: SyncOps.encode(ops)))
      if role == .answerer {
        guard let reply else { return [.send(Self.refusal(.storage))] + finish(.storeFailed) }
        phase = .awaitingOps
        return [.send(Self.frame(.syncHello, reply)), sendOps]
      }
      return [sendOps] + beginReceiving()
    case (.takeOps, .opsTaken):
      return beginSending()
    case (.prepare, .prepared(let estimate)):
      self.estimate = max(0, estimate)
      return phase == .sending ? readNext() : []
    case (.apply(let records), .applied(let position)):
      summary.receivedRecords += records
      return [
        .send(Self.frame(.syncAck, SyncMessage.Ack(position: position))),
        .progress(Progress(receiving: true, done: summary.receivedRecords, estimate: estimate)),
      ]
    case (.finish(let position), .received(let outcome)):
      summary.received = outcome
      receivedAll = true
      let ack = Action.send(Self.frame(.syncAck, SyncMessage.Ack(position: position, outcome: outcome)))
      return [ack] + (sentAll ? finish(.completed(summary)) : beginSending())
    case (.read, .read(let batch)):
      sentUpTo = max(sentUpTo, batch.position)
      batchSent = true
      inFlight += 1
      summary.sentRecords += batch.records.count
      let sent: [Action] = [
        .send(Frame(.syncBatch, payload: SyncRecordBatch.encode(batch))),
        .progress(Progress(receiving: false, done: summary.sentRecords, estimate: estimate)),
      ]
      return sent + (inFlight < window ? readNext() : [])
    case (.read, .exhausted(let done)):
      sentUpTo = max(sentUpTo, done.position)
      doneSent = true
      // At least one batch goes before sync-done (a position-only one when nothing is
      // owed), so the receiver can tell that none is still on its way.
      var sent: [Action] = []
      if !batchSent {
        batchSent = true
        inFlight += 1
        let positionOnly = SyncRecordBatch.Batch(position: done.position, records: [])
        sent.append(.send(Frame(.syncBatch, payload: SyncRecordBatch.encode(positionOnly))))
      }
      return sent + [.send(Self.frame(.syncDone, done))]
    case (.record, .recorded):
      sentAll = true
      return receivedAll ? finish(.completed(summary)) : beginReceiving()
    default:
      // An answer to work that was not asked for: the driver's mistake, not the peer's.
      awaiting = work
      return []
    }
  }

  private mutating func beginReceiving() -> [Action] {
    phase = .receiving
    awaiting = .prepare
    return [.prepareReceiving]
  }

  private mutating func beginSending() -> [Action] {
    phase = .sending
    awaiting = .prepare
    return [.prepareSending]
  }

  private mutating func readNext() -> [Action] {
    awaiting = .read
    return [.readBatch]
  }

  // MARK: - Endings

  /// Tells the peer why and ends.
  private mutating func refuse(_ violation: SyncViolation) -> [Action] {
    [.send(Self.refusal(violation.reason))] + finish(.refusedPeer(violation))
  }

  private mutating func finish(_ ending: Ending) -> [Action] {
    phase = .finished
    awaiting = nil
    inbox.removeAll()
    return [.finish(ending)]
  }

  public static func refusal(_ reason: SyncRefuseReason) -> Frame {
    frame(.syncRefuse, SyncMessage.Refuse(reason: reason))
  }

  private static func frame(_ kind: Frame.Kind, _ value: some Encodable) -> Frame {
    Frame(kind, payload: PeerMessage.encode(value))
  }
}
