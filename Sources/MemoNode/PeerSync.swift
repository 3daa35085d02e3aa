import Foundation
import MemoCore
import MemoStore
import MemoTransport

/// Syncs this node with trusted peers: finds each by its rotating tag, connects with its
/// pinned key (waiting for consent and for the peer as every connection does), and runs
/// one `SyncSession`. Used by `memo-peer sync` and by `serve --sync-every`.
public struct PeerSync: Sendable {
  public let paths: NodePaths
  public let connector: PeerConnector
  let clock: @Sendable () -> Timestamp
  /// `.background` for the daemon: a scheduled sync must not restart a protected node's
  /// idle timeout as if a person had acted.
  let keyUse: KeyUse

  public init(
    paths: NodePaths, connector: PeerConnector, keyUse: KeyUse = .person, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.paths = paths
    self.connector = connector
    self.keyUse = keyUse
    self.clock = clock
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
    public var summary: String {
      guard let report else { return "\(peer.displayName): not synced: \(error?.message ?? "unknown error")" }
      var text =
        "\(peer.displayName): received \(report.received.applied), sent \(report.sentRevisions), "
        + "conflicts \(report.received.conflicts)"
      if report.received.heldDeletes > 0 { text += ", \(report.received.heldDeletes) deletes held back here" }
      if report.sent.heldDeletes > 0 {
        text +=
          "; \(peer.displayName) held back \(report.sent.heldDeletes) of this device's deletes"
          + " (answer with `memo-peer sync --allow-deletes` there)"
      }
      return text
    }
  }

  /// Syncs with every trusted peer in turn (the daemon's scheduled sync).
  public func syncAll(timeout: Double, logger: Logger) async -> [PeerResult] {
    let peers = (try? connector.trust.load().peers) ?? []
    var results: [PeerResult] = []
    for peer in peers {
      if Task.isCancelled { break }
      results.append(await sync(with: peer, timeout: timeout, deleteGuard: MassDeleteGuard(), logger: logger))
    }
    return results
  }

  /// Syncs with `peer`. `deleteGuard` nil applies this peer's deletes without asking.
  public func sync(
    with peer: TrustedPeer, timeout: Double, deleteGuard: MassDeleteGuard?, logger: Logger,
    onState: @escaping @Sendable (ConnectionState) -> Void = { _ in },
    progress: SyncSession.ProgressHandler? = nil
  ) async -> PeerResult {
    guard let device = DeviceID(peer.deviceID) else {
      return PeerResult(
        peer: peer, report: nil, error: MemoPeerError(.untrustedPeer, "\(peer.displayName) has no valid device ID"))
    }
    let link: PeerLink
    let started = DispatchTime.now().uptimeNanoseconds
    do {
      link = try await connector.connect(to: peer, timeout: timeout, onState: onState)
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
    let connected = DispatchTime.now().uptimeNanoseconds
    let before = link.connection.wireBytes
    defer {
      try? link.connection.send(Frame(.goodbye, payload: PeerMessage.encode(PeerMessage.Goodbye(reason: "done"))))
      link.connection.shutdown()
    }
    do {
      let store = try MemoStore.open(paths: paths, logger: logger, use: keyUse)
      guard store.canReadContent else { throw MemoStore.lockedError }
      let report = try SyncSession.ask(
        link.connection, peer: device.compact, peerName: peer.displayName, store: store, deleteGuard: deleteGuard,
        clock: clock, progress: progress)
      let after = link.connection.wireBytes
      return PeerResult(
        peer: peer, report: report, error: nil, connectSeconds: Double(connected - started) / 1e9,
        sessionSeconds: Double(DispatchTime.now().uptimeNanoseconds - connected) / 1e9,
        sessionBytes: (after.sent - before.sent) + (after.received - before.received))
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
  }

  static func memoPeerError(_ error: Error) -> MemoPeerError {
    (error as? MemoPeerError) ?? MemoPeerError(.connection, "the sync failed", diagnostics: "\(error)")
  }
}
