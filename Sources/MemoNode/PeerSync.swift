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

  public init(paths: NodePaths, connector: PeerConnector, clock: @escaping @Sendable () -> Timestamp) {
    self.paths = paths
    self.connector = connector
    self.clock = clock
  }

  /// How the sync with one peer ended.
  public struct PeerResult: Sendable {
    public var peer: TrustedPeer
    public var report: SyncSession.Report?
    public var error: MemoPeerError?
  }

  /// Syncs with `peer`. `deleteGuard` nil applies this peer's deletes without asking.
  public func sync(
    with peer: TrustedPeer, timeout: Double, deleteGuard: MassDeleteGuard?, logger: Logger,
    onState: @escaping @Sendable (ConnectionState) -> Void = { _ in },
    progress: SyncSession.ProgressHandler? = nil
  ) async -> PeerResult {
    guard let device = DeviceID(peer.deviceID) else {
      return PeerResult(
        peer: peer, report: nil, error: MemoPeerError(.untrustedPeer, "\(peer.name) has no valid device ID"))
    }
    let link: PeerLink
    do {
      link = try await connector.connect(to: peer, timeout: timeout, onState: onState)
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
    defer {
      try? link.connection.send(Frame(.goodbye, payload: PeerMessage.encode(PeerMessage.Goodbye(reason: "done"))))
      link.connection.shutdown()
    }
    do {
      let store = try MemoStore.open(paths: paths, logger: logger)
      guard store.canReadContent else { throw MemoStore.lockedError }
      let report = try SyncSession.ask(
        link.connection, peer: device.compact, peerName: peer.name, store: store, deleteGuard: deleteGuard,
        clock: clock, progress: progress)
      return PeerResult(peer: peer, report: report, error: nil)
    } catch {
      return PeerResult(peer: peer, report: nil, error: Self.memoPeerError(error))
    }
  }

  static func memoPeerError(_ error: Error) -> MemoPeerError {
    (error as? MemoPeerError) ?? MemoPeerError(.connection, "the sync failed", diagnostics: "\(error)")
  }
}
