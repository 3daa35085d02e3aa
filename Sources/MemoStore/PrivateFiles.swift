import Foundation
import MemoCore
import MemoCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// File-system rules for memo-peer's own files: directories 0700, files 0600, owned by the
/// user, checked the way ssh checks ~/.ssh, and written atomically so a crash or a full
/// disk leaves the previous version in place.
public enum PrivateFiles {
  /// Creates `path` (and missing parents) as 0700, or checks an existing one.
  public static func ensureDirectory(_ path: String, role: String) throws {
    var info = stat()
    if stat(path, &info) == 0 {
      guard (info.st_mode & S_IFMT) == S_IFDIR else {
        throw MemoPeerError(.io, "the \(role) \(path) is not a directory", hint: "move it aside")
      }
      try checkPrivate(path, info: info, role: role, expectedMode: "700")
      return
    }
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty && parent != path && access(parent, F_OK) != 0 {
      try createParents(parent)
    }
    guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
      throw ioError(errno, "cannot create the \(role) \(path)")
    }
    _ = chmod(path, 0o700)
  }

  /// Makes a fresh directory `parent/prefix-XXXXXX` that only the user can enter (mkdtemp
  /// creates it 0700 and fails rather than reuse an existing one).
  public static func makeUniqueDirectory(in parent: String, prefix: String) throws -> String {
    var template = Array((parent + "/" + prefix + "-XXXXXX").utf8CString)
    guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
      throw ioError(errno, "cannot create a private directory in \(parent)")
    }
    return String(nulTerminated: template)
  }

  /// Refuses a file or directory that other users can read, write or enter, or that
  /// belongs to someone else.
  public static func checkPrivate(_ path: String, role: String, expectedMode: String) throws {
    var info = stat()
    guard stat(path, &info) == 0 else { throw ioError(errno, "cannot read the \(role) \(path)") }
    try checkPrivate(path, info: info, role: role, expectedMode: expectedMode)
  }

  private static func checkPrivate(_ path: String, info: stat, role: String, expectedMode: String) throws {
    let mode = info.st_mode & 0o777
    if info.st_uid != geteuid() {
      throw MemoPeerError(
        .permissionsTooOpen, "the \(role) \(path) belongs to another user (uid \(info.st_uid))",
        hint: "memo-peer only uses files you own: chown it to yourself, or point MEMO_PEER_HOME elsewhere")
    }
    if mode & 0o077 != 0 {
      throw MemoPeerError(
        .permissionsTooOpen,
        "the \(role) \(path) is accessible by other users (mode \(String(mode, radix: 8)))",
        hint: "run: chmod \(expectedMode) '\(path)'")
    }
  }

  private static func createParents(_ path: String) throws {
    do {
      try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw MemoPeerError(.io, "cannot create \(path)", hint: "check that its parent exists and is writable")
    }
  }

  /// Writes `bytes` to `path` as 0600 through a temporary file, fsync and rename: readers
  /// see the old file or the new one, never a torn one. With `exclusive`, fails if `path`
  /// already exists rather than replacing it.
  public static func writeAtomically(_ bytes: [UInt8], to path: String, exclusive: Bool = false) throws {
    let file = try AtomicFile(path: path)
    try writeAll(file.fd, bytes, path: path)
    try file.commit(exclusive: exclusive)
  }

  /// Reads a whole file, refusing anything larger than `limit` bytes.
  public static func read(_ path: String, limit: Int) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ioError(errno, "cannot read \(path)") }
    defer { close(fd) }
    return try readAll(fd, limit: limit, what: path)
  }

  /// Reads a file that holds a secret: into one buffer allocated up front (no growth, so no
  /// copy is left behind in freed memory), which is wiped after the bytes are handed over.
  /// The caller wipes the returned array (`wipe`) when done with it.
  public static func readSecret(_ path: String, limit: Int) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ioError(errno, "cannot read \(path)") }
    defer { close(fd) }
    return try readSecret(fd: fd, limit: limit, what: path)
  }

  /// `readSecret` from an open descriptor (a passphrase from `--passphrase-fd`).
  public static func readSecret(fd: Int32, limit: Int, what path: String) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: limit + 1)
    defer { wipe(&buffer) }
    var filled = 0
    while filled < buffer.count {
      let count = try readSome(fd, into: &buffer, at: filled, what: path)
      if count == 0 { break }
      filled += count
    }
    guard filled <= limit else {
      throw MemoPeerError(
        .tooLarge, "\(path) is larger than \(limit) bytes", hint: "it is not what memo-peer expects to find there")
    }
    return Array(buffer[0..<filled])
  }

  /// One read(2) into `buffer` from `offset` on, retried on EINTR; 0 at the end.
  private static func readSome(_ fd: Int32, into buffer: inout [UInt8], at offset: Int, what: String) throws -> Int {
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, $0.count - offset) }
      if count >= 0 { return count }
      if errno != EINTR { throw ioError(errno, "cannot read \(what)") }
    }
  }

  /// Overwrites a buffer that held a secret with zeros (OPENSSL_cleanse, which the
  /// optimiser keeps).
  public static func wipe(_ bytes: inout [UInt8]) { SecureBytes.wipe(&bytes) }

  /// Reads a descriptor to its end, refusing more than `limit` bytes.
  public static func readAll(_ fd: Int32, limit: Int, what: String) throws -> [UInt8] {
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = try readSome(fd, into: &chunk, at: 0, what: what)
      if count == 0 { return result }
      result.append(contentsOf: chunk[0..<count])
      if result.count > limit {
        throw MemoPeerError(
          .tooLarge, "\(what) is larger than \(limit) bytes",
          hint: "memos are limited to \(MemoRules.maxBodyBytes) bytes")
      }
    }
  }

  /// Runs `body` holding an exclusive `flock` on `lockPath` (made 0600 if missing), so
  /// processes that change the same file take turns.
  public static func withExclusiveLock<T>(_ lockPath: String, _ body: () throws -> T) throws -> T {
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw ioError(errno, "cannot open \(lockPath)") }
    defer { close(fd) }
    guard flock(fd, LOCK_EX) == 0 else { throw ioError(errno, "cannot lock \(lockPath)") }
    return try body()
  }

  /// Writes every byte, retrying on EINTR and short writes.
  public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
    var offset = 0
    while offset < bytes.count {
      let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if count < 0 {
        if errno == EINTR { continue }
        throw ioError(errno, "cannot write \(path)")
      }
      offset += count
    }
  }

  static func syncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
  }

  public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// A typed error for an errno, with ENOSPC and EDQUOT reported as a full disk.
  public static func ioError(_ code: Int32, _ message: String) -> MemoPeerError {
    let reason = String(cString: strerror(code))
    if code == ENOSPC || code == EDQUOT {
      return MemoPeerError(.diskFull, "\(message): the disk is full", hint: "free some space and try again")
    }
    if code == EACCES || code == EPERM {
      return MemoPeerError(.io, "\(message): permission denied", hint: "check the owner and mode of the directory")
    }
    return MemoPeerError(.io, "\(message): \(reason)", diagnostics: "errno \(code)")
  }
}

