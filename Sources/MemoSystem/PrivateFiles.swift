import FoundationEssentials
import MemoCore

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
    // A failed stat is no error here: the directory is made below, and that reports failures.
    if stat(path, &info) == 0 {
      guard (info.st_mode & S_IFMT) == S_IFDIR else {
        throw MemoPeerError(.io, "the \(role) \(path) is not a directory", hint: "move it aside")
      }
      try checkPrivate(path, info: info, role: role, expectedMode: "700")
      return
    }
    let parent = PathText.parent(path)
    if !parent.isEmpty && parent != path && access(parent, F_OK) != 0 {
      try createParents(parent)
    }
    do throws(SystemError) {
      try System.call("mkdir") { mkdir(path, 0o700) }
    } catch let error where error.errno == .exists {
      // Made by another process since the stat: fine, it gets the mode below.
    } catch {
      throw ioError(error, "cannot create the \(role) \(path)")
    }
    _ = chmod(path, 0o700)  // best effort: a directory made by someone else is checked when next used
  }

  /// Makes a fresh directory `parent/prefix-XXXXXX` that only the user can enter (mkdtemp
  /// creates it 0700 and fails rather than reuse an existing one).
  public static func makeUniqueDirectory(in parent: String, prefix: String) throws -> String {
    var template = Array((parent + "/" + prefix + "-XXXXXX").utf8CString)
    try call("mkdtemp", orThrow: "cannot create a private directory in \(parent)") {
      template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    }
    return String(nulTerminated: template)
  }

  /// Refuses a file or directory that other users can read, write or enter, or that
  /// belongs to someone else.
  public static func checkPrivate(_ path: String, role: String, expectedMode: String) throws {
    var info = stat()
    try call("stat", orThrow: "cannot read the \(role) \(path)") { stat(path, &info) }
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
    let fd = try call("open", orThrow: "cannot read \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
    defer { close(fd) }
    return try readAll(fd, limit: limit, what: path)
  }

  /// Reads a file that holds a secret: into one buffer allocated up front (no growth, so no
  /// copy is left behind in freed memory), which is wiped after the bytes are handed over.
  /// The caller wipes the returned array (`SecureBytes.wipe`) when done with it.
  public static func readSecret(_ path: String, limit: Int) throws -> [UInt8] {
    let fd = try call("open", orThrow: "cannot read \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
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
    try call("read", orThrow: "cannot read \(what)") {
      buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, $0.count - offset) }
    }
  }

  /// Overwrites a buffer that held a secret with zeros: explicit_bzero, which the optimiser
  /// keeps (MemoSystem sits below MemoCrypto, whose `SecureBytes.wipe` callers use).
  private static func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
      if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
    }
  }

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
    let fd = try call("open", orThrow: "cannot open \(lockPath)") {
      open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    }
    defer { close(fd) }
    try call("flock", orThrow: "cannot lock \(lockPath)") { flock(fd, LOCK_EX) }
    return try body()
  }

  /// Writes every byte, retrying on EINTR and short writes.
  public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
    var offset = 0
    while offset < bytes.count {
      offset += try call("write", orThrow: "cannot write \(path)") {
        bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      }
    }
  }

  /// Flushes a directory's entries (a rename into it) to disk. Best effort, errors ignored:
  /// the file itself was flushed, and some file systems refuse fsync on a directory.
  static func syncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
  }

  public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// Runs a system call through `System.call` (retried on EINTR), its failure thrown as
  /// `ioError(_:_:)` with `message` (which names a file or what was being done, never memo
  /// text).
  @discardableResult
  public static func call<Result: FixedWidthInteger & SignedInteger>(
    _ name: String, orThrow message: @autoclosure () -> String, _ body: () -> Result
  ) throws(MemoPeerError) -> Result {
    do { return try System.call(name, body) } catch { throw ioError(error, message()) }
  }

  /// `call` for a system call that returns a pointer (nil on failure).
  @discardableResult
  public static func call<Pointer>(
    _ name: String, orThrow message: @autoclosure () -> String, _ body: () -> Pointer?
  ) throws(MemoPeerError) -> Pointer {
    do { return try System.call(name, body) } catch { throw ioError(error, message()) }
  }

  /// A typed error for a failed system call, with ENOSPC and EDQUOT reported as a full disk.
  public static func ioError(_ error: SystemError, _ message: String) -> MemoPeerError {
    let code = error.code
    if code == ENOSPC || code == EDQUOT {
      return MemoPeerError(.diskFull, "\(message): the disk is full", hint: "free some space and try again")
    }
    if code == EACCES || code == EPERM {
      return MemoPeerError(.io, "\(message): permission denied", hint: "check the owner and mode of the directory")
    }
    return MemoPeerError(.io, "\(message): \(error.errno)", diagnostics: error.diagnostics)
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
    fd = try PrivateFiles.call("mkstemp", orThrow: "cannot write in \(PathText.parent(path))") {
      template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    }
    temporary = String(nulTerminated: template)
    try PrivateFiles.call("fchmod", orThrow: "cannot set permissions on \(temporary)") { fchmod(fd, 0o600) }
  }

  /// Flushes and moves the file into place (with `exclusive`, never over an existing file).
  public func commit(exclusive: Bool = false) throws {
    try PrivateFiles.call("fsync", orThrow: "cannot flush \(path) to disk") { fsync(fd) }
    if exclusive {
      try PrivateFiles.call("link", orThrow: "cannot create \(path)") { link(temporary, path) }
      _ = unlink(temporary)  // the file is in place; a temporary name left behind harms nothing
    } else {
      try PrivateFiles.call("rename", orThrow: "cannot replace \(path)") { rename(temporary, path) }
    }
    finished = true
    PrivateFiles.syncDirectory(PathText.parent(path))
  }

  deinit {
    close(fd)
    if !finished { unlink(temporary) }
  }
}
