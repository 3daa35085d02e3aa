import MemoCore
import MemoCrypto
import MemoProtocol
import Synchronization

/// A device that signs what it sends, for tests that make revisions by hand (the hostile
/// store tests, the scripted peer): sync version 3 takes a record only when the device its
/// replica is bound to signed it, so a test's made-up revisions come signed, with a binding
/// of each replica they name: derived from this author's key for the replicas it made
/// (`replica(_:)`, as a version-3 device's), legacy for any other id (which a receiver takes
/// only within its legacy ceilings: the squat tests). A test's own key, in ordinary memory:
/// never product code.
///
/// `@unchecked Sendable`: the key is made once and only read (OpenSSL's signing with it is
/// thread-safe), and the nonces are behind a `Mutex`.
public final class TestAuthor: @unchecked Sendable {
  public let key: Ed25519.SigningKey
  /// The nonce of each replica `replica(_:)` derived.
  private let nonces = Mutex<[ReplicaID: [UInt8]]>([:])

  /// One author for tests that need no more than one.
  public static let shared = TestAuthor()

  public init() {
    // A fresh random key cannot fail short of OpenSSL being broken.
    key = try! Ed25519.SigningKey.random()  // swift-format-ignore: NeverUseForceTry
  }

  /// An author signing with `key` (a lab device's own identity key: `memo-peer-hostile`).
  public init(key: Ed25519.SigningKey) { self.key = key }

  /// The device this author is.
  public var device: DeviceID { DeviceID(bytes: (try? SHA256.hash(key.publicKey)) ?? [])! }

  /// `record` signed by this author.
  public func sign(_ record: SyncRecord) -> SyncRecord {
    var signed = record
    signed.signature = try? key.signature(for: record.signedMessage)
    return signed
  }

  /// This author's `index`th replica, derived from its key as a version-3 device derives
  /// its own: the same index gives the same id.
  public func replica(_ index: Int = 0) -> ReplicaID {
    var nonce = [UInt8](repeating: 0x7e, count: 8)
    withUnsafeBytes(of: UInt64(truncatingIfNeeded: index).bigEndian) { nonce.append(contentsOf: $0) }
    // A 16-byte nonce and a valid device cannot fail to derive.
    let replica = try! SyncDerivations.replicaID(device: device, nonce: nonce)  // swift-format-ignore: NeverUseForceTry
    nonces.withLock { $0[replica] = nonce }
    return replica
  }

  /// The binding of `replica` to this author: derived for one `replica(_:)` made, otherwise
  /// legacy (no nonce), the form a device's own replica from before version 3 is bound by,
  /// which any replica id can take.
  public func binding(of replica: ReplicaID) -> ReplicaBinding {
    let nonce = nonces.withLock { $0[replica] } ?? []
    return (try? ReplicaBindings.make(replica, nonce: nonce, signer: key))
      ?? ReplicaBinding(replica: replica, publicKey: key.publicKey, nonce: nonce, signature: [])
  }

  /// The records signed, and the bindings of every replica they name.
  public func signed(_ records: [SyncRecord]) -> (records: [SyncRecord], bindings: [ReplicaBinding]) {
    var seen: Set<ReplicaID> = []
    var bindings: [ReplicaBinding] = []
    for record in records where seen.insert(record.dot.origin).inserted {
      bindings.append(binding(of: record.dot.origin))
    }
    return (records.map(sign), bindings)
  }
}
