import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoVault

/// How a sync answers deletes the mass-delete guard holds back.
public enum HeldDeletes: Sendable {
  /// The guard holds them back (the default): nothing is deleted until a person says.
  case guarded
  /// Apply them (`--allow-deletes`): the guard is off for this sync.
  case allow
  /// Keep the memos they would delete (`--keep-deleted`): settled before the sync, so the
  /// memos go back to the peer.
  case keep
}

/// How a sync gets its local-network consent.
public enum SyncConsent {
  /// Asked through the prompt when none is on record and someone can answer; with nobody
  /// to ask, the connections wait for a consent (and say so).
  case ask(any Prompt)
  /// Required on record before anything else, refused with `hint` otherwise: the page asks
  /// on its own, on a click, before it starts a sync.
  case required(hint: String)
}

/// A sync checked and ready to run: every check that needs no network has passed.
public struct PreparedSync: Sendable {
  public let peers: [TrustedPeer]
  let paths: NodePaths
  let keys: DeviceKeys
  let gate: ConsentGate
  let trust: TrustStore
  let timeout: Double
  let guarded: Bool
  let logger: Logger
  let clock: @Sendable () -> Timestamp

  /// Syncs with the peers through `PeerSync.syncAll`, the one way to sync with several
  /// devices (up to `PeerSync.concurrency` at once: a device that is away costs its timeout
  /// once, not once per device before it). Each sync has its own store connection; their
  /// batches take turns at SQLite's write lock; `memo-peer lock` meanwhile closes them.
  /// `note` gets lines that stay (waiting states), `progress` the line that changes (counts
  /// only, never memo text).
  public func run(
    note: @escaping @Sendable (String) -> Void = { _ in }, progress: @escaping @Sendable (String) -> Void = { _ in }
  ) async throws -> SyncOutcome {
    let watch = LockWatch(keys: keys)
    defer { watch.stop() }
    let runner = PeerSync(
      store: StoreAccess(paths: paths, keys: keys, use: .person, logger: logger),
      dialer: PeerConnector(
        gate: gate, identity: try NodeIdentity.load(paths: paths), trust: trust, sessions: watch.sessions,
        clock: clock),
      clock: clock)
    let results = await runner.syncAll(
      peers, timeout: timeout, deleteGuard: guarded ? MassDeleteGuard() : nil,
      onState: { peer, state in
        if case .waiting(let reason) = state { note("\(peer.displayName): waiting (\(reason))") }
      },
      progress: { peer, step in
        let direction = step.receiving ? "receiving from" : "sending to"
        let total = step.estimate > step.done ? " of about \(step.estimate)" : ""
        progress("\(direction) \(peer.displayName): \(step.done)\(total) memo revisions")
      })
    return SyncOutcome(results: results, interruptedByLock: watch.fired)
  }
}

/// How a sync with each device ended.
public struct SyncOutcome: Sendable {
  public var results: [PeerSync.PeerResult]
  /// The node locked during the sync (its connections were closed).
  public var interruptedByLock: Bool

  public init(results: [PeerSync.PeerResult], interruptedByLock: Bool = false) {
    self.results = results
    self.interruptedByLock = interruptedByLock
  }

  /// `locked`: the node locked while it ran (the CLI's status 18).
  public var lockError: MemoPeerError? { interruptedByLock ? LockWatch.lockedDuring("the sync") : nil }

  /// What needs a person, as the error the CLI exits with: deletes held back (status 20),
  /// else a device that could not be synced (its error; with several devices, a count).
  public var problem: MemoPeerError? {
    if let held = results.first(where: { ($0.report?.received.heldDeletes ?? 0) > 0 }) {
      let name = held.peer.displayName
      return MemoPeerError(
        .syncHeld,
        "\(held.report?.received.heldDeletes ?? 0) deletes (or edits emptying memos) from \(name) were held back: they would remove that many of your \(held.report?.received.liveMemos ?? 0) memos; nothing was deleted",
        hint: "if \(name) deleted them on purpose: `memo-peer sync --peer \(name) --allow-deletes`; "
          + "to keep them (and bring them back on \(name)): `memo-peer sync --peer \(name) --keep-deleted`")
    }
    if let failed = results.first(where: { $0.error != nil }), let error = failed.error {
      guard results.count > 1 else { return error }
      return MemoPeerError(
        error.code,
        "\(results.filter { $0.error != nil }.count) of \(results.count) devices could not be synced; first: \(error.message)",
        hint: error.hint, remedy: error.remedy)
    }
    return nil
  }
}

