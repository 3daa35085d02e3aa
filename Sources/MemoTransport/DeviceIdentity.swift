internal import COpenSSL
import MemoCore
import MemoCrypto
import MemoProtocol

/// This device's Ed25519 identity key and the self-signed certificate TLS presents for it.
///
/// The key is made from a 32-byte seed kept in the key directory (`identity.key`); the
/// certificate is made fresh in memory at each start, because peers pin the key, not the
/// certificate. The certificate names nobody: its subject is the fixed string
/// `memo-peer device`, so even a peer sees only the key. The key is MemoCrypto's
/// `Ed25519.SigningKey` (which owns the EVP_PKEY): TLS and sync-version-3 signatures use
/// the same object, so the process holds one copy of the secret. Owns its X509.
///
/// `@unchecked Sendable`: the certificate pointer is immutable after init, the signing key
/// is Sendable, and OpenSSL allows concurrent read-only use of keys and certificates.
public final class DeviceIdentity: @unchecked Sendable {
  /// Signs as this device (sync version 3: bindings, ops, revisions) and is the TLS key.
  public let signingKey: Ed25519.SigningKey
  let certificate: OpaquePointer
  public let publicKey: [UInt8]
  public let deviceID: DeviceID

  public static let seedSize = 32
  /// Certificate validity. Nothing checks it (trust is the pinned key), but some tools
  /// refuse certificates that have expired, so it is long.
  static let validityDays = 36_500

  public convenience init(seed: SecureBytes) throws(TransportError) {
    guard seed.count == Self.seedSize else { throw TransportError(.library, "identity seed must be 32 bytes") }
    let key: Ed25519.SigningKey
    do { key = try Ed25519.SigningKey(seed: seed) } catch {
      throw TransportError(.library, "making the identity key: \(error)")
    }
    try self.init(signingKey: key)
  }

  public init(signingKey: Ed25519.SigningKey) throws(TransportError) {
    self.signingKey = signingKey
    publicKey = signingKey.publicKey
    deviceID = try Self.deviceID(publicKey: publicKey)
    certificate = try signingKey.withEVPKey { key throws(TransportError) in try Self.selfSignedCertificate(for: key) }
  }

  deinit { X509_free(certificate) }

  /// Device ID = SHA-256 of the raw 32-byte Ed25519 public key.
  public static func deviceID(publicKey: [UInt8]) throws(TransportError) -> DeviceID {
    guard let hash = try? SHA256.hash(publicKey), let id = DeviceID(bytes: hash) else {
      throw TransportError(.library, "SHA-256 of the public key failed")
    }
    return id
  }

  static func rawPublicKey(_ key: OpaquePointer) throws(TransportError) -> [UInt8] {
    var length = 0
    guard EVP_PKEY_get_raw_public_key(key, nil, &length) == 1, length == 32 else {
      throw TransportError(.handshakeFailed, "the key is not an Ed25519 key")
    }
    var bytes = [UInt8](repeating: 0, count: length)
    guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1 else {
      throw .openSSL(.library, "EVP_PKEY_get_raw_public_key")
    }
    return bytes
  }

  /// The device ID of the key in a peer's certificate; only Ed25519 keys are accepted.
  static func deviceID(ofCertificate certificate: OpaquePointer) throws(TransportError) -> DeviceID {
    guard let key = X509_get0_pubkey(certificate) else {
      throw TransportError(.handshakeFailed, "certificate has no key")
    }
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 else {
      throw TransportError(.handshakeFailed, "the peer's key is not Ed25519")
    }
    return try deviceID(publicKey: rawPublicKey(key))
  }

  private static func selfSignedCertificate(for key: OpaquePointer) throws(TransportError) -> OpaquePointer {
    guard let certificate = X509_new() else { throw .openSSL(.library, "X509_new") }
    var serial = [UInt8](repeating: 0, count: 16)
    guard RAND_bytes(&serial, Int32(serial.count)) == 1 else {
      X509_free(certificate)
      throw .openSSL(.library, "RAND_bytes")
    }
    serial[0] &= 0x7F  // a positive serial number
    let serialNumber = BN_bin2bn(serial, Int32(serial.count), nil)
    defer { BN_free(serialNumber) }
    let ok =
      X509_set_version(certificate, 2) == 1
      && BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) != nil
      && X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil
      && X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validityDays), 0, nil) != nil
      && X509_set_pubkey(certificate, key) == 1
      && X509_NAME_add_entry_by_txt(
        X509_get_subject_name(certificate), "CN", MBSTRING_ASC, Array("memo-peer device".utf8), -1, -1, 0) == 1
      && X509_set_issuer_name(certificate, X509_get_subject_name(certificate)) == 1
      && X509_sign(certificate, key, nil) > 0  // Ed25519 signs without a separate digest
    guard ok else {
      X509_free(certificate)
      throw .openSSL(.library, "building the self-signed certificate")
    }
    return certificate
  }

  /// The certificate in PEM, for tools (`memo-peer id --certificate`).
  public func certificatePEM() throws(TransportError) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL(.library, "BIO_new") }
    defer { BIO_free(bio) }
    guard PEM_write_bio_X509(bio, certificate) == 1 else { throw .openSSL(.library, "PEM_write_bio_X509") }
    var text: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1024)
    while true {
      let count = BIO_read(bio, &chunk, Int32(chunk.count))
      guard count > 0 else { break }
      text.append(contentsOf: chunk[0..<Int(count)])
    }
    return String(decoding: text, as: UTF8.self)
  }
}
