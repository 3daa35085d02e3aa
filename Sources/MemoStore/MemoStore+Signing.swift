import MemoCore
import MemoCrypto
import MemoProtocol

/// Signing what this device writes (docs/design/sync-v3.md, sections 2 and 3): every
/// revision it makes is sealed under its notebook's current key and signed with the
/// identity key at the moment it is stored, so the record that travels is the one its
/// author signed, and relays and members forward it as it is.
extension MemoStore {
  /// The identity key that signs this device's revisions and bindings, loaded once per
  /// store (it is sealed under the device key on a protected node: `locked` while locked).
  func signer() throws -> Ed25519.SigningKey {
    if let signer = signingKey.withLock({ $0 }) { return signer }
    let seed = try secrets.identitySeed()
    let made: Ed25519.SigningKey
    do { made = try Ed25519.SigningKey(seed: seed) } catch {
      throw MemoPeerError(.crypto, "could not load this device's identity key", diagnostics: "\(error)")
    }
    signingKey.withLock { $0 = made }
    return made
  }

  /// This device's ID (the SHA-256 of its identity key).
  public func deviceID() throws -> DeviceID {
    guard let id = DeviceID(bytes: try SHA256.hash(try signer().publicKey)) else {
      throw MemoPeerError(.crypto, "this device's identity key has no device ID")
    }
    return id
  }

  /// This device's ID read from its public identity key, which needs no unlocking (nil
  /// when it cannot be read): for naming this device's own revisions "this device".
  public func ownDeviceID() -> DeviceID? {
    if let known = ownDevice.withLock({ $0 }) { return known }
    let read = (try? secrets.identityPublicKey()).flatMap { key in
      (try? SHA256.hash(key)).flatMap { DeviceID(bytes: $0) }
    }
    ownDevice.withLock { $0 = read }
    return read
  }

  /// This device's ID, or an error saying its identity key cannot be read.
  func thisDevice() throws -> DeviceID {
    if let known = ownDeviceID() { return known }
    return try deviceID()
  }

  /// `memo` (with its dot, clock and notebook) as the record it travels as: its content
  /// sealed under the notebook's current key, signed by this device.
  func signedRecord(for memo: Memo) throws -> SealedRecord {
    guard let dot = memo.dot, let notebook = memo.notebook else {
      throw MemoPeerError(.storage, "a revision is signed only once it has a dot and a notebook")
    }
    let revision = SyncRevision(
      memo: memo.conflictOf ?? memo.id,
      head: HeadSummary(dot: dot, clock: memo.clock, revision: memo.revision, isDeleted: memo.isDeleted),
      created: memo.created, updated: memo.updated, isPrivate: memo.isPrivate, title: memo.title, body: memo.body,
      tags: memo.tags, notebook: notebook)
    var record = try sealRecord(revision)
    let signer = try signer()
    do { record.signature = try signer.signature(for: record.signedMessage) } catch {
      throw MemoPeerError(.crypto, "signing memo \(revision.memo.short) failed", diagnostics: "\(error)")
    }
    return SealedRecord(keyID: record.keyID, sealed: record.sealed, signature: record.signature, author: try deviceID())
  }

  /// This store's binding of its own replica (derived, or legacy), signed now.
  func ownBinding(of replica: ReplicaID) throws -> ReplicaBinding {
    let nonce = replica == replicaID ? try metaBytes("replica_nonce") ?? [] : []
    do { return try ReplicaBindings.make(replica, nonce: nonce, signer: try signer()) } catch let error as MemoPeerError
    {
      throw error
    } catch {
      throw MemoPeerError(.crypto, "signing this device's replica binding failed", diagnostics: "\(error)")
    }
  }

  /// The store's replica id from before sync version 3, if it had one (read once).
  public func legacyReplicaID() throws -> ReplicaID? {
    if let known = legacyReplica.withLock({ $0 }) { return known }
    let read = try metaBytes("legacy_replica_id").flatMap { ReplicaID(String(decoding: $0, as: UTF8.self)) }
    legacyReplica.withLock { $0 = .some(read) }
    return read
  }

  func metaBytes(_ key: String) throws -> [UInt8]? {
    try sql {
      try db.withCached("SELECT value FROM meta WHERE key = ?") { read in
        try read.bind(1, key)
        return try read.step() ? read.blob(0) : nil
      }
    }
  }
}
