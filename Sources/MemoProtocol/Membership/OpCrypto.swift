import MemoCore

/// The cryptography the membership log needs, injected: MemoProtocol stays pure and free of
/// C libraries, and tests can count or break what the log calls. The adapter over OpenSSL
/// and libsodium is `MembershipCrypto` in MemoCrypto; there is no other implementation to
/// trust, so nothing here computes a hash or checks a signature itself.
public protocol OpVerifier: Sendable {
  /// Whether `publicKey` is a key a device can own (a curve point not of small order): a
  /// small-order key has signatures anyone can forge.
  func isValidPublicKey(_ publicKey: [UInt8]) -> Bool
  /// Ed25519 verification of `signature` over `message`.
  func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool
  /// SHA-256: an op's id, and a device ID from its key. Nil only if the library fails.
  func sha256(_ bytes: [UInt8]) -> [UInt8]?
  /// The id a genesis with `nonce` by `creator` must name (section 4's derivation); nil
  /// when it cannot be derived.
  func notebookID(creator: DeviceID, nonce: [UInt8]) -> NotebookID?
}

/// The device's identity key, as the builders need it: the public half, and signatures.
public protocol OpSigner {
  var publicKey: [UInt8] { get }
  func signature(for message: [UInt8]) throws -> [UInt8]
}

extension OpVerifier {
  /// The device ID of a raw public key (SHA-256 of it).
  public func device(of publicKey: [UInt8]) -> DeviceID? {
    sha256(publicKey).flatMap { DeviceID(bytes: $0) }
  }

  /// An op's id: SHA-256 of its encoded bytes.
  public func id(of op: NotebookOp) -> OpID? {
    sha256(op.encoded).flatMap { OpID(bytes: $0) }
  }
}
