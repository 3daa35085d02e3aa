import Foundation
import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// The trust store: `keys/trusted-peers.json`, 0600, in the key directory because it holds
/// the peers' discovery keys (each one lets its holder recognise a device on the LAN).
/// Written whole and atomically (temp file, fsync, rename), so a crash leaves either the
/// old list or the new one. Format: docs/FORMATS.md.
public struct TrustStore: Sendable {
  public let path: String
  let directory: String

  public init(paths: NodePaths) {
    directory = paths.keyDirectory
    path = paths.keyDirectory + "/trusted-peers.json"
  }

  public func load() throws -> TrustList {
    guard PrivateFiles.exists(path) else { return TrustList() }
    try PrivateFiles.checkPrivate(directory, role: "key directory", expectedMode: "700")
    try PrivateFiles.checkPrivate(path, role: "trust store", expectedMode: "600")
    let bytes = try PrivateFiles.read(path, limit: 4 << 20)
    guard let list = try? JSONDecoder().decode(TrustList.self, from: Data(bytes)) else {
      throw MemoPeerError(
        .storage, "the trust store \(path) is damaged; no peer is trusted until it is fixed",
        hint: "restore it from a backup, or move it aside and pair again")
    }
    guard list.version <= TrustList.currentVersion else {
      throw MemoPeerError(
        .newerDatabase, "the trust store was written by a newer memo-peer (version \(list.version))",
        hint: "upgrade memo-peer")
    }
    return list
  }

  public func save(_ list: TrustList) throws {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try PrivateFiles.writeAtomically(Array(try encoder.encode(list)) + [0x0A], to: path)
  }

  /// Loads, changes and saves (when anything changed) under an exclusive lock on the store,
  /// so two commands (or a command and the daemon learning a discovery key) never lose each
  /// other's change.
  @discardableResult
  public func update<T>(_ change: (inout TrustList) throws -> T) throws -> T {
    try PrivateFiles.ensureDirectory(directory, role: "key directory")
    let lockPath = directory + "/trusted-peers.lock"
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw PrivateFiles.ioError(errno, "cannot open \(lockPath)") }
    defer { close(fd) }
    guard flock(fd, LOCK_EX) == 0 else { throw PrivateFiles.ioError(errno, "cannot lock \(lockPath)") }
    let before = try load()
    var list = before
    let result = try change(&list)
    // Unchanged (a discovery key learnt again on every connection): no rewrite, no fsyncs.
    if list != before { try save(list) }
    return result
  }

  /// Changes whenever the file is replaced: the daemon polls it to notice removals.
  public func fingerprint() -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { return "absent" }
    return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
  }
}
