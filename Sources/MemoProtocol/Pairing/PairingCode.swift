import MemoCore

/// The hash and key derivation the pairing exchange needs, given by the caller: MemoProtocol
/// stays free of C, and the implementation is OpenSSL's (`MemoCrypto.OpenSSLPairingCryptography`:
/// EVP_Digest and EVP_KDF "HKDF"). Never a hand-written primitive.
public protocol PairingCryptography: Sendable {
  /// SHA-256 of `bytes` (32 bytes).
  func sha256(_ bytes: [UInt8]) throws -> [UInt8]
  /// HKDF-SHA256 (RFC 5869), extract and expand.
  func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8]
}

/// The pairing protocol, version 2 (docs/PROTOCOL.md, "Pairing"): what both sides agree on.
public enum PairingProtocol {
  public static let version = 2
  /// ALPN of a pairing connection. A version-1 peer offers or accepts only `memo-peer/1`,
  /// which is how it is recognised and told to update.
  public static let alpn = "memo-peer-pair/2"
  /// Label for SSL_export_keying_material (RFC 8446 §7.5).
  public static let exporterLabel = "EXPORTER-memo-peer-pairing-v2"
  /// Exporter output length: a whole SHA-256 worth of keying material.
  public static let exporterLength = 32
  /// Length of each side's random nonce.
  public static let nonceLength = 32
  /// The largest pairing frame: every pairing message is a small JSON object.
  public static let maximumFrame = 4096
}

/// The six-digit code two people compare when pairing, and the host's commitment to it.
///
/// The code is HKDF-SHA256 over the TLS exporter, with both nonces as salt and both device
/// IDs in the info, reduced mod 10^6. The host commits to its nonce (a SHA-256 over its nonce,
/// the exporter and both device IDs) before it sees the guest's nonce, and reveals it only
/// afterwards. A machine in the middle runs two TLS sessions with two exporters; in each, one
/// nonce it does not choose is fixed only after its own value is (its commitment, or its
/// nonce sent before the reveal), so each session's code is a fresh uniform guess from its
/// point of view: the two codes agree with probability 10^-6 per attempt, however much it
/// computes. Device IDs (SHA-256 of each Ed25519 public key) stand for the keys: they bind
/// the client's certificate too, which the TLS 1.3 exporter does not cover.
public enum PairingCode {
  /// Domain separation for the commitment hash.
  static let commitmentLabel = Array("memo-peer/2 pairing commitment".utf8) + [0]
  /// HKDF info prefix for the code.
  static let codeLabel = Array("memo-peer/2 pairing code".utf8) + [0]
  /// Bytes of HKDF output reduced mod 10^6 (bias below 6 × 10^-14).
  public static let codeBytes = 8

  /// `SHA-256("memo-peer/2 pairing commitment" ‖ 0x00 ‖ nonce_h ‖ exporter ‖ id_host ‖ id_guest)`.
  public static func commitment(
    hostNonce: [UInt8], exporter: [UInt8], host: DeviceID, guest: DeviceID, crypto: any PairingCryptography
  ) throws -> [UInt8] {
    try crypto.sha256(commitmentLabel + hostNonce + exporter + host.bytes + guest.bytes)
  }

  /// `HKDF-SHA256(key: exporter, salt: nonce_h ‖ nonce_g, info: label ‖ 0x00 ‖ id_host ‖
  /// id_guest, 8 bytes)` as a big-endian integer mod 10^6, in six digits.
  public static func code(
    exporter: [UInt8], hostNonce: [UInt8], guestNonce: [UInt8], host: DeviceID, guest: DeviceID,
    crypto: any PairingCryptography
  ) throws -> String {
    let bytes = try crypto.hkdfSHA256(
      key: exporter, salt: hostNonce + guestNonce, info: codeLabel + host.bytes + guest.bytes, length: codeBytes)
    return code(fromBytes: bytes)
  }

  /// Eight bytes as a big-endian integer mod 10^6, zero-padded to six digits.
  public static func code(fromBytes bytes: [UInt8]) -> String {
    let value = bytes.prefix(codeBytes).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
    let digits = String(value % 1_000_000)
    return String(repeating: "0", count: 6 - digits.count) + digits
  }

  /// `123 456`: easier to read aloud and compare.
  public static func display(_ code: String) -> String { code.prefix(3) + " " + code.dropFirst(3) }
}