/// A file written in place of `path` only when complete: data goes to a 0600 temporary file
/// beside it, which `commit` flushes and renames over `path`. Dropped uncommitted, the
/// temporary file is removed and `path` is as it was.
public final class AtomicFile {
  public let path: String
  public let fd: Int32
  private let temporary: String
  private var finished = false

  public init(path: String) throws {
    self.path = path
    var template = Array((path + ".tmp-XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else {
      throw PrivateFiles.ioError(errno, "cannot write in \((path as NSString).deletingLastPathComponent)")
    }
    self.fd = fd
    temporary = String(nulTerminated: template)
    guard fchmod(fd, 0o600) == 0 else { throw PrivateFiles.ioError(errno, "cannot set permissions on \(temporary)") }
  }

  /// Flushes and moves the file into place (with `exclusive`, never over an existing file).
  public func commit(exclusive: Bool = false) throws {
    guard fsync(fd) == 0 else { throw PrivateFiles.ioError(errno, "cannot flush \(path) to disk") }
    if exclusive {
      guard link(temporary, path) == 0 else { throw PrivateFiles.ioError(errno, "cannot create \(path)") }
      unlink(temporary)
    } else {
      guard rename(temporary, path) == 0 else { throw PrivateFiles.ioError(errno, "cannot replace \(path)") }
    }
    finished = true
    PrivateFiles.syncDirectory((path as NSString).deletingLastPathComponent)
  }

  deinit {
    close(fd)
    if !finished { unlink(temporary) }
  }
}
