import Foundation
import MemoCore
import MemoStore

/// One sync over a ready trusted connection (docs/PROTOCOL.md, "Sync"). Both directions run
/// in turn on the same connection: first the answerer sends what the asker lacks, then the
/// asker sends what the answerer lacks. Each direction streams bounded batches with at most
/// `window` unacknowledged, and the receiver commits each batch with its feed position, so
/// a broken sync resumes after the last acknowledged batch.
///
/// Blocking: it runs over a `FrameChannel` on the caller's thread (the daemon's connection
/// thread, or `BlockingIO` for a person's `sync`), never on Swift's cooperative pool.
public enum SyncSession {
  /// Unacknowledged batches in flight: enough to keep the link busy while the receiver
  /// commits, few enough that at most a few hundred KiB wait in buffers.
  public static let window = 4

  /// How big one `sync-batch` may grow (docs/PROTOCOL.md: 256 revisions or 512 KiB). Tests
  /// make batches tiny, so a few memos cross in many batches and a cut lands between them.
  public struct BatchLimits: Sendable {
    public var revisions: Int
    public var bytes: Int

    public init(revisions: Int = 256, bytes: Int = 512 * 1024) {
      self.revisions = revisions
      self.bytes = bytes
    }
  }

  /// What one sync did, from the asker's side.
  public struct Report: Sendable, Equatable {
    /// The direction into this replica.
    public var received = SyncMessage.Outcome()
    /// The direction into the peer, as the peer reported it.
    public var sent = SyncMessage.Outcome()
    /// Revisions this replica sent.
    public var sentRevisions = 0
    /// Notebooks the peer offered that this device declined, and why.
    public var declined: [NotebookID: NotebookOffers.DeclineReason] = [:]
  }

  /// Progress of one direction: revisions so far, and the sender's upper estimate.
  public struct Progress: Sendable {
    public var receiving: Bool
    public var done: Int
    public var estimate: Int
  }

  public typealias ProgressHandler = @Sendable (Progress) -> Void

  static func failure(_ peer: String, _ error: TransportError) -> MemoPeerError {
    MemoPeerError(
      .connection, "the sync with \(peer) broke off: \(error.description)",
      hint: "run `memo-peer sync` again; it resumes after the last batch stored")
  }

  /// The peer ended the sync with `sync-refuse` (nil: a reason this version does not know).
  struct PeerRefusal: Error {
    let reason: SyncMessage.RefuseReason?
  }

