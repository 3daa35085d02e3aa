internal import COpenSSL
internal import CSodium

/// Ed25519 (RFC 8032, pure: no pre-hash): the device's identity key signs through OpenSSL's
/// EVP API (`SigningKey`, the same key as the TLS identity), anyone verifies with the
/// 32-byte public key through libsodium (`verify`, where the reason is).
///
/// The store keeps the public key next to a sealed identity key, so the device ID stays
/// readable while the node is locked (`memo-peer id`), without the seed.
public enum Ed25519 {
  public static let seedSize = 32
  public static let publicKeySize = 32
  public static let signatureSize = 64

  /// The public half of the key made from `seed`.
  public static func publicKey(seed: SecureBytes) throws(CryptoError) -> [UInt8] {
    try SigningKey(seed: seed).publicKey
  }

  /// This device's private key: an EVP_PKEY made from the identity key's 32-byte seed
  /// (`identity.key`, read by `NodeSecrets.identitySeed`). The seed is copied into the key
  /// once; OpenSSL keeps it in its secure heap where one is set up
  /// (`MemoryLocking.enableOpenSSLSecureHeap`) and wipes it when the key is freed. The
  /// same object is the TLS identity (`DeviceIdentity.signingKey`), so a process holds one
  /// copy of the secret, not one for TLS and one for signing; the caller's `SecureBytes`
  /// seed can go as soon as this is made.
  ///
  /// `@unchecked Sendable`: the EVP_PKEY is immutable after init, and every operation makes
  /// its own EVP_MD_CTX; OpenSSL allows concurrent read-only use of a key.
  public final class SigningKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The raw 32-byte public key (what a device ID hashes, what verifiers take).
    public let publicKey: [UInt8]

    public init(seed: SecureBytes) throws(CryptoError) {
      guard seed.count == Ed25519.seedSize else { throw .malformed }
      guard
        let key = seed.withUnsafeBytes({
          EVP_PKEY_new_raw_private_key(
            EVP_PKEY_ED25519, nil, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
        })
      else { throw OpenSSLCall.failure("EVP_PKEY_new_raw_private_key") }
      self.key = key
      var length = Ed25519.publicKeySize
      var bytes = [UInt8](repeating: 0, count: Ed25519.publicKeySize)
      guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1, length == Ed25519.publicKeySize else {
        EVP_PKEY_free(key)
        throw OpenSSLCall.failure("EVP_PKEY_get_raw_public_key")
      }
      publicKey = bytes
    }

    /// A key from a fresh random seed, for tests and benchmarks (a device's key comes
    /// from its key file).
    public static func random() throws(CryptoError) -> SigningKey {
      try SigningKey(seed: SecureBytes.random(count: Ed25519.seedSize))
    }

    deinit { EVP_PKEY_free(key) }

    /// The 64-byte signature of `message` (`EVP_DigestSign`, no digest: Ed25519 hashes
    /// the message itself). Deterministic: the same key and message give the same bytes.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
      guard let context = EVP_MD_CTX_new() else { throw OpenSSLCall.failure("EVP_MD_CTX_new") }
      defer { EVP_MD_CTX_free(context) }
      try OpenSSLCall.check(EVP_DigestSignInit(context, nil, nil, nil, key), "EVP_DigestSignInit")
      var signature = [UInt8](repeating: 0, count: Ed25519.signatureSize)
      var length = signature.count
      let result = message.withNonNullBytes { bytes in
        EVP_DigestSign(context, &signature, &length, bytes.baseAddress, bytes.count)
      }
      try OpenSSLCall.check(result, "EVP_DigestSign")
      guard length == Ed25519.signatureSize else { throw OpenSSLCall.failure("EVP_DigestSign(length)") }
      return signature
    }

    /// The EVP_PKEY, for the TLS layer of this package (the certificate and SSL_CTX use
    /// the same key). Only valid inside `body`; OpenSSL calls that keep it (such as
    /// `SSL_CTX_use_PrivateKey`) take their own reference.
    package func withEVPKey<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
      try body(key)
    }

    /// The 32-byte seed, copied out of the key into locked memory for a library that needs
    /// it (libsodium's key conversion, `SealedBox`); wiped when the caller lets it go.
    func seed() throws(CryptoError) -> SecureBytes {
      let seed = SecureBytes(zeroedCount: Ed25519.seedSize)
      try seed.fill { buffer throws(CryptoError) in
        var length = buffer.count
        guard EVP_PKEY_get_raw_private_key(key, buffer.baseAddress, &length) == 1, length == Ed25519.seedSize else {
          throw OpenSSLCall.failure("EVP_PKEY_get_raw_private_key")
        }
      }
      return seed
    }
  }

  /// Whether `signature` is a valid Ed25519 signature of `message` under `publicKey` (raw,
  /// 32 bytes). Wrong sizes, a key that is not a curve point and a non-canonical signature
  /// (S ≥ L) are all just false: the input comes from other devices.
  ///
  /// libsodium's `crypto_sign_verify_detached`, not OpenSSL's: every receiver checks every
  /// record of a sync (10,000 records, a CPU-second with OpenSSL), and libsodium's is about
  /// 1.6 times faster here (60 against 100 µs, `--only ed25519`). It is also stricter:
  /// besides S ≥ L it refuses a key or an `R` of small order, under which (with OpenSSL,
  /// as RFC 8032 allows) `R` = neutral and `S` = 0 verify for every message. A signature
  /// an honest signer made verifies under both, and every device verifies with this one,
  /// so the devices agree on what is valid. Keys learnt from other devices are still
  /// checked once with `isValidPublicKey` before they are kept.
  public static func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
    guard signature.count == signatureSize, publicKey.count == publicKeySize, (try? Sodium.ready()) != nil else {
      return false
    }
    return message.withNonNullBytes { bytes in
      crypto_sign_verify_detached(signature, bytes.baseAddress, UInt64(bytes.count), publicKey)
    } == 0
  }
}

extension Ed25519 {
  /// Whether `publicKey` is a key a device can own: a canonical encoding of a point on the
  /// curve, in the prime-order subgroup, not of small order (libsodium's
  /// `crypto_core_ed25519_is_valid_point`). A key of small order has signatures anyone
  /// can forge (see `verify`). Costs a scalar multiplication: check a key when it is
  /// accepted (TLS, `sync-hello` keys), not at every signature.
  public static func isValidPublicKey(_ publicKey: [UInt8]) -> Bool {
    guard publicKey.count == publicKeySize, (try? Sodium.ready()) != nil else { return false }
    return crypto_core_ed25519_is_valid_point(publicKey) == 1
  }
}

extension Array where Element == UInt8 {
  /// The bytes with a non-null base address even when empty (an empty message is valid,
  /// and a C API may treat a null pointer as an error whatever the length).
  fileprivate func withNonNullBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    if isEmpty {
      let placeholder: UInt8 = 0
      return withUnsafePointer(to: placeholder) { body(UnsafeBufferPointer(start: $0, count: 0)) }
    }
    return withUnsafeBufferPointer(body)
  }
}
