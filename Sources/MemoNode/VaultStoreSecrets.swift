import MemoCore
import MemoCrypto
import MemoStore
import MemoSystem
import MemoVault

/// The store's `StoreSecrets` from this node's vault: the device key and its protection
/// (`DeviceKeys`), the listing key file, the identity key (`NodeSecrets`), config.json and
/// the trust store. Here, where both modules are seen, so that neither imports the other:
/// the store stays a database, and the vault knows nothing of it.
public struct VaultStoreSecrets: StoreSecrets {
  public let paths: NodePaths
  public let keys: DeviceKeys
  /// Whose use reading the device key is: a person's restarts the idle timeout of
  /// protection `complete`, the daemon's (`.background`) never does.
  public let use: KeyUse

  /// `keys` nil: the node's own, in the kernel keyring.
  public init(paths: NodePaths, keys: DeviceKeys? = nil, use: KeyUse = .person) {
    self.paths = paths
    self.keys = keys ?? DeviceKeys(paths: paths)
    self.use = use
  }

  public var hasContentKey: Bool { PrivateFiles.exists(paths.deviceKeyPath) }

  public func contentKey(creatingIfMissing: Bool) throws -> SecureBytes? {
    creatingIfMissing ? try keys.dataKeyCreatingIfMissing(use: use) : try keys.dataKey(use: use)
  }

  public func lockState() throws -> LockState { try keys.status().lockState }

  public func listingKey() throws -> SecureBytes { try KeyFile.listing(paths).loadOrCreate() }

  public func identitySeed() throws -> SecureBytes { try NodeSecrets(paths: paths, keys: keys).identitySeed() }

  public func identityPublicKey() throws -> [UInt8] {
    try NodeSecrets(paths: paths, keys: keys).identityPublicKey()
  }

  public func historyLimits() throws -> HistoryLimits { try NodeConfig.load(paths: paths).history }

  public func syncQuotas() throws -> SyncQuotas { try NodeConfig.load(paths: paths).quotas }

  public func trustedDevices() throws -> [DeviceID] {
    try TrustStore(paths: paths, keys: keys).load().peers.map(\.deviceID)
  }
}

extension MemoStore {
  /// Opens the node's store with its device keys (`keys` nil: the node's own, in the kernel
  /// keyring), creating the keys and database on first use. `use` says whether a person is
  /// acting (which restarts the idle timeout of protection `complete`).
  public static func open(
    paths: NodePaths, logger: Logger = .disabled, keys: DeviceKeys? = nil, use: KeyUse = .person
  ) throws -> MemoStore {
    try open(paths: paths, logger: logger, secrets: VaultStoreSecrets(paths: paths, keys: keys, use: use))
  }
}
