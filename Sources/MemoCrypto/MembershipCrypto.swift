import MemoCore
import MemoProtocol

/// The membership log's cryptography (MemoProtocol's `OpVerifier` and `OpSigner`) over this
/// module's OpenSSL and libsodium wrappers: Ed25519, SHA-256 and the notebook id derivation.
public struct MembershipCrypto: OpVerifier {
  public init() {}

  public func isValidPublicKey(_ publicKey: [UInt8]) -> Bool { Ed25519.isValidPublicKey(publicKey) }

  public func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
    Ed25519.verify(signature, message: message, publicKey: publicKey)
  }

  public func sha256(_ bytes: [UInt8]) -> [UInt8]? { try? SHA256.hash(bytes) }

  public func notebookID(creator: DeviceID, nonce: [UInt8]) -> NotebookID? {
    try? SyncDerivations.notebookID(creator: creator, nonce: nonce)
  }
}

/// The identity key signs ops as it signs everything else.
extension Ed25519.SigningKey: OpSigner {}
