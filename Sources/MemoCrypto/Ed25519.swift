internal import COpenSSL

/// The public half of an Ed25519 key, from its 32-byte seed (OpenSSL EVP_PKEY). The store
/// keeps it next to a sealed identity key, so the device ID stays readable while the node
/// is locked (`memo-peer id`), without the seed.
public enum Ed25519 {
  public static let seedSize = 32
  public static let publicKeySize = 32

  public static func publicKey(seed: SecureBytes) throws(CryptoError) -> [UInt8] {
    guard seed.count == seedSize else { throw .malformed }
    guard
      let key = seed.withUnsafeBytes({
        EVP_PKEY_new_raw_private_key(
          EVP_PKEY_ED25519, nil, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
      })
    else { throw OpenSSLCall.failure("EVP_PKEY_new_raw_private_key") }
    defer { EVP_PKEY_free(key) }
    var length = publicKeySize
    var bytes = [UInt8](repeating: 0, count: publicKeySize)
    guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1, length == publicKeySize else {
      throw OpenSSLCall.failure("EVP_PKEY_get_raw_public_key")
    }
    return bytes
  }
}
