import MemoCore
import MemoCrypto

/// The device key: 256 random bits that seal every memo at rest on this machine.
///
/// File format version 1 (docs/FORMATS.md), 38 bytes: `MPDK`, version `0x01`, protection
/// class `0x00` (none: stored unwrapped, for headless hosts; wrapped classes come with the
/// lock issue), then the 32 key bytes. It lives in the key directory, never in the data
/// directory, and is never part of an export.
public enum DeviceKey {
  static let magic: [UInt8] = Array("MPDK".utf8)
  static let version: UInt8 = 1
  static let protectionNone: UInt8 = 0
  static let fileSize = 4 + 1 + 1 + AES256GCMKey.keySize

  /// Loads the key, checking the key directory and file permissions first.
  public static func load(paths: NodePaths) throws -> SecureBytes {
    try PrivateFiles.checkPrivate(paths.keyDirectory, role: "key directory", expectedMode: "700")
    try PrivateFiles.checkPrivate(paths.deviceKeyPath, role: "device key", expectedMode: "600")
    var bytes = try PrivateFiles.read(paths.deviceKeyPath, limit: 4096)
    defer { for index in bytes.indices { bytes[index] = 0 } }
    guard bytes.count == fileSize, Array(bytes[0..<4]) == magic else {
      throw MemoPeerError(
        .wrongKey, "\(paths.deviceKeyPath) is not a memo-peer device key",
        hint: "restore the original key file; without it the memos cannot be read")
    }
    guard bytes[4] == version, bytes[5] == protectionNone else {
      throw MemoPeerError(
        .newerDatabase, "the device key uses a format this memo-peer does not know (version \(bytes[4]))",
        hint: "upgrade memo-peer")
    }
    return SecureBytes(copying: bytes[6...])
  }

  /// Creates a fresh key from OpenSSL's CSPRNG, never replacing an existing one.
  public static func create(paths: NodePaths) throws -> SecureBytes {
    try PrivateFiles.ensureDirectory(paths.keyDirectory, role: "key directory")
    let key: SecureBytes
    do { key = try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the device key", diagnostics: "\(error)")
    }
    var file = magic + [version, protectionNone]
    key.withUnsafeBytes { file.append(contentsOf: $0) }
    defer { for index in file.indices { file[index] = 0 } }
    try PrivateFiles.writeAtomically(file, to: paths.deviceKeyPath, exclusive: true)
    return key
  }
}
