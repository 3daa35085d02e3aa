import MemoCore

/// The ids sync version 3 derives by hashing (docs/design/sync-v3.md, sections 2 and 4):
/// `SHA-256(label ‖ 0x00 ‖ input)`, cut to 16 bytes. Deriving them, instead of drawing
/// them at random, lets every device check that a replica belongs to the device that
/// signed for it, that a notebook's genesis is its creator's, and that a sealed key is the
/// one its id names.
public enum SyncDerivations {
  /// Bytes of the nonce in a replica or notebook id's input.
  public static let nonceSize = 16
  /// Bytes of a derived id (a replica or notebook id is their 32 hex digits).
  public static let idSize = 16

  /// The domain-separation labels (ASCII), each followed by a zero byte in the input.
  static let replicaLabel = "memo-peer/3 replica"
  static let notebookLabel = "memo-peer/3 notebook"
  static let keyLabel = "memo-peer/3 key"

  /// `hex(SHA-256("memo-peer/3 replica" ‖ 0x00 ‖ device id (32) ‖ nonce (16))[0..<16])`: the
  /// replica id a device derives for a database of its own. `nonce` must be 16 bytes.
  public static func replicaID(device: DeviceID, nonce: [UInt8]) throws(CryptoError) -> ReplicaID {
    guard let id = ReplicaID(Hex.encode(try derive(replicaLabel, device: device, nonce: nonce))) else {
      throw .malformed
    }
    return id
  }

  /// `hex(SHA-256("memo-peer/3 notebook" ‖ 0x00 ‖ creator's device id (32) ‖ nonce (16))[0..<16])`:
  /// the id of a notebook made by a `create` op, so nobody else can make a genesis for it.
  public static func notebookID(creator: DeviceID, nonce: [UInt8]) throws(CryptoError) -> NotebookID {
    guard let id = NotebookID(Hex.encode(try derive(notebookLabel, device: creator, nonce: nonce))) else {
      throw .malformed
    }
    return id
  }

  /// `SHA-256("memo-peer/3 key" ‖ 0x00 ‖ key (32))[0..<16]`: names a notebook key generation
  /// in `key` and `grant` ops; a member checks its opened copy against it. The key is hashed
  /// where it lies (never copied out of its locked memory).
  public static func keyID(of key: SecureBytes) throws(CryptoError) -> [UInt8] {
    guard key.count == AES256GCMKey.keySize else { throw .malformed }
    let prefix = Array(keyLabel.utf8) + [0]
    let digest: Result<[UInt8], CryptoError> = prefix.withUnsafeBytes { label in
      key.withUnsafeBytes { secret in
        Result { () throws(CryptoError) in try SHA256.hash(pieces: [label, secret]) }
      }
    }
    return Array(try digest.get().prefix(idSize))
  }

  private static func derive(_ label: String, device: DeviceID, nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
    guard nonce.count == nonceSize else { throw .malformed }
    let input = Array(label.utf8) + [0] + device.bytes + nonce
    return Array(try SHA256.hash(input).prefix(idSize))
  }
}