/// One trusted device's sync state, for `peers` and the page.
public struct PeerRow: Sendable {
  public var peer: TrustedPeer
  /// The last sync, or the last connection to this node's daemon.
  public var seen: Timestamp?
  public var synced: Timestamp?
  /// Changes here it has not received yet.
  public var pending: Int
  /// Its deletes held back by the mass-delete guard.
  public var heldDeletes: Int
  /// Whether this node's running daemon has a live link with it now (live sync).
  public var live = false
  /// The last sync data this device refused from it, with the evidence.
  public var lastRefusal: SyncRefusalRecord?
}

/// Keeping the memos of trusted devices in step: `sync`, `peers` (and the page's Sync
/// button and devices).
public struct SyncUseCases {
  let app: App

  /// A sync of a node that trusts nobody.
  public static let nobodyToSync = MemoPeerError(
    .notFound, "this node trusts no device yet, so there is nobody to sync with",
    hint: "pair with `memo-peer pair --accept` on one device and `memo-peer pair` on the other")

  /// Checks a sync with every trusted device (or the one `peer` names) and gets it ready:
  /// someone to sync with, the node unlocked, held deletes answered (`keep` settles them
  /// now, telling `onKept`), consent as `consent` says. `deletes` other than `guarded` need
  /// `peer`.
  public func prepare(
    peer reference: String?, timeout: Double, deletes: HeldDeletes = .guarded, consent: SyncConsent,
    onKept: (Int, TrustedPeer) -> Void = { _, _ in }
  ) throws -> PreparedSync {
    if case .required(let hint) = consent {
      // The page's order: a locked node or a missing consent is what it can do something
      // about first.
      guard try app.keys.status().lockState.canReadContent else { throw MemoStore.lockedError }
      try app.consent.require(for: .memoPeerBrowse, hint: hint)
    }
    let gate = try app.consent.gate()
    let trust = app.trustStore
    let list = try trust.load()
    let peers = try reference.map { [try list.find($0)] } ?? list.peers
    guard !peers.isEmpty else { throw Self.nobodyToSync }
    if case .ask(let prompt) = consent {
      let store = try app.store()
      guard store.canReadContent else { throw MemoStore.lockedError }
      if deletes == .keep, let peer = peers.first {
        onKept(try store.settleHeldDeletes(from: peer.deviceID, apply: false, now: app.now), peer)
      }
      if prompt.canAsk { try ConsentUseCases.obtain(for: .memoPeerBrowse, gate: gate, prompt: prompt, now: app.now) }
    }
    return PreparedSync(
      peers: peers, paths: app.paths, keys: app.keys, gate: gate, trust: trust, timeout: timeout,
      guarded: deletes != .allow, logger: app.logger.scoped("sync"), clock: app.clock)
  }

  /// Each trusted device's row: when it was last seen (a sync, or a connection to this
  /// node's daemon), last synced, what it has not received, its held deletes.
  public func peers() throws -> [PeerRow] {
    let store = try app.store()
    let trusted = try app.trustStore.load().peers
    let records = Dictionary(uniqueKeysWithValues: try store.syncPeerRecords().map { ($0.device, $0) })
    let daemon = ServeStatus.read(app.paths).flatMap { $0.isRunning ? $0 : nil }
    let contacts = daemon?.trustedContacts ?? [:]
    let linked = Set(daemon?.livePeers ?? [])
    return try trusted.map { peer in
      let record = records[peer.deviceID]
      let seen = [record?.lastSeen, contacts[peer.deviceID]].compactMap { $0 }.max()
      // Never synced: everything here is pending for it.
      let pending = try record?.pending ?? store.feedCount(after: 0)
      return PeerRow(
        peer: peer, seen: seen, synced: record?.lastSynced, pending: pending, heldDeletes: record?.heldDeletes ?? 0,
        live: linked.contains(peer.deviceID), lastRefusal: record?.lastRefusal)
    }
  }
}

/// Memos edited on two devices at once (both kept), and deletes overruled by an edit.
public struct ConflictUseCases {
  let app: App

  /// `A`, `B` or `both`, in any case.
  public static func choice(_ text: String) -> ConflictChoice? {
    ConflictChoice.allCases.first { $0.rawValue.lowercased() == text.lowercased() }
  }

  public func list() throws -> [ConflictEntry] { try app.store().conflicts() }

  /// Resolves the conflict of a copy (or of a memo with one copy) by `choice`; every device
  /// picks the same version, and the resolution syncs like an edit.
  public func resolve(_ reference: String, keep choice: ConflictChoice) throws -> ConflictResolution {
    let store = try app.store()
    return try store.resolveConflict(try store.resolve(reference), keep: choice, now: app.now)
  }
}
