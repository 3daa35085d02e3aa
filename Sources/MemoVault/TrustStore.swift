import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The trust store: `keys/trusted-peers.json`, 0600, in the key directory because it holds
/// the peers' discovery keys (each one lets its holder recognise a device on the LAN).
/// Written whole and atomically (temp file, fsync, rename), so a crash leaves either the
/// old list or the new one. Format: docs/FORMATS.md. Without a passphrase the file is the
/// JSON list (version 1); with one it is that JSON sealed under the device key (version 2,
/// `MPTS`), so while the node is locked nobody can read whom it trusts — and every use of
/// it fails as `locked`.
public struct TrustStore: Sendable {
  public let path: String
  let directory: String
  let keys: DeviceKeys

  /// Magic and version of the sealed file.
  static let sealedMagic = Array("MPTS".utf8)
  static let sealedVersion: UInt8 = 2
  static let limit = 4 << 20

  public init(paths: NodePaths, keys: DeviceKeys? = nil) {
    directory = paths.keyDirectory
    path = paths.keyDirectory + "/trusted-peers.json"
    self.keys = keys ?? DeviceKeys(paths: paths)
  }

  public func load() throws -> TrustList {
    let mode = try keys.secretMode()
    guard PrivateFiles.exists(path) else {
      if mode.isProtected && mode.deviceKey == nil { throw NodeSecrets.lockedError }
      return TrustList()
    }
    return try decode(try readJSON(opening: { try NodeSecrets.key(mode, opening: path) }, refusePlain: mode.isSealed))
  }

  /// The JSON of the file, opening a sealed file with `key()`. The caller wipes it.
  private func readJSON(opening key: () throws -> SecureBytes, refusePlain: Bool) throws -> [UInt8] {
    try PrivateFiles.checkPrivate(directory, role: "key directory", expectedMode: "700")
    try PrivateFiles.checkPrivate(path, role: "trust store", expectedMode: "600")
    var bytes = try PrivateFiles.readSecret(path, limit: Self.limit)
    defer { SecureBytes.wipe(&bytes) }
    guard bytes.starts(with: Self.sealedMagic) else {
      if refusePlain { throw NodeSecrets.unsealedSecret(path, role: "trust store") }
      return bytes
    }
    guard
      let sealed = SealedSecretFile.decode(
        bytes, magic: Self.sealedMagic, version: Self.sealedVersion, publicPart: 0, exactPlain: nil)
    else { throw damaged }
    return try sealed.open(with: try key(), path: path)
  }

  private func decode(_ json: [UInt8]) throws -> TrustList {
    var json = json
    defer { SecureBytes.wipe(&json) }
    return try Self.decode(json, path: path)
  }

  /// The list in a store's JSON (the decoder the fuzz targets run); errors name `path`.
  /// `@_spi(Fuzzing) public`: Tests/Fuzz reaches it without `@testable import`.
  @_spi(Fuzzing) public static func decode(_ json: [UInt8], path: String) throws -> TrustList {
    guard let list = try? JSONDecoder().decode(TrustList.self, from: Data(json)) else { throw damaged(path) }
    guard list.version <= TrustList.currentVersion else {
      throw MemoPeerError(
        .newerDatabase, "the trust store was written by a newer memo-peer (version \(list.version))",
        hint: "upgrade memo-peer")
    }
    return list
  }

  private var damaged: MemoPeerError { Self.damaged(path) }

  private static func damaged(_ path: String) -> MemoPeerError {
    MemoPeerError(
      .storage, "the trust store \(path) is damaged; no peer is trusted until it is fixed",
      hint: "restore it from a backup, or move it aside and pair again")
  }

  public func save(_ list: TrustList) throws {
    let mode = try keys.secretMode()
    if mode.isProtected {
      guard let key = mode.deviceKey else { throw NodeSecrets.lockedError }
      try write(list, sealedUnder: key)
    } else {
      try write(list, sealedUnder: nil)
    }
  }

  /// Writes `list` plain (`key` nil) or sealed under `key`.
  private func write(_ list: TrustList, sealedUnder key: SecureBytes?) throws {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    var json = Array(try encoder.encode(list)) + [0x0A]
    defer { SecureBytes.wipe(&json) }
    guard let key else { return try PrivateFiles.writeAtomically(json, to: path) }
    let file = try SealedSecretFile.seal(
      json, magic: Self.sealedMagic, version: Self.sealedVersion, publicPart: [], under: key)
    try PrivateFiles.writeAtomically(file.encoded, to: path)
  }

  /// Rewrites the file in the other format, under the store's lock: sealed under `target`, or
  /// plain when `target` is nil; a sealed file is opened with `key`. No file: nothing to do.
  func rewrite(sealedUnder target: SecureBytes?, opening key: SecureBytes) throws {
    try locked {
      guard PrivateFiles.exists(path) else { return }
      try write(try decode(try readJSON(opening: { key }, refusePlain: false)), sealedUnder: target)
    }
  }

  /// Loads, changes and saves (when anything changed) under an exclusive lock on the store,
  /// so two commands (or a command and the daemon learning a discovery key) never lose each
  /// other's change.
  @discardableResult
  public func update<T>(_ change: (inout TrustList) throws -> T) throws -> T {
    try locked {
      let before = try load()
      var list = before
      let result = try change(&list)
      // Unchanged (a discovery key learnt again on every connection): no rewrite, no fsyncs.
      if list != before { try save(list) }
      return result
    }
  }

  /// Runs `body` holding the exclusive lock on the store.
  private func locked<T>(_ body: () throws -> T) throws -> T {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    return try PrivateFiles.withExclusiveLock(directory + "/trusted-peers.lock", body)
  }

  /// Changes whenever the file is replaced: the daemon polls it to notice removals.
  public func fingerprint() -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { return "absent" }
    return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
  }
}
