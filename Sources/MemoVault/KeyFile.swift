import MemoCore
import MemoCrypto
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// A 256-bit secret kept in the key directory, never in the data directory, never exported.
///
/// File formats (docs/FORMATS.md). Version 1, 38 bytes: a 4-byte magic naming the key's
/// purpose, version `0x01`, protection class `0x00` (none: stored unwrapped), then the 32 key
/// bytes. Versions 2 and 3 of the device key: the key wrapped under a passphrase
/// (`WrappedKey`). Version 3 of the identity and discovery keys: sealed under the device key
/// (`SealedSecretFile`), on a node with a passphrase.
public struct KeyFile: Sendable {
  /// The device key: seals memo content at rest on this machine.
  public static func device(_ paths: NodePaths) -> KeyFile {
    KeyFile(path: paths.deviceKeyPath, directory: paths.keyDirectory, magic: "MPDK", role: "device key")
  }

  /// The discovery key: derives the rotating advertisement name and tag; shared only with
  /// paired peers.
  public static func discovery(_ paths: NodePaths) -> KeyFile {
    KeyFile(
      path: paths.keyDirectory + "/discovery.key", directory: paths.keyDirectory, magic: "MPDS", role: "discovery key")
  }

  /// The identity key: the Ed25519 seed behind the device ID and the TLS certificate.
  public static func identity(_ paths: NodePaths) -> KeyFile {
    KeyFile(
      path: paths.keyDirectory + "/identity.key", directory: paths.keyDirectory, magic: "MPID", role: "identity key")
  }

  /// The listing key: seals a second copy of the titles of memos not marked private, so they
  /// can be listed while the device key is locked. Always protection none.
  public static func listing(_ paths: NodePaths) -> KeyFile {
    KeyFile(path: paths.listingKeyPath, directory: paths.keyDirectory, magic: "MPLK", role: "listing key")
  }

  public let path: String
  let directory: String
  let magic: [UInt8]
  let role: String

  init(path: String, directory: String, magic: String, role: String) {
    self.path = path
    self.directory = directory
    self.magic = Array(magic.utf8)
    self.role = role
  }

  static let version: UInt8 = 1
  static let protectionNone: UInt8 = 0
  static let fileSize = 4 + 1 + 1 + AES256GCMKey.keySize

  /// What a key file holds. `@_spi(Fuzzing) public` with `parse`, for Tests/Fuzz.
  @_spi(Fuzzing) public enum Contents {
    case plain(SecureBytes)
    case wrapped(WrappedKey)
    /// Sealed under the device key (identity and discovery keys of a protected node).
    case sealed(SealedSecretFile)

    var protection: ProtectionClass {
      if case .wrapped(let key) = self { return key.protection }
      return .none
    }
  }

  public var exists: Bool { PrivateFiles.exists(path) }

