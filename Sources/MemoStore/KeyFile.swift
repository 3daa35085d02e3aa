import MemoCore
import MemoCrypto

/// A 256-bit secret kept in the key directory, never in the data directory, never exported.
///
/// File format version 1 (docs/FORMATS.md), 38 bytes: a 4-byte magic naming the key's
/// purpose, version `0x01`, protection class `0x00` (none: stored unwrapped, for headless
/// hosts; wrapped classes come with the lock issue), then the 32 key bytes.
public struct KeyFile: Sendable {
  /// The device key: seals every memo at rest on this machine.
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

  public var exists: Bool { PrivateFiles.exists(path) }

  /// Loads the key, checking the key directory and file permissions first.
  public func load() throws -> SecureBytes {
    try PrivateFiles.checkPrivate(directory, role: "key directory", expectedMode: "700")
    try PrivateFiles.checkPrivate(path, role: role, expectedMode: "600")
    var bytes = try PrivateFiles.read(path, limit: 4096)
    defer { for index in bytes.indices { bytes[index] = 0 } }
    guard bytes.count == Self.fileSize, Array(bytes[0..<4]) == magic else {
      throw MemoPeerError(
        .wrongKey, "\(path) is not a memo-peer \(role)",
        hint: "restore the original key file; without it the data it protects cannot be read")
    }
    guard bytes[4] == Self.version, bytes[5] == Self.protectionNone else {
      throw MemoPeerError(
        .newerDatabase, "the \(role) uses a format this memo-peer does not know (version \(bytes[4]))",
        hint: "upgrade memo-peer")
    }
    return SecureBytes(copying: bytes[6...])
  }

  /// Creates a fresh key from OpenSSL's CSPRNG, never replacing an existing one.
  public func create() throws -> SecureBytes {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    let key: SecureBytes
    do { key = try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the \(role)", diagnostics: "\(error)")
    }
    var file = magic + [Self.version, Self.protectionNone]
    key.withUnsafeBytes { file.append(contentsOf: $0) }
    defer { for index in file.indices { file[index] = 0 } }
    try PrivateFiles.writeAtomically(file, to: path, exclusive: true)
    return key
  }

  /// Loads the key, creating it on first use.
  public func loadOrCreate() throws -> SecureBytes { exists ? try load() : try create() }
}
