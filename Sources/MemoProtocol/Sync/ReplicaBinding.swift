import MemoCore

/// A replica bound to the device that makes its revisions (docs/design/sync-v3.md,
/// section 2): the device's public key, and the nonce its version-3 replica id was derived
/// from (empty for a *legacy* replica, a store's id from before version 3), signed by that
/// key. Every receiver checks it before it believes any revision of the replica
/// (`ReplicaBindings.verify` in MemoCrypto): the signature, and for a derived replica that
/// SHA-256 of the key with the nonce gives the replica id, which no other key can.
public struct ReplicaBinding: Equatable, Hashable, Sendable {
  public var replica: ReplicaID
  /// The device's Ed25519 public key (32 bytes).
  public var publicKey: [UInt8]
  /// 16 bytes for a derived replica, none for a legacy one.
  public var nonce: [UInt8]
  public var signature: [UInt8]

  public init(replica: ReplicaID, publicKey: [UInt8], nonce: [UInt8], signature: [UInt8]) {
    self.replica = replica
    self.publicKey = publicKey
    self.nonce = nonce
    self.signature = signature
  }

  public static let publicKeySize = 32
  public static let nonceSize = 16

  /// A legacy binding (no nonce): believed only until another key claims the replica.
  public var isLegacy: Bool { nonce.isEmpty }

  /// What the device signs: the replica id's text and the nonce.
  public var signedMessage: [UInt8] {
    var writer = ByteWriter()
    writer.string(replica.rawValue)
    writer.data(nonce)
    return Signing.message(.replica, writer.bytes)
  }

  /// `str replica · 32 bytes key · u32 n · n bytes nonce (0 or 16) · 64 bytes signature`.
  public func encode(into writer: inout ByteWriter) {
    writer.string(replica.rawValue)
    writer.bytes.append(contentsOf: publicKey)
    writer.data(nonce)
    writer.bytes.append(contentsOf: signature)
  }

  /// Decodes one binding; nil when it is not of its form (the caller refuses the batch).
  public static func decode(_ reader: inout ByteReader) -> ReplicaBinding? {
    guard let text = reader.string(), let replica = ReplicaID(text), let key = reader.bytes(publicKeySize),
      let nonce = reader.data(maximum: nonceSize), nonce.isEmpty || nonce.count == nonceSize,
      let signature = reader.bytes(SyncRecord.signatureSize)
    else { return nil }
    return ReplicaBinding(replica: replica, publicKey: key, nonce: nonce, signature: signature)
  }
}
