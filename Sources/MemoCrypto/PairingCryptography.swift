import MemoCore
import MemoProtocol

/// The pairing exchange's hash and key derivation, from OpenSSL: SHA-256 through EVP_Digest,
/// HKDF through EVP_KDF.
public struct OpenSSLPairingCryptography: PairingCryptography {
  public init() {}

  public func sha256(_ bytes: [UInt8]) throws -> [UInt8] { try SHA256.hash(bytes) }

  public func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
    try HKDFSHA256.derive(key: key, salt: salt, info: info, length: length)
  }
}
