import MemoCore
import MemoStore
import MemoSystem
import MemoVault

/// How engine code opens this node's store, and on whose behalf: a person's command
/// (`send --wait`, `sync`) restarts the idle timeout of protection `complete`; the daemon's
/// work (answering a sync, storing a delivery, its outbox and scheduled syncs) never does,
/// or a peer delivering every few seconds would keep a `complete` node unlocked forever.
/// A value, so each thread that needs the store opens its own (MemoStore is not Sendable).
public struct StoreAccess: Sendable {
  public let paths: NodePaths
  public let keys: DeviceKeys
  public let use: KeyUse
  public let logger: Logger

  public init(paths: NodePaths, keys: DeviceKeys? = nil, use: KeyUse, logger: Logger = .disabled) {
    self.paths = paths
    self.keys = keys ?? DeviceKeys(paths: paths)
    self.use = use
    self.logger = logger
  }

  public func open() throws -> MemoStore { try MemoStore.open(paths: paths, logger: logger, keys: keys, use: use) }

  /// The same store, opened for the daemon: never counts as a person's use.
  public var background: StoreAccess { StoreAccess(paths: paths, keys: keys, use: .background, logger: logger) }
}
