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
      if frame.kind == .syncRefuse {
        throw refusal(peerName, PeerMessage.decode(SyncMessage.Refuse.self, from: frame.payload)?.reason)
      }
      guard frame.kind == .syncHello, let answer = PeerMessage.decode(SyncMessage.Hello.self, from: frame.payload)
      else { throw TransportError(.protocolViolation, "expected sync-hello, got \(frame.kind)") }
      guard answer.version == SyncMessage.version else { throw olderPeer(peerName, version: answer.version) }
      guard let offers = NotebookOffers.check(answer.notebooks ?? []) else {
        throw TransportError(.protocolViolation, "a sync-hello whose notebooks are malformed")
      }
      let plan = try store.plan(with: peer, offers: offers, restrictSending: true, now: clock())
      var report = Report()
      report.declined = plan.declined
      let sink = SyncSink(
        store: store, peer: peer, peerReplica: answer.replica, deleteGuard: deleteGuard, plan: plan)
      report.received = try receive(
        into: sink, over: connection, clock: clock, estimate: Int(answer.pending ?? 0), progress: progress)
      let source = try SyncSource(
        store: store, plan: plan.sending, maximumRevisions: batch.revisions, maximumBytes: batch.bytes)
      report.sent = try send(
        source, over: connection, peer: peer, plan: plan, clock: clock, estimate: try source.estimate(),
        progress: progress)
      report.sentRevisions = source.sent
      return report
    } catch let error as TransportError {
      throw failure(peerName, error)
    }
  }

  /// A peer that answered with a hello of another version (it refuses ours with `version`).
  static func olderPeer(_ peerName: String, version: Int) -> MemoPeerError {
    MemoPeerError(
      .connection,
      "\(peerName) speaks sync version \(version); this device speaks \(SyncMessage.version) (notebooks)",
      hint: "update memo-peer on \(peerName)")
  }

  /// Why the answerer refused, for a person.
  static func refusal(_ peerName: String, _ reason: String?) -> MemoPeerError {
    switch reason.flatMap(SyncMessage.RefuseReason.init(rawValue:)) {
    case .locked:
      return MemoPeerError(
        .locked, "\(peerName) is locked: its memos cannot be synced until it is unlocked there",
        hint: "run `memo-peer unlock` on \(peerName), then sync again")
    case .version:
      return MemoPeerError(
        .connection,
        "\(peerName) runs a memo-peer that speaks another sync version (this one speaks \(SyncMessage.version): notebooks)",
        hint: "update memo-peer on \(peerName) (and on this device, if it is the older one)")
    default:
      return MemoPeerError(
        .connection, "\(peerName) could not open its memo store for the sync",
        hint: "`memo-peer doctor` on \(peerName) tells what is wrong there")
    }
  }

  /// The answerer's side, from the asker's `sync-hello` on. The answerer cannot ask a
  /// person, so the mass-delete guard always applies here; held deletes are reported.
  public static func answer(
    _ hello: Frame, over connection: any FrameChannel, peer: String, store: () throws -> MemoStore,
    batch: BatchLimits = BatchLimits(), clock: @Sendable () -> Timestamp, logger: Logger
  ) throws(TransportError) {
    guard let asked = PeerMessage.decode(SyncMessage.Hello.self, from: hello.payload) else {
      throw TransportError(.protocolViolation, "malformed sync-hello")
    }
    guard asked.version == SyncMessage.version else {
      logger.info(
        "refused a sync of version \(asked.version, privacy: .public) from \(String(peer.prefix(8)), privacy: .public): the other device must update memo-peer"
      )
      try connection.send(Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: .version))))
      return
    }
    guard let offers = NotebookOffers.check(asked.notebooks ?? []) else {
      throw TransportError(.protocolViolation, "a sync-hello whose notebooks are malformed")
    }
    let opened: MemoStore
    do {
      opened = try store()
    } catch {
      logger.error(error, while: "opening the store for a sync")
      let reason: SyncMessage.RefuseReason = (error as? MemoPeerError)?.code == .locked ? .locked : .storage
      try connection.send(Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: reason))))
      return
    }
    guard opened.canReadContent else {
      try connection.send(Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: .locked))))
      return
    }
    let source: SyncSource
    let plan: SyncPlan
    do {
      plan = try opened.plan(with: peer, offers: offers, restrictSending: false, now: clock())
      source = try SyncSource(
        store: opened, plan: plan.sending, maximumRevisions: batch.revisions, maximumBytes: batch.bytes)
      try connection.send(
        Frame(
          .syncHello,
          payload: PeerMessage.encode(
            SyncMessage.Hello(
              replica: opened.replicaID, knowledge: VersionVector(), cursor: nil,
              pending: UInt64(try source.estimate()), notebooks: try opened.offers(for: peer)))))
    } catch let error as TransportError {
      throw error
    } catch {
      logger.error(error, while: "starting a sync")
      try connection.send(Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: .storage))))
      return
    }
    let sent: SyncMessage.Outcome
    let received: SyncMessage.Outcome
    do {
      sent = try send(source, over: connection, peer: peer, plan: plan, clock: clock, estimate: 0, progress: nil)
      let sink = SyncSink(
        store: opened, peer: peer, peerReplica: asked.replica, deleteGuard: MassDeleteGuard(), plan: plan)
      received = try receive(into: sink, over: connection, clock: clock, estimate: 0, progress: nil)
    } catch let error as TransportError {
      throw error
    } catch {
      // A store failure (or a revision this store refuses) ends the sync: the asker sees the
      // connection close and retries later; every committed batch stays.
      logger.error(error, while: "syncing")
      throw TransportError(.protocolViolation, "the sync stopped on a storage error")
    }
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
    func readAck() throws(TransportError) -> SyncMessage.Ack {
      guard let frame = try connection.receive() else { throw TransportError(.closed, "closed during sync") }
      guard frame.kind == .syncAck, let ack = PeerMessage.decode(SyncMessage.Ack.self, from: frame.payload) else {
        throw TransportError(.protocolViolation, "expected sync-ack, got \(frame.kind)")
      }
      acked = max(acked, ack.position)
      return ack
    }
    while let batch = try source.nextBatch() {
      try connection.send(Frame(.syncBatch, payload: SyncRecordBatch.encode(batch)))
      inFlight += 1
      progress?(Progress(receiving: false, done: source.sent, estimate: estimate))
      if inFlight >= window {
        _ = try readAck()
        inFlight -= 1
      }
    }
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
        guard let batch = SyncRecordBatch.decode(frame.payload) else {
          throw TransportError(.protocolViolation, "malformed sync-batch")
        }
        let position = try sink.apply(batch, now: clock())
        received += batch.records.count
        progress?(Progress(receiving: true, done: received, estimate: estimate))
        try connection.send(Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: position))))
      case .syncDone:
        guard let done = PeerMessage.decode(SyncMessage.Done.self, from: frame.payload) else {
          throw TransportError(.protocolViolation, "malformed sync-done")
        }
        let outcome = try sink.finish(done, now: clock())
        try connection.send(
          Frame(.syncAck, payload: PeerMessage.encode(SyncMessage.Ack(position: done.position, outcome: outcome))))
        return outcome
      default:
        throw TransportError(.protocolViolation, "unexpected \(frame.kind) frame during sync")
      }
    }
    throw TransportError(.closed, "closed during sync")
  }
}