  static func refuse(_ reason: SyncMessage.RefuseReason) -> Frame {
    Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: reason)))
  }

  /// This side refused what `peerName` sent: which device sent what kind of bad data.
  static func badData(_ peerName: String, _ violation: SyncViolation) -> MemoPeerError {
    guard violation.reason != .version else { return refusal(peerName, .version) }
    return MemoPeerError(
      .protocolViolation,
      "\(peerName) sent \(violation.reason.badData); the sync stopped and nothing of that batch was stored",
      hint: "memo-peer on \(peerName) may be damaged or outdated: update it there (`memo-peer doctor` there); "
        + "this device's memos are unchanged",
      diagnostics: violation.detail)
  }

  /// The asker's side. `deleteGuard` nil applies deletes without asking (`--allow-deletes`).
  /// Only the notebooks this device shares with the peer move (`SyncPlan`).
  public static func ask(
    _ connection: any FrameChannel, peer: String, peerName: String, store: MemoStore, deleteGuard: MassDeleteGuard?,
    batch: BatchLimits = BatchLimits(), clock: @Sendable () -> Timestamp, progress: ProgressHandler? = nil
  ) throws -> Report {
    let hello = SyncMessage.Hello(
      replica: store.replicaID, knowledge: VersionVector(), cursor: nil, pending: nil,
      notebooks: try store.offers(for: peer))
    do {
      try connection.send(Frame(.syncHello, payload: PeerMessage.encode(hello)))
      let frame = try connection.receiveRequired("sync-hello")
      if frame.kind == .syncRefuse { throw PeerRefusal(reason: SyncMessage.decodeRefuse(frame.payload)) }
      guard frame.kind == .syncHello else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-hello") }
      let answer = try SyncMessage.decodeHello(frame.payload)
      let offers = try NotebookOffers.check(answer.notebooks ?? [])
      let plan = try store.plan(with: peer, offers: offers, restrictSending: true, now: clock())
      var report = Report()
      report.declined = plan.declined
      let sink = try SyncSink(
        store: store, peer: peer, peerReplica: answer.replica, deleteGuard: deleteGuard, plan: plan)
      // At most 2^53 (checked): exact as an Int.
      report.received = try receive(
        into: sink, over: connection, clock: clock, estimate: Int(answer.pending ?? 0), progress: progress)
      let source = try SyncSource(
        store: store, plan: plan.sending, maximumRevisions: batch.revisions, maximumBytes: batch.bytes)
      report.sent = try send(
        source, over: connection, peer: peer, plan: plan, clock: clock, estimate: try source.estimate(),
        progress: progress)
      report.sentRevisions = source.sent
      return report
    } catch let violation as SyncViolation {
      try? connection.send(refuse(violation.reason))
      throw badData(peerName, violation)
    } catch let refused as PeerRefusal {
      throw refusal(peerName, refused.reason)
    } catch let error as TransportError {
      throw failure(peerName, error)
    }
  }

  /// Why the peer refused, for a person: it will not sync now (locked, version, storage), or
  /// it refused the data this device sent.
  static func refusal(_ peerName: String, _ reason: SyncMessage.RefuseReason?) -> MemoPeerError {
    switch reason {
    case .locked:
      return MemoPeerError(
        .locked, "\(peerName) is locked: its memos cannot be synced until it is unlocked there",
        hint: "run `memo-peer unlock` on \(peerName), then sync again")
    case .version:
      return MemoPeerError(
        .connection,
        "\(peerName) runs a memo-peer that speaks another sync version (this one speaks \(SyncMessage.version): notebooks)",
        hint: "update memo-peer on \(peerName) (and on this device, if it is the older one)")
    case .storage:
      return MemoPeerError(
        .connection, "\(peerName) could not open its memo store for the sync",
        hint: "`memo-peer doctor` on \(peerName) tells what is wrong there")
    case nil:
      return MemoPeerError(
        .connection, "\(peerName) refused the sync for a reason this memo-peer does not know",
        hint: "update memo-peer on both devices")
    case let reason?:
      return MemoPeerError(
        .protocolViolation,
        "\(peerName) refused this device's sync data as \(reason.badData); nothing of it was stored there",
        hint: "`memo-peer doctor` here checks this device's store; update memo-peer on both devices")
    }
  }

  /// The answerer's side, from the asker's `sync-hello` on. The answerer cannot ask a
  /// person, so the mass-delete guard always applies here; held removals are reported. Data
  /// that breaks a rule is refused with `sync-refuse` (nothing of it is stored), logged with
  /// the device and the kind of data, and ends the channel; the daemon goes on serving.
  public static func answer(
    _ hello: Frame, over connection: any FrameChannel, peer: String, store: () throws -> MemoStore,
    batch: BatchLimits = BatchLimits(), clock: @Sendable () -> Timestamp, logger: Logger
  ) throws(TransportError) {
    let who = String(peer.prefix(8))
    do {
      try answerChecked(hello, over: connection, peer: peer, store: store, batch: batch, clock: clock, logger: logger)
    } catch let violation as SyncViolation {
      try? connection.send(refuse(violation.reason))
      logger.warning(
        "sync with \(who, privacy: .public): refused its data: \(violation.reason.rawValue, privacy: .public) (\(violation.detail, privacy: .public))"
      )
      throw TransportError(.protocolViolation, "refused the peer's sync data: \(violation.reason.rawValue)")
    } catch let refused as PeerRefusal {
      let reason = refused.reason?.rawValue ?? "unknown"
      logger.warning("sync with \(who, privacy: .public): it refused this node's data: \(reason, privacy: .public)")
      throw TransportError(.protocolViolation, "the peer refused this node's sync data: \(reason)")
    } catch let error as TransportError {
      throw error
    } catch {
      // A store failure ends the sync: the asker is told, and retries later; every committed
      // batch stays.
      logger.error(error, while: "syncing")
      try? connection.send(refuse(.storage))
      throw TransportError(.protocolViolation, "the sync stopped on a storage error")
    }
  }

  private static func answerChecked(
    _ hello: Frame, over connection: any FrameChannel, peer: String, store: () throws -> MemoStore,
    batch: BatchLimits, clock: @Sendable () -> Timestamp, logger: Logger
  ) throws {
    let asked = try SyncMessage.decodeHello(hello.payload)
    let opened: MemoStore
    do {
      opened = try store()
    } catch {
      logger.error(error, while: "opening the store for a sync")
      let reason: SyncMessage.RefuseReason = (error as? MemoPeerError)?.code == .locked ? .locked : .storage
      try connection.send(refuse(reason))
      return
    }
    guard opened.canReadContent else {
      try connection.send(refuse(.locked))
      return
    }
    let offers = try NotebookOffers.check(asked.notebooks ?? [])
    let plan = try opened.plan(with: peer, offers: offers, restrictSending: false, now: clock())
    let source = try SyncSource(
      store: opened, plan: plan.sending, maximumRevisions: batch.revisions, maximumBytes: batch.bytes)
    try connection.send(
      Frame(
        .syncHello,
        payload: PeerMessage.encode(
          SyncMessage.Hello(
            replica: opened.replicaID, knowledge: VersionVector(), cursor: nil,
            pending: UInt64(try source.estimate()), notebooks: try opened.offers(for: peer)))))
    let sent = try send(source, over: connection, peer: peer, plan: plan, clock: clock, estimate: 0, progress: nil)
    let sink = try SyncSink(
      store: opened, peer: peer, peerReplica: asked.replica, deleteGuard: MassDeleteGuard(), plan: plan)
    let received = try receive(into: sink, over: connection, clock: clock, estimate: 0, progress: nil)
    logger.info(
      "sync with \(String(peer.prefix(8)), privacy: .public): sent \(source.sent, privacy: .public), applied \(received.applied, privacy: .public), conflicts \(received.conflicts, privacy: .public), held deletes \(received.heldDeletes, privacy: .public); peer applied \(sent.applied, privacy: .public)"
    )
  }

  // MARK: - One direction

  /// Streams the source's batches, `window` at a time, then `sync-done`; returns the
  /// receiver's outcome from its last acknowledgement.
  static func send(
    _ source: SyncSource, over connection: any FrameChannel, peer: String, plan: SyncPlan,
    clock: @Sendable () -> Timestamp, estimate: Int, progress: ProgressHandler?
  ) throws -> SyncMessage.Outcome {
    var inFlight = 0
    var acked: UInt64 = 0
    var sentUpTo = source.position
    func readAck() throws -> SyncMessage.Ack {
      guard let frame = try connection.receive() else { throw TransportError(.closed, "closed during sync") }
      if frame.kind == .syncRefuse { throw PeerRefusal(reason: SyncMessage.decodeRefuse(frame.payload)) }
      guard frame.kind == .syncAck else { throw SyncViolation(.unexpectedFrame, "\(frame.kind) for sync-ack") }
      let ack = try SyncMessage.decodeAck(frame.payload, sentUpTo: sentUpTo)
      acked = max(acked, ack.position)
      return ack
    }
    while let batch = try source.nextBatch() {
      sentUpTo = batch.position
      try connection.send(Frame(.syncBatch, payload: SyncRecordBatch.encode(batch)))
      inFlight += 1
      progress?(Progress(receiving: false, done: source.sent, estimate: estimate))
      if inFlight >= window {
        _ = try readAck()
        inFlight -= 1
      }
    }
    sentUpTo = max(sentUpTo, source.position)
    try connection.send(
      Frame(
        .syncDone,
        payload: PeerMessage.encode(
          SyncMessage.Done(position: source.position, knowledge: VersionVector(), notebooks: source.knowledge))))
    while true {
      let ack = try readAck()
      if let outcome = ack.outcome {
        try source.store.recordPeerProgress(
          peer, acked: acked, knowledge: plan.sending.mapValues(\.knowledge), now: clock())
        return outcome
      }
    }
  }

  /// Applies batches as they come, acknowledging each after its commit, until `sync-done`.
  static func receive(
    into sink: SyncSink, over connection: any FrameChannel, clock: @Sendable () -> Timestamp, estimate: Int,
    progress: ProgressHandler?
  ) throws -> SyncMessage.Outcome {
    var received = 0
    while let frame = try connection.receive() {
      switch frame.kind {
      case .syncBatch:
        let batch = try SyncRecordBatch.decode(frame.payload)
        let position = try sink.apply(batch, now: clock())
        received += batch.records.count
        progress?(Progress(receiving: true, done: received, estimate: estimate))
        try connection.send(Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: position))))
      case .syncDone:
        let done = try SyncMessage.decodeDone(frame.payload)
        let outcome = try sink.finish(done, now: clock())
        try connection.send(
          Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: done.position, outcome: outcome))))
        return outcome
      case .syncRefuse:
        throw PeerRefusal(reason: SyncMessage.decodeRefuse(frame.payload))
      default:
        throw SyncViolation(.unexpectedFrame, "\(frame.kind) during a sync")
      }
    }
    throw TransportError(.closed, "closed during sync")
  }
}
