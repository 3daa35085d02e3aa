import MemoCore
import MemoCrypto

/// All the store asks of this node beyond its database: the keys that open it and sign what
/// it writes, two settings of config.json, and the devices trusted when a migration runs.
///
/// The store is a database and nothing else (issue 40): it never reads or writes the key
/// files, the trust store or config.json itself, so it does not import the module that does
/// (MemoVault). The node gives these through a type that sees both (MemoNode's
/// `VaultStoreSecrets`, behind `MemoStore.open(paths:logger:keys:use:)`); a test may give
/// them from memory. Who is using the keys (a person, or the daemon, for the idle timeout
/// of protection `complete`) is the conforming value's to know: the store only asks.
/// Sendable: the store keeps it for its life, and each thread opens its own store.
public protocol StoreSecrets: Sendable {
  /// Whether this node has a content key yet, locked or not: a database whose content was
  /// sealed under a key that is now gone cannot be opened, and the store says so itself.
  var hasContentKey: Bool { get }

  /// The key that seals memo content (the device key), or nil while the node is locked.
  /// `creatingIfMissing`: a new database makes one (unprotected) when the node has none.
  func contentKey(creatingIfMissing: Bool) throws -> SecureBytes?

  /// Whether content can be read, as the node's protection says now.
  func lockState() throws -> LockState

  /// The key that seals the listing titles, made on first use; never locked.
  func listingKey() throws -> SecureBytes

  /// The seed of the identity key that signs what this device writes, made on first use
  /// (sealed under the content key on a protected node: fails while it is locked).
  func identitySeed() throws -> SecureBytes

  /// The identity's public key, readable while locked: this device's ID is its SHA-256.
  func identityPublicKey() throws -> [UInt8]

  /// The history bounds config.json sets (its defaults when it sets none). Throws when the
  /// file cannot be read; the store then keeps the most it could allow.
  func historyLimits() throws -> HistoryLimits

  /// The per-peer sync quotas config.json sets (its defaults when it sets none). Throws when
  /// the file cannot be read; the store then uses the defaults.
  func syncQuotas() throws -> SyncQuotas

  /// The devices trusted now: the migration to notebooks (schema 7) keeps giving each what
  /// it got before the upgrade. Throws when the trust store cannot be read (none, then).
  func trustedDevices() throws -> [DeviceID]
}
