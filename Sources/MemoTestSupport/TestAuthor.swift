import MemoCore
import MemoCrypto
import MemoProtocol

/// A device that signs what it sends, for tests that make revisions by hand (the hostile
/// store tests, the scripted peer): sync version 3 takes a record only when the device its
/// replica is bound to signed it, so a test's made-up revisions come signed, with a legacy
/// binding of each replica they name. A test's own key, in ordinary memory: never product
/// code.
public final class TestAuthor: @unchecked Sendable {
  // @unchecked: the key is made once and only read; OpenSSL's signing is thread-safe.
  public let key: Ed25519.SigningKey

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

  /// A legacy binding (no nonce) of `replica` to this author: the form a device's own
  /// replica from before version 3 is bound by, which any replica id can take.
  public func binding(of replica: ReplicaID) -> ReplicaBinding {
    (try? ReplicaBindings.make(replica, nonce: [], signer: key))
      ?? ReplicaBinding(replica: replica, publicKey: key.publicKey, nonce: [], signature: [])
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
