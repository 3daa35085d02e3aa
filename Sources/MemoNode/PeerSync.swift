import Dispatch
import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoStore
import MemoVault

/// Syncs this node with trusted peers: reaches each through the dialler (finding it by its
/// rotating tag, connecting with its pinned key, waiting for consent and for the peer as
/// every connection does), and runs one `SyncSession`. The one way to sync with several
/// peers, used by `memo-peer sync` and by `serve --sync-every`.
public struct PeerSync: Sendable {
  /// Peers synced at once by `syncAll`: a device that is away costs its timeout once, not
  /// once per device before it, and a home lab's handful of devices all start together.
  public static let concurrency = 4

  /// Opened for a person (`sync`) or for the daemon (`serve --sync-every`, which must not
  /// restart a protected node's idle timeout as if a person had acted).
  public let store: StoreAccess
  public let dialer: any PeerDialer
  let clock: @Sendable () -> Timestamp
  let batch: SyncSession.BatchLimits
  /// Asked before each frame of a peer is applied: a peer removed from the trust store
  /// while its sync runs gets nothing more stored here.
  let stillTrusted: PeerTrustCheck

  /// `stillTrusted` nil: the trust store of `store`'s node, followed by this sync alone
  /// (the daemon passes its shared set).
  public init(
    store: StoreAccess, dialer: any PeerDialer, batch: SyncSession.BatchLimits = SyncSession.BatchLimits(),
    stillTrusted: PeerTrustCheck? = nil, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.store = store
    self.dialer = dialer
    self.batch = batch
    self.clock = clock
    self.stillTrusted = stillTrusted ?? PeerTrustCheck(following: TrustStore(paths: store.paths, keys: store.keys))
  }

  /// How the sync with one peer ended.
  public struct PeerResult: Sendable {
    public var peer: TrustedPeer
    public var report: SyncSession.Report?
    public var error: MemoPeerError?
    /// Finding the peer and the TLS handshake.
    public var connectSeconds: Double?
    /// The sync itself, over the ready connection.
    public var sessionSeconds: Double?
    /// TLS record bytes of the sync itself (after the handshake and hellos), both ways.
    public var sessionBytes: UInt64?

    /// One line for a person: what moved, or why nothing did.
    /// Whether the sync moved anything either way, or failed: what the daemon reports
    /// (a daemon syncing every few seconds must not fill its log with syncs that did nothing).
    public var movedAnything: Bool {
      report.map { $0.received.applied + $0.sentRevisions + $0.received.heldDeletes > 0 || !$0.revoked.isEmpty }
        ?? true
    }

    public var summary: String {
      guard let report else { return "\(peer.displayName): not synced: \(error?.message ?? "unknown error")" }
      var text =
        "\(peer.displayName): received \(report.received.applied), sent \(report.sentRevisions), "
        + "conflicts \(report.received.conflicts)"
      if report.received.heldDeletes > 0 { text += ", \(report.received.heldDeletes) deletes held back here" }
      if report.received.quarantined > 0 {
        text += ", \(report.received.quarantined) records that did not verify kept aside (quarantined)"
      }
      if report.ops.refused > 0 {
        text +=
          ", \(report.ops.refused) membership change\(report.ops.refused == 1 ? "" : "s") that a member did not sign "
          + "kept aside (quarantined)"
      }
      if !report.ops.invited.isEmpty {
        let count = report.ops.invited.count
        text +=
          "; \(count) notebook\(count == 1 ? "" : "s") shared with this device: see `memo-peer notebook invitations`"
      }
      if report.ops.overQuota > 0 {
        text +=
          "; \(report.ops.overQuota) more invitation\(report.ops.overQuota == 1 ? "" : "s") from \(peer.displayName) "
          + "not kept (\(MemoStore.maximumPendingInvitations) may wait at once: accept or decline some)"
      }
      for note in report.revoked {
        text +=
          "; revoked here as \(peer.displayName) passed on: "
          + "\(note.name.map(\.terminalSafe) ?? note.revoked.short + "…") (it is cut off from now on)"
      }
      if report.sent.heldDeletes > 0 {
        text +=
          "; \(peer.displayName) held back \(report.sent.heldDeletes) of this device's deletes"
          + " (answer with `memo-peer sync --allow-deletes` there)"
      }
      return text
    }
  }

