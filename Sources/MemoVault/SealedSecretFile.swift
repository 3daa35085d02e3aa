import MemoCore
import MemoCrypto

/// A secret file sealed under the device key (docs/FORMATS.md): the identity and discovery
/// keys (version 3) and the trust store (version 2) of a node with a passphrase.
///
/// ```
/// magic (4) ‖ version ‖ public part (identity key: its 32-byte Ed25519 public key; else none)
///   ‖ sealed value (format 1: 0x01 ‖ nonce ‖ ciphertext ‖ tag)
/// ```
///
/// The additional data is `"memo-peer/1" NUL "sealed-secret" NUL header`: a file whose magic,
/// version or public key was edited, or that was sealed for another purpose, fails to open.
/// Without the device key (a locked node, a copied home) nothing in it can be read but the
/// public part.
///
/// `@_spi(Fuzzing) public` (the type and `decode`): fuzzed by Tests/Fuzz (`key-files`)
/// without `@testable import`, which a release build of the fuzz targets cannot use.
@_spi(Fuzzing) public struct SealedSecretFile: Sendable {
  /// The version byte of sealed identity and discovery keys.
  public static let version: UInt8 = 3

  let header: [UInt8]
  let sealed: [UInt8]
  let publicPartSize: Int

  var publicPart: [UInt8] { Array(header.dropFirst(5)) }
  var encoded: [UInt8] { header + sealed }

  static func seal(
    _ plain: [UInt8], magic: [UInt8], version: UInt8 = version, publicPart: [UInt8], under deviceKey: SecureBytes
  ) throws -> SealedSecretFile {
    let header = magic + [version] + publicPart
    do {
      let sealed = try AES256GCMKey(deviceKey).seal(plain, associatedData: SealingContext.sealedSecret(header: header))
      return SealedSecretFile(header: header, sealed: sealed, publicPartSize: publicPart.count)
    } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to seal a key", diagnostics: "\(error)")
    }
  }

  /// The plaintext; the caller wipes it. A wrong device key or an edited file is `integrity`.
  func open(with deviceKey: SecureBytes, path: String) throws -> [UInt8] {
    do {
      return try AES256GCMKey(deviceKey).open(sealed, associatedData: SealingContext.sealedSecret(header: header))
    } catch CryptoError.authenticationFailed {
      throw MemoPeerError(
        .integrity, "\(path) cannot be opened with this node's device key: it was changed, or sealed on another node",
        hint: "restore the file from a backup of this device (or, for the trust store, move it aside and pair again)")
    } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to open \(path)", diagnostics: "\(error)")
    }
  }

  /// Parses a sealed file of `version`, with `publicPart` clear bytes after the version;
  /// `exactPlain` is the plaintext size when it is fixed (a key). Nil for anything malformed.
  public static func decode(
    _ bytes: [UInt8], magic: [UInt8], version: UInt8 = version, publicPart: Int, exactPlain: Int? = 32
  ) -> SealedSecretFile? {
    let headerSize = 5 + publicPart
    guard bytes.count >= headerSize + AES256GCMKey.overhead, Array(bytes[0..<4]) == magic, bytes[4] == version
    else { return nil }
    if let exactPlain, bytes.count != headerSize + AES256GCMKey.overhead + exactPlain { return nil }
    return SealedSecretFile(
      header: Array(bytes[0..<headerSize]), sealed: Array(bytes[headerSize...]), publicPartSize: publicPart)
  }
}
