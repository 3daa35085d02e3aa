import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoVault

/// One sync over a ready trusted connection (docs/PROTOCOL.md, "Sync"): the driver of a
/// `SyncMachine`. The machine decides every frame and every refusal; this only carries
/// frames between it and the `FrameChannel` and does the store work it asks for
/// (`SyncStoreWork`), then turns the machine's ending into what a person or the daemon's
/// log is told.
///
/// Blocking: it runs over a `FrameChannel` on the caller's thread (the daemon's connection
/// thread, or `BlockingIO` for a person's `sync`), never on Swift's cooperative pool.
public enum SyncSession {
  /// Unacknowledged batches in flight (`SyncMachine.window`).
  public static let window = SyncMachine.window

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
    /// What taking the peer's membership ops did: invitations new in this session (waiting
    /// for a person: `notebook invitations`), ops refused and kept aside.
    public var ops = OpsIntake()
    /// Revocations the peer passed on that this device applied.
    public var revoked: [RevocationNote] = []
  }

  public typealias Progress = SyncMachine.Progress
  public typealias ProgressHandler = @Sendable (Progress) -> Void

  /// The asker's side. `deleteGuard` nil applies deletes without asking (`--allow-deletes`).
  /// Only the notebooks this device shares with the peer move (`SyncPlan`). `quiet`: the
  /// longest the peer may be silent before the sync is given up (nil: the connection's idle
  /// limit), so that a live link notices a peer that vanished in the middle of a push as
  /// soon as its keepalive would. `keys`: the node's keys (those `store` was opened with),
  /// for the trust store and the discovery key that revocations in the peer's hello change.
  public static func ask(
    _ connection: any FrameChannel, peer: DeviceID, peerName: String, store: MemoStore, keys: DeviceKeys,
    deleteGuard: MassDeleteGuard?, batch: BatchLimits = BatchLimits(), stillTrusted: PeerTrustCheck,
    clock: @escaping @Sendable () -> Timestamp, progress: ProgressHandler? = nil, quiet: Double? = nil
  ) throws -> Report {
    let work = SyncStoreWork(
      .asker(store, deleteGuard: deleteGuard), peer: peer, keys: keys, batch: batch, clock: clock, logger: .disabled)
    let (entries, keys) = try store.helloNotebooks(for: peer, now: clock())
    work.listedHeld = SyncStoreWork.held(entries)
    let hello = SyncMessage.Hello(
      replica: store.replicaID, knowledge: VersionVector(), cursor: nil, pending: nil, notebooks: entries, keys: keys,
      revocations: try store.revocationsToSend(), purges: try store.purgesToSend(for: peer))
    var machine = SyncMachine(role: .asker)
    let ending: SyncMachine.Ending
    do throws(TransportError) {
      ending = try drive(
        &machine, machine.ask(hello), over: connection, work: work, open: { store }, stillTrusted: stillTrusted,
        progress: progress, quiet: quiet)
    } catch  where error.kind == .untrustedPeer {
      throw removedDuringSync(peerName)
    } catch {
      throw failure(peerName, error)
    }
    switch ending {
    case .completed(let summary):
      return Report(
        received: summary.received, sent: summary.sent, sentRevisions: summary.sentRecords,
        ops: work.plan?.ops ?? OpsIntake(), revoked: work.taken.revoked)
    case .refusedPeer(let violation):
      // Kept for `peers`; a store that cannot take it does not change what the person is told.
      try? store.recordRefusal(of: peer, violation, now: clock())
      throw badData(peerName, violation)
    case .refusedByPeer(let reason): throw refusal(peerName, reason)
    case .refusedVersion(let version): throw versionRefusal(peerName, peerVersion: version)
    case .storeFailed: throw work.storeError ?? MemoPeerError(.connection, "the sync failed on this device's store")
    case .closed, .unavailable: throw failure(peerName, TransportError(.closed, "closed during sync"))
    }
  }

  /// The answerer's side, from the asker's `sync-hello` on. The answerer cannot ask a
  /// person, so the mass-delete guard always applies here; held removals are reported. Data
  /// that breaks a rule is refused with `sync-refuse` (nothing of it is stored), logged with
  /// the device and the kind of data, and ends the channel; the daemon goes on serving.
  /// The daemon's sessions run this same sync as a sub-machine of their `SessionMachine`
  /// (`PeerSession.serve`, with `step` and `answered`); this drives one on its own (the
  /// in-memory sync of the tests). `keys`: the node's keys, as for `ask`.
  public static func answer(
    _ hello: Frame, over connection: any FrameChannel, peer: DeviceID, store: () throws -> MemoStore,
    keys: DeviceKeys, batch: BatchLimits = BatchLimits(), stillTrusted: PeerTrustCheck,
    clock: @escaping @Sendable () -> Timestamp, logger: Logger
  ) throws(TransportError) {
    // The store is opened only inside this call (for this session), never kept by it: `store`
    // is handed down to each store action (`drive`, `SyncStoreWork.perform`), not kept in the
    // store work. Keeping it would take `withoutActuallyEscaping`, and Swift 6.3 compiles that
    // one's run-time check, even optimized, with the length of this file's absolute path (as
    // the compiler was given it, not as -file-prefix-map rewrites it) as an immediate in the
    // code: the .deb's binary then depended on the build folder (scripts/deb-repro.sh).
    let work = SyncStoreWork(.answerer, peer: peer, keys: keys, batch: batch, clock: clock, logger: logger)
    var machine = SyncMachine(role: .answerer)
    let ending = try drive(
      &machine, machine.handle(.frame(hello)), over: connection, work: work, open: store, stillTrusted: stillTrusted,
      progress: nil)
    answered(ending, peer: peer, work: work, store: store, clock: clock, logger: logger)
    if let error = ending.answererError { throw error }
  }

  /// What the answerer's log (and `peers`) keeps of a sync that ended so: the same whether
  /// the session machine ran the sync (`PeerSession.serve`) or this driver did.
  static func answered(
    _ ending: SyncMachine.Ending, peer: DeviceID, work: SyncStoreWork, store: () throws -> MemoStore,
    clock: @Sendable () -> Timestamp, logger: Logger
  ) {
    let who = String(peer.compact.prefix(8))
    switch ending {
    case .completed(let summary):
      logger.info(
        "sync with \(who, privacy: .public): sent \(summary.sentRecords, privacy: .public), applied \(summary.received.applied, privacy: .public), conflicts \(summary.received.conflicts, privacy: .public), held deletes \(summary.received.heldDeletes, privacy: .public); peer applied \(summary.sent.applied, privacy: .public)"
      )
      if summary.received.quarantined > 0 {
        // A forgery (or a record whose key is missing) kept aside, the rest stored: the
        // device that passed it on is named, whoever made it.
        logger.warning(
          "sync with \(who, privacy: .public): kept aside \(summary.received.quarantined, privacy: .public) records it passed on that did not verify (quarantined)"
        )
      }
    case .unavailable:
      // The asker was told (locked, storage); the channel goes on until it leaves.
      return
    case .refusedPeer(let violation):
      logger.warning(
        "sync with \(who, privacy: .public): refused its data: \(violation.reason.rawValue, privacy: .public) (\(violation.detail, privacy: .public))"
      )
      do { try store().recordRefusal(of: peer, violation, now: clock()) } catch {
        logger.error(error, while: "recording the refusal for `peers`")
      }
    case .refusedVersion(let version):
      logger.warning(
        "sync with \(who, privacy: .public): it speaks sync version \(version.map(String.init) ?? "1 or 2", privacy: .public), this node \(SyncMessage.version, privacy: .public)"
      )
    case .refusedByPeer(let reason):
      let code = reason?.rawValue ?? "unknown"
      logger.warning("sync with \(who, privacy: .public): it refused this node's data: \(code, privacy: .public)")
    case .storeFailed:
      // A store failure ends the sync: the asker was told, and retries later; every
      // committed batch stays.
      if let storeError = work.storeError { logger.error(storeError, while: "syncing") }
    case .closed:
      return
    }
  }

  /// Carries the machine's frames and store work until it ends. A refusal is sent best
  /// effort (the peer may be gone); any other failed send or receive ends the sync with
  /// that transport error. `open` gives the answerer's store work its store; `quiet`
  /// bounds each wait for a frame (nil: the connection's idle limit). Every frame of the
  /// peer is applied only while `stillTrusted` trusts it: a peer removed from the trust
  /// store meanwhile gets `sync-refuse {"reason": "untrusted"}` and the sync ends with
  /// `untrustedPeer`, the batches stored before it kept, nothing of it stored after.
  static func drive(
    _ machine: inout SyncMachine, _ first: [SyncMachine.Action], over channel: any FrameChannel,
    work: SyncStoreWork, open: () throws -> MemoStore, stillTrusted: PeerTrustCheck, progress: ProgressHandler?,
    quiet: Double? = nil
  ) throws(TransportError) -> SyncMachine.Ending {
    try MachineDriver.run(
      &machine, from: first,
      perform: { action throws(TransportError) in
        try step(action, over: channel, work: work, open: open, progress: progress)
      },
      receive: { _ throws(TransportError) -> Frame? in
        let frame = try channel.receive(before: quiet.map { .after(seconds: $0) })
        if frame != nil, !stillTrusted.trusts(work.peer) {
          try? channel.send(SyncMachine.refusal(.untrusted))
          throw PeerTrustCheck.removed(work.peer)
        }
        return frame
      })
  }

  /// One action of a sync machine: a frame sent (a refusal best effort: the peer may be
  /// gone), progress told, store work done and its answer handed back.
  static func step(
    _ action: SyncMachine.Action, over channel: any FrameChannel, work: SyncStoreWork, open: () throws -> MemoStore,
    progress: ProgressHandler?
  ) throws(TransportError) -> MachineDriver<SyncMachine>.Step<SyncMachine.Ending> {
    switch action {
    case .send(let frame) where frame.kind == .syncRefuse: try? channel.send(frame)
    case .send(let frame): try channel.send(frame)
    case .progress(let step): progress?(step)
    case .finish(let ending): return .finish(ending)
    default: return .answer(work.perform(action, open: open))
    }
    return .done
  }

  // MARK: - What a person is told

  static func failure(_ peer: String, _ error: TransportError) -> MemoPeerError {
    MemoPeerError(
      .connection, "the sync with \(peer) broke off: \(error.description)",
      remedy: .syncAgain)
  }

  /// `peerName` was removed from this device's trust store while the sync ran.
  static func removedDuringSync(_ peerName: String) -> MemoPeerError {
    MemoPeerError(
      .untrustedPeer,
      "\(peerName) was removed from this device's trust store during the sync; nothing it sent after that was stored",
      remedy: .trustAgain)
  }

  /// This side refused what `peerName` sent: which device sent what kind of bad data.
  static func badData(_ peerName: String, _ violation: SyncViolation) -> MemoPeerError {
    guard violation.reason != .version else { return versionRefusal(peerName, peerVersion: violation.peerVersion) }
    return MemoPeerError(
      .protocolViolation,
      "\(peerName) sent \(violation.reason.badData); the sync stopped and nothing of that batch was stored",
      hint: "memo-peer on \(peerName) may be damaged or outdated: update it there; this device's memos are unchanged",
      remedy: .runDoctor(device: peerName),
      diagnostics: violation.detail)
  }

  /// Two devices that speak different sync versions, named both where the peer said its
  /// own (peers from before version 3 do not: theirs is 1 or 2).
  static func versionRefusal(_ peerName: String, peerVersion: Int?) -> MemoPeerError {
    let theirs = peerVersion.map { "sync version \($0)" } ?? "an older sync version (1 or 2)"
    let newer = (peerVersion ?? 0) > SyncMessage.version
    return MemoPeerError(
      .connection,
      "\(peerName) runs a memo-peer that speaks \(theirs); this one speaks sync version \(SyncMessage.version) "
        + "(signed membership)",
      hint: newer ? "update memo-peer on this device" : "update memo-peer on \(peerName)")
  }

  /// Why the peer refused, for a person: it will not sync now (locked, version, storage), or
  /// it refused the data this device sent.
  static func refusal(_ peerName: String, _ reason: SyncMessage.RefuseReason?) -> MemoPeerError {
    switch reason {
    case .locked:
      return MemoPeerError(
        .locked, "\(peerName) is locked: its memos cannot be synced until it is unlocked there",
        remedy: .unlock(device: peerName))
    case .version:
      return versionRefusal(peerName, peerVersion: nil)
    case .untrusted:
      return MemoPeerError(
        .untrustedPeer, "\(peerName) no longer trusts this device: it was removed there during the sync",
        remedy: .pairAgain(device: nil))
    case .storage:
      return MemoPeerError(
        .connection, "\(peerName) could not open its memo store for the sync",
        remedy: .runDoctor(device: peerName))
    case nil:
      return MemoPeerError(
        .connection, "\(peerName) refused the sync for a reason this memo-peer does not know",
        hint: "update memo-peer on both devices")
    case let reason?:
      return MemoPeerError(
        .protocolViolation,
        "\(peerName) refused this device's sync data as \(reason.badData); nothing of it was stored there",
        hint: "update memo-peer on both devices", remedy: .checkStore)
    }
  }
}