  /// Syncs with every peer, `concurrency` at a time, each within its own `timeout` (counted
  /// from its start); the results in the order of `peers`. `deleteGuard` nil applies the
  /// peers' deletes without asking. `onState` and `progress` hear which peer they are about.
  public func syncAll(
    _ peers: [TrustedPeer], timeout: Double, deleteGuard: MassDeleteGuard?,
    onState: @escaping @Sendable (TrustedPeer, ConnectionState) -> Void = { _, _ in },
    progress: (@Sendable (TrustedPeer, SyncSession.Progress) -> Void)? = nil
  ) async -> [PeerResult] {
    let work: @Sendable (Int) async -> (Int, PeerResult) = { index in
      let peer = peers[index]
      var perPeer: SyncSession.ProgressHandler?
      if let progress { perPeer = { progress(peer, $0) } }
      let result = await sync(
        with: peer, timeout: timeout, deleteGuard: deleteGuard, onState: { onState(peer, $0) }, progress: perPeer)
      return (index, result)
    }
    return await withTaskGroup(of: (Int, PeerResult).self) { group in
      var next = 0
      while next < min(Self.concurrency, peers.count) {
        group.addTask { [next] in await work(next) }
        next += 1
      }
      var results: [(Int, PeerResult)] = []
      for await result in group {
        results.append(result)
        if next < peers.count && !Task.isCancelled {
          group.addTask { [next] in await work(next) }
          next += 1
        }
      }
      return results.sorted { $0.0 < $1.0 }.map(\.1)
    }
  }

  /// Syncs with `peer`. `deleteGuard` nil applies this peer's deletes without asking.
  public func sync(
    with peer: TrustedPeer, timeout: Double, deleteGuard: MassDeleteGuard?,
    onState: @escaping @Sendable (ConnectionState) -> Void = { _ in },
    progress: SyncSession.ProgressHandler? = nil
  ) async -> PeerResult {
    let link: PeerLink
    let started = DispatchTime.now().uptimeNanoseconds
    do {
      link = try await dialer.connect(to: peer, timeout: timeout, onState: onState)
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
    let connectSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    do {
      return try await BlockingIO.run("mp.sync") { [self] in
        defer {
          try? link.channel.send(PeerSession.goodbye("done"))
          link.channel.close()
        }
        var result = try session(
          over: link.channel, with: peer, store: try openReadable(), deleteGuard: deleteGuard, progress: progress)
        result.connectSeconds = connectSeconds
        return result
      }
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
  }

  /// The store, opened to sync: refused while its content is locked.
  func openReadable() throws -> MemoStore {
    let opened = try store.open()
    guard opened.canReadContent else { throw MemoStore.lockedError }
    return opened
  }

  /// One sync over a ready channel, which stays open: `sync(with:)` closes it after, a
  /// live link syncs on it again at the next change. Blocking.
  func session(
    over channel: any FrameChannel, with peer: TrustedPeer, store opened: MemoStore, deleteGuard: MassDeleteGuard?,
    progress: SyncSession.ProgressHandler? = nil, quiet: Double? = nil
  ) throws -> PeerResult {
    let started = DispatchTime.now().uptimeNanoseconds
    let before = channel.wireBytes
    let report = try SyncSession.ask(
      channel, peer: peer.deviceID, peerName: peer.displayName, store: opened, keys: store.keys,
      deleteGuard: deleteGuard, batch: batch, stillTrusted: stillTrusted, clock: clock, progress: progress,
      quiet: quiet)
    let after = channel.wireBytes
    return PeerResult(
      peer: peer, report: report, error: nil,
      sessionSeconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9,
      sessionBytes: (after.sent - before.sent) + (after.received - before.received))
  }

  static func memoPeerError(_ error: Error) -> MemoPeerError {
    (error as? MemoPeerError) ?? MemoPeerError(.connection, "the sync failed", diagnostics: "\(error)")
  }
}