  /// Changes whenever the file is replaced (a key rotated): the daemon compares it to
  /// notice a new discovery key.
  public func fingerprint() -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { return "absent" }
    return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
  }

  /// Reads the file, checking the key directory and file permissions first.
  func contents() throws -> Contents {
    try PrivateFiles.checkPrivate(directory, role: "key directory", expectedMode: "700")
    try PrivateFiles.checkPrivate(path, role: role, expectedMode: "600")
    var bytes = try PrivateFiles.readSecret(path, limit: 4096)
    defer { SecureBytes.wipe(&bytes) }
    return try parse(bytes)
  }

  /// What the file's bytes hold, or an error naming the file: the decoder the fuzz targets
  /// run (`contents()` reads the file first). `@_spi(Fuzzing) public`: Tests/Fuzz
  /// (`key-files`) reaches it without `@testable import`.
  @_spi(Fuzzing) public func parse(_ bytes: [UInt8]) throws -> Contents {
    guard bytes.count >= 6, Array(bytes[0..<4]) == magic else {
      throw MemoPeerError(
        .wrongKey, "\(path) is not a memo-peer \(role)",
        hint: "restore the original key file; without it the data it protects cannot be read")
    }
    if bytes[4] == Self.version && bytes[5] == Self.protectionNone && bytes.count == Self.fileSize {
      return .plain(SecureBytes(copying: bytes[6...]))
    }
    if bytes[4] == SealedSecretFile.version, magic != Array("MPDK".utf8), magic != Array("MPLK".utf8) {
      guard let sealed = SealedSecretFile.decode(bytes, magic: magic, publicPart: publicPartSize) else {
        throw MemoPeerError(
          .wrongKey, "\(path) is damaged (its sealed key cannot be parsed)",
          hint: "restore the key file from a backup of this device")
      }
      return .sealed(sealed)
    }
    if [WrappedKey.legacyVersion, WrappedKey.version].contains(bytes[4]), magic == Array("MPDK".utf8) {
      guard let wrapped = try WrappedKey.decode(bytes, magic: magic, source: path) else {
        throw MemoPeerError(
          .wrongKey, "\(path) is damaged (its wrapped key cannot be parsed)",
          hint: "restore the key file from a backup of this device")
      }
      return .wrapped(wrapped)
    }
    if bytes[4] > WrappedKey.version {
      throw MemoPeerError(
        .newerDatabase, "the \(role) uses a format this memo-peer does not know (version \(bytes[4]))",
        hint: "upgrade memo-peer")
    }
    throw MemoPeerError(
      .wrongKey, "\(path) is damaged (version \(bytes[4]), \(bytes.count) bytes)",
      hint: "restore the key file from a backup of this device")
  }

  /// Loads an unwrapped key. A wrapped one is opened through `DeviceKeys`, a sealed one
  /// through `NodeSecrets`.
  public func load() throws -> SecureBytes {
    switch try contents() {
    case .plain(let key): return key
    case .wrapped, .sealed:
      throw MemoPeerError(.locked, "the \(role) is protected by a passphrase", remedy: .unlock(device: nil))
    }
  }

  /// Bytes of the public part kept in clear before a sealed key: the identity's Ed25519
  /// public key (so the device ID stays readable while locked); none for the others.
  var publicPartSize: Int { magic == Array("MPID".utf8) ? 32 : 0 }

  /// Writes the key sealed under `deviceKey` (version 3), atomically.
  func write(sealing key: SecureBytes, publicPart: [UInt8], under deviceKey: SecureBytes, exclusive: Bool = false)
    throws
  {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    var plain = key.withUnsafeBytes { Array($0) }
    defer { SecureBytes.wipe(&plain) }
    let file = try SealedSecretFile.seal(plain, magic: magic, publicPart: publicPart, under: deviceKey)
    try PrivateFiles.writeAtomically(file.encoded, to: path, exclusive: exclusive)
  }

  /// Creates a fresh key from OpenSSL's CSPRNG, never replacing an existing one.
  public func create() throws -> SecureBytes {
    let key: SecureBytes
    do { key = try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the \(role)", diagnostics: "\(error)")
    }
    try write(plain: key, exclusive: true)
    return key
  }

  /// Loads the key, creating it on first use (or loading the one another process created
  /// at the same moment: `create` never replaces a file, and one appears only complete).
  public func loadOrCreate() throws -> SecureBytes {
    if exists { return try load() }
    do {
      return try create()
    } catch {
      // Another process made it between the check and `create`: use that one.
      guard exists else { throw error }
      return try load()
    }
  }

  /// Writes the key unwrapped (version 1), atomically.
  func write(plain key: SecureBytes, exclusive: Bool = false) throws {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    var file = magic + [Self.version, Self.protectionNone]
    key.withUnsafeBytes { file.append(contentsOf: $0) }
    defer { SecureBytes.wipe(&file) }
    try PrivateFiles.writeAtomically(file, to: path, exclusive: exclusive)
  }

  /// Writes the key wrapped (version 2), atomically: the old file stays until the new one is
  /// complete on disk.
  func write(wrapped: WrappedKey, exclusive: Bool = false) throws {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    try PrivateFiles.writeAtomically(wrapped.encoded(magic: magic), to: path, exclusive: exclusive)
  }
}
