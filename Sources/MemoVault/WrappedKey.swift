import MemoCore
import MemoCrypto

/// A key sealed under a passphrase: key file format versions 2 and 3 (docs/FORMATS.md).
///
/// ```
/// magic (4) ‖ version ‖ class ‖ KDF 0x01 (scrypt) ‖ log2 N ‖ r ‖ p ‖ salt (16)
///   ‖ idle timeout (u32, big-endian, seconds) ‖ key id (16) ‖ sealed key (61)
/// ```
///
/// Version 3 also says that the node's other secrets (identity key, discovery key, trust
/// store) are sealed under this key, so a plain copy of one of them is refused; version 2
/// (written before they were) still reads, and is moved to 3 at the next unlock. The
/// version byte is part of the additional data: a version-3 file edited to say 2, to make
/// plain secrets acceptable again, no longer opens.
///
/// The sealed key is AES-256-GCM (sealed-value format 1) under scrypt(passphrase, salt, N,
/// r, p), with everything before it as additional data: a file whose class, cost, timeout or
/// id was edited fails to open exactly as a wrong passphrase does, so protection can never be
/// weakened by editing the header. The key id names the key in the kernel keyring; it is
/// random, not derived from the key, and survives passphrase changes.
///
/// `@_spi(Fuzzing) public` (the type, `decode`, `encoded` and the sizes a seed needs): a key
/// file is outside input, fuzzed by Tests/Fuzz (`key-files`), which builds in release as
/// well and so cannot use `@testable import`. No other module uses it.
@_spi(Fuzzing) public struct WrappedKey: Sendable {
  /// Written before the node's other secrets were sealed: they may be stored plain.
  static let legacyVersion: UInt8 = 2
  /// What `wrap` writes: the node's other secrets are sealed under this key.
  public static let version: UInt8 = 3
  static let kdfScrypt: UInt8 = 1
  public static let saltSize = 16
  public static let keyIDSize = 16
  static let headerSize = 4 + 1 + 1 + 1 + 3 + saltSize + 4 + keyIDSize
  static let fileSize = headerSize + AES256GCMKey.overhead + AES256GCMKey.keySize

  /// `legacyVersion` or `version`.
  var formatVersion: UInt8
  var protection: ProtectionClass
  public internal(set) var parameters: ScryptParameters
  var salt: [UInt8]
  var idleTimeout: UInt32
  var keyID: [UInt8]
  var sealed: [UInt8]

  public init(
    formatVersion: UInt8 = Self.version, protection: ProtectionClass, parameters: ScryptParameters, salt: [UInt8],
    idleTimeout: UInt32, keyID: [UInt8], sealed: [UInt8]
  ) {
    self.formatVersion = formatVersion
    self.protection = protection
    self.parameters = parameters
    self.salt = salt
    self.idleTimeout = idleTimeout
    self.keyID = keyID
    self.sealed = sealed
  }

  /// Seals `key` under `passphrase` with a fresh salt.
  static func wrap(
    _ key: SecureBytes, passphrase: SecureBytes, protection: ProtectionClass, idleTimeout: UInt32, keyID: [UInt8],
    parameters: ScryptParameters, magic: [UInt8]
  ) throws -> WrappedKey {
    var wrapped = WrappedKey(
      protection: protection, parameters: parameters, salt: try random(saltSize), idleTimeout: idleTimeout,
      keyID: keyID, sealed: [])
    let sealer = try crypto {
      try AES256GCMKey(try PassphraseKDF.deriveKey(passphrase: passphrase, salt: wrapped.salt, parameters: parameters))
    }
    var plain = key.withUnsafeBytes { Array($0) }
    defer { for index in plain.indices { plain[index] = 0 } }
    wrapped.sealed = try crypto { try sealer.seal(plain, associatedData: wrapped.additionalData(magic: magic)) }
    return wrapped
  }

  /// Opens the key with `passphrase`. A wrong passphrase (or an edited file) is a
  /// `passphrase` error that never repeats what was typed.
  func unwrap(passphrase: SecureBytes, magic: [UInt8]) throws -> SecureBytes {
    let sealer = try Self.crypto {
      try AES256GCMKey(try PassphraseKDF.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters))
    }
    var plain: [UInt8]
    do { plain = try sealer.open(sealed, associatedData: additionalData(magic: magic)) } catch CryptoError
      .authenticationFailed
    {
      throw MemoPeerError(
        .passphrase, "that passphrase does not unlock this node's key; nothing was changed",
        remedy: .retryPassphrase)
    } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to open the key", diagnostics: "\(error)")
    }
    defer { for index in plain.indices { plain[index] = 0 } }
    guard plain.count == AES256GCMKey.keySize else {
      throw MemoPeerError(.wrongKey, "the wrapped key has the wrong size", hint: "restore the key file from a backup")
    }
    return SecureBytes(copying: plain)
  }

  func header(magic: [UInt8]) -> [UInt8] {
    var bytes = magic + [formatVersion, protection.code, Self.kdfScrypt]
    bytes += [UInt8(parameters.n.trailingZeroBitCount), UInt8(parameters.r), UInt8(parameters.p)]
    bytes += salt
    bytes += withUnsafeBytes(of: idleTimeout.bigEndian) { Array($0) }
    bytes += keyID
    return bytes
  }

  func additionalData(magic: [UInt8]) -> [UInt8] { SealingContext.wrappedKey(header: header(magic: magic)) }

  public func encoded(magic: [UInt8]) -> [UInt8] { header(magic: magic) + sealed }

  /// Whether this file says the node's other secrets are sealed (version 3).
  var sealsSecrets: Bool { formatVersion == Self.version }

  /// Parses a version-2 or version-3 file; `nil` for anything malformed (the caller names the
  /// file). Scrypt costs above `ScryptParameters.maximumMemory` are refused with a message
  /// that says so (`source` names the file).
  public static func decode(_ bytes: [UInt8], magic: [UInt8], source: String) throws -> WrappedKey? {
    guard bytes.count == fileSize, Array(bytes[0..<4]) == magic, [legacyVersion, version].contains(bytes[4]),
      bytes[6] == kdfScrypt,
      let protection = ProtectionClass(code: bytes[5]), protection.isProtected
    else { return nil }
    let parameters = ScryptParameters(
      n: bytes[7] < 64 ? 1 << UInt64(bytes[7]) : 0, r: UInt32(bytes[8]), p: UInt32(bytes[9]))
    guard parameters.isAcceptable else {
      guard parameters.n >= 2, parameters.r >= 1, parameters.p >= 1 else { return nil }
      throw MemoPeerError(
        .wrongKey, parameters.refusal(source),
        hint: "memo-peer never writes such a file: restore the key file from a backup of this device")
    }
    var offset = 10
    func take(_ count: Int) -> [UInt8] {
      defer { offset += count }
      return Array(bytes[offset..<(offset + count)])
    }
    let salt = take(saltSize)
    let timeout = take(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    let keyID = take(keyIDSize)
    return WrappedKey(
      formatVersion: bytes[4], protection: protection, parameters: parameters, salt: salt, idleTimeout: timeout,
      keyID: keyID, sealed: take(bytes.count - offset))
  }

  static func random(_ count: Int) throws -> [UInt8] { try crypto { try SystemRandom.bytes(count) } }

  private static func crypto<R>(_ body: () throws -> R) throws -> R {
    do { return try body() } catch let error as MemoPeerError { throw error } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed", diagnostics: "\(error)")
    }
  }

  private func crypto<R>(_ body: () throws -> R) throws -> R { try Self.crypto(body) }
}
