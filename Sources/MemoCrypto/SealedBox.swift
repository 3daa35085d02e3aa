internal import CSodium

/// libsodium, set up once per process (`sodium_init`, which is itself thread-safe and may
/// be called again; the result is kept so every caller sees the same answer). The sizes
/// this module writes down are checked against the library's own, so a different
/// libsodium fails closed instead of overrunning a buffer.
enum Sodium {
  private static let isReady: Bool =
    sodium_init() >= 0 && crypto_box_sealbytes() == SealedBox.overhead
    && crypto_box_publickeybytes() == SealedBox.x25519KeySize && crypto_box_secretkeybytes() == SealedBox.x25519KeySize
    && crypto_sign_seedbytes() == Ed25519.seedSize && crypto_sign_publickeybytes() == Ed25519.publicKeySize
    && crypto_sign_secretkeybytes() == SealedBox.sodiumSecretKeySize

  static func ready() throws(CryptoError) {
    guard isReady else { throw .library(call: "sodium_init", queue: []) }
  }
}

/// Anonymous sealed boxes (libsodium's `crypto_box_seal`) to a device's Ed25519 public key:
/// how a notebook key generation reaches each member, through relays that cannot open it
/// (docs/design/sync-v3.md, section 4).
///
/// The recipient's Ed25519 public key is converted to its X25519 form
/// (`crypto_sign_ed25519_pk_to_curve25519`); the box is an ephemeral X25519 key (32 bytes)
/// and XSalsa20-Poly1305 of the plaintext (plaintext + 16 bytes): 48 bytes more than the
/// plaintext, 80 for a 32-byte key. It says nothing about who sealed it: the membership
/// log's signature does that. The recipient opens it with its own identity key, converted
/// the same way (`crypto_sign_seed_keypair` from the identity seed, then
/// `crypto_sign_ed25519_sk_to_curve25519`), only for the moment of the call.
public enum SealedBox {
  /// Bytes a box adds to its plaintext (`crypto_box_SEALBYTES`).
  public static let overhead = 48
  /// Boxes carry keys, not content: anything longer is refused both ways.
  public static let maximumPlaintextSize = 4096
  static let x25519KeySize = 32
  /// libsodium's Ed25519 secret key: the seed, then the public key.
  static let sodiumSecretKeySize = 64

  /// Seals `plaintext` (1 to 4,096 bytes) to the device whose raw Ed25519 public key is
  /// `publicKey`. Every call draws a fresh ephemeral key, so two boxes of the same bytes
  /// differ. A key of the wrong size, or one that is not a usable curve point, is `.malformed`.
  public static func seal(_ plaintext: [UInt8], to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
    try plaintext.withUnsafeBufferPointer { bytes throws(CryptoError) in
      try seal(UnsafeRawBufferPointer(bytes), to: publicKey)
    }
  }

  /// Seals a secret (a notebook key) without copying it into an array first.
  public static func seal(_ plaintext: SecureBytes, to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
    let sealed: Result<[UInt8], CryptoError> = plaintext.withUnsafeBytes { bytes in
      Result { () throws(CryptoError) in try seal(bytes, to: publicKey) }
    }
    return try sealed.get()
  }

  /// Opens a box sealed to `key`'s public key. Any other recipient, and any change to the
  /// box, is `.authenticationFailed`; a box too short or too long to be one is `.malformed`.
  /// The plaintext comes back in locked memory (it is a key).
  public static func open(_ box: [UInt8], with key: Ed25519.SigningKey) throws(CryptoError) -> SecureBytes {
    try Sodium.ready()
    guard box.count > overhead, box.count <= overhead + maximumPlaintextSize else { throw .malformed }
    let recipient = try x25519PublicKey(ed25519: key.publicKey)
    let secret = try x25519SecretKey(of: key)
    let plaintext = SecureBytes(zeroedCount: box.count - overhead)
    try plaintext.fill { output throws(CryptoError) in
      let result = secret.withUnsafeBytes { secretBytes in
        crypto_box_seal_open(
          output.baseAddress!, box, UInt64(box.count), recipient,
          secretBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
      guard result == 0 else { throw .authenticationFailed }
    }
    return plaintext
  }

  private static func seal(_ plaintext: UnsafeRawBufferPointer, to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
    try Sodium.ready()
    guard (1...maximumPlaintextSize).contains(plaintext.count) else { throw .malformed }
    let recipient = try x25519PublicKey(ed25519: publicKey)
    var box = [UInt8](repeating: 0, count: plaintext.count + overhead)
    let result = crypto_box_seal(
      &box, plaintext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count), recipient)
    guard result == 0 else { throw .library(call: "crypto_box_seal", queue: []) }
    return box
  }

  /// The X25519 form of a raw Ed25519 public key. libsodium refuses points of small order
  /// and points outside the main subgroup: such a key is `.malformed`.
  static func x25519PublicKey(ed25519 publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
    try Sodium.ready()
    guard publicKey.count == Ed25519.publicKeySize else { throw .malformed }
    var converted = [UInt8](repeating: 0, count: x25519KeySize)
    guard crypto_sign_ed25519_pk_to_curve25519(&converted, publicKey) == 0 else { throw .malformed }
    return converted
  }

  /// The X25519 secret of a signing key, made from its seed as libsodium makes it. Every
  /// intermediate (seed, libsodium's 64-byte secret key) is in locked memory and wiped when
  /// this returns; the result is wiped when the caller lets it go. libsodium's public key
  /// from the seed must be the one OpenSSL made, or the two libraries disagree about the key.
  static func x25519SecretKey(of key: Ed25519.SigningKey) throws(CryptoError) -> SecureBytes {
    let (sodiumPublic, sodiumSecret) = try sodiumKeyPair(seed: try key.seed())
    guard sodiumPublic == key.publicKey else { throw .library(call: "crypto_sign_seed_keypair(public key)", queue: []) }
    let converted = SecureBytes(zeroedCount: x25519KeySize)
    try converted.fill { output throws(CryptoError) in
      let result = sodiumSecret.withUnsafeBytes {
        crypto_sign_ed25519_sk_to_curve25519(output.baseAddress!, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
      guard result == 0 else { throw .library(call: "crypto_sign_ed25519_sk_to_curve25519", queue: []) }
    }
    return converted
  }

  /// libsodium's Ed25519 key pair for a seed (`crypto_sign_seed_keypair`): the public key,
  /// and the 64-byte secret key (seed, then public key) in locked memory.
  static func sodiumKeyPair(seed: SecureBytes) throws(CryptoError) -> (publicKey: [UInt8], secretKey: SecureBytes) {
    try Sodium.ready()
    guard seed.count == Ed25519.seedSize else { throw .malformed }
    let secret = SecureBytes(zeroedCount: sodiumSecretKeySize)
    var publicKey = [UInt8](repeating: 0, count: Ed25519.publicKeySize)
    try secret.fill { output throws(CryptoError) in
      let result = seed.withUnsafeBytes {
        crypto_sign_seed_keypair(&publicKey, output.baseAddress!, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
      guard result == 0 else { throw .library(call: "crypto_sign_seed_keypair", queue: []) }
    }
    return (publicKey, secret)
  }
}
