import MemoCore
import MemoCrypto
import MemoSystem

/// The node's secrets besides the device key: the identity key (who this device is), the
/// discovery key (its rotating advertisement) and the trust store (whom it trusts, with their
/// discovery keys). Without a passphrase they are plain files (version 1). With one they are
/// sealed under the device key (`SealedSecretFile`), so a stolen disk or a copied home holds
/// nothing that lets anyone act as this device, recognise it, or know its peers' keys until
/// the passphrase unlocks it. Only the identity's public key stays readable (`memo-peer id`).
///
/// The mode follows the device key file (`DeviceKeys.SecretMode`): under a version-3 wrapped
/// key a plain secret is refused (something replaced it: accepting it would let a planted
/// trust store or identity in), under version 2 (a home protected before this) both are read.
public struct NodeSecrets: Sendable {
  public let paths: NodePaths
  let keys: DeviceKeys

  public init(paths: NodePaths, keys: DeviceKeys? = nil) {
    self.paths = paths
    self.keys = keys ?? DeviceKeys(paths: paths)
  }

  /// The Ed25519 seed behind the device ID and the TLS certificate, made on first use.
  public func identitySeed() throws -> SecureBytes { try secret(KeyFile.identity(paths)) }

  /// The discovery key, made on first use.
  public func discoveryKey() throws -> SecureBytes { try secret(KeyFile.discovery(paths)) }

  /// The identity's raw public key: readable while locked (a sealed identity keeps it in
  /// clear), so `memo-peer id` works then. Makes the identity on first use, like `identitySeed`.
  public func identityPublicKey() throws -> [UInt8] {
    let file = KeyFile.identity(paths)
    if file.exists, case .sealed(let sealed) = try file.contents() { return sealed.publicPart }
    return try publicKey(of: try identitySeed())
  }

  // MARK: - Reading

  func secret(_ file: KeyFile) throws -> SecureBytes {
    let mode = try keys.secretMode()
    guard file.exists else { return try create(file, mode: mode) }
    switch try file.contents() {
    case .plain(let key):
      if case .sealed = mode { throw Self.unsealedSecret(file.path, role: file.role) }
      return key
    case .sealed(let sealed):
      var plain = try sealed.open(with: try Self.key(mode, opening: file.path), path: file.path)
      defer { SecureBytes.wipe(&plain) }
      guard plain.count == AES256GCMKey.keySize else {
        throw MemoPeerError(.wrongKey, "\(file.path) holds a key of the wrong size", hint: "restore it from a backup")
      }
      return SecureBytes(copying: plain)
    case .wrapped:
      throw MemoPeerError(.wrongKey, "\(file.path) is not a memo-peer \(file.role)", hint: "restore it from a backup")
    }
  }

  /// A fresh key, plain or sealed as the node's mode says. Never replaces a file: another
  /// process making it at the same moment wins, and its key is read instead.
  private func create(_ file: KeyFile, mode: DeviceKeys.SecretMode) throws -> SecureBytes {
    guard mode.isProtected else { return try file.loadOrCreate() }
    guard let deviceKey = mode.deviceKey else { throw Self.lockedError }
    let key: SecureBytes
    do { key = try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the \(file.role)", diagnostics: "\(error)")
    }
    do {
      try file.write(sealing: key, publicPart: try publicPart(of: key, for: file), under: deviceKey, exclusive: true)
    } catch {
      guard file.exists else { throw error }
      return try secret(file)
    }
    return key
  }

  /// The device key that opens a sealed secret in this mode, or why there is none.
  static func key(_ mode: DeviceKeys.SecretMode, opening path: String) throws -> SecureBytes {
    if let key = mode.deviceKey { return key }
    guard mode.isProtected else {
      throw MemoPeerError(
        .keyMissing, "\(path) is sealed under a device key this node does not have",
        hint: "restore the key directory of this device")
    }
    throw lockedError
  }

  /// Every command that needs this device's identity or its trust store while it is locked.
  public static let lockedError = MemoPeerError(
    .locked,
    "this node is locked: its identity and the devices it trusts cannot be read until it is unlocked",
    remedy: .unlock(device: nil))

  static func unsealedSecret(_ path: String, role: String) -> MemoPeerError {
    MemoPeerError(
      .wrongKey,
      "\(path) is stored unsealed, but this node seals its \(role) under its passphrase: the file was replaced, so it is not used",
      hint: "restore the file from a backup of this device")
  }

  /// Replaces the discovery key with a fresh one (plain or sealed as the node's mode says),
  /// atomically: after a revocation, so that the revoked device, which knew the old one,
  /// no longer recognises this node's advertisements. Trusted devices learn the new key at
  /// their next connection (`hello`); until then they find this node by trying the
  /// advertisements they do not recognise (`TrustedPeer.discoveryKeyStale`).
  public func rotateDiscoveryKey() throws {
    let file = KeyFile.discovery(paths)
    let key: SecureBytes
    do { key = try SecureBytes.random(count: AES256GCMKey.keySize) } catch {
      throw MemoPeerError(.crypto, "could not draw random bytes for the discovery key", diagnostics: "\(error)")
    }
    let mode = try keys.secretMode()
    guard mode.isProtected else { return try file.write(plain: key) }
    guard let deviceKey = mode.deviceKey else { throw Self.lockedError }
    try file.write(sealing: key, publicPart: [], under: deviceKey)
  }

  // MARK: - Changing the mode (`protect`, `unlock`)

  /// Seals every secret still stored plain under `deviceKey`: on `protect` (before the key
  /// file is written), and at the first unlock of a home protected before secrets were sealed.
  /// Each file is replaced atomically; one already sealed is left as it is.
  func sealPlainSecrets(with deviceKey: SecureBytes) throws {
    for file in [KeyFile.identity(paths), KeyFile.discovery(paths)] where file.exists {
      guard case .plain(let key) = try file.contents() else { continue }
      try file.write(sealing: key, publicPart: try publicPart(of: key, for: file), under: deviceKey)
    }
    try TrustStore(paths: paths, keys: keys).rewrite(sealedUnder: deviceKey, opening: deviceKey)
  }

  /// Writes every sealed secret back as a plain file (`protect none`, after the key file).
  func unsealSecrets(with deviceKey: SecureBytes) throws {
    for file in [KeyFile.identity(paths), KeyFile.discovery(paths)] where file.exists {
      guard case .sealed(let sealed) = try file.contents() else { continue }
      var plain = try sealed.open(with: deviceKey, path: file.path)
      defer { SecureBytes.wipe(&plain) }
      try file.write(plain: SecureBytes(copying: plain))
    }
    try TrustStore(paths: paths, keys: keys).rewrite(sealedUnder: nil, opening: deviceKey)
  }

  private func publicPart(of key: SecureBytes, for file: KeyFile) throws -> [UInt8] {
    file.publicPartSize == 0 ? [] : try publicKey(of: key)
  }

  private func publicKey(of seed: SecureBytes) throws -> [UInt8] {
    do { return try Ed25519.publicKey(seed: seed) } catch {
      throw MemoPeerError(.crypto, "could not derive the identity's public key", diagnostics: "\(error)")
    }
  }
}
