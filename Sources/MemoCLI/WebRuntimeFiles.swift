import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem
import MemoWeb

#if canImport(Glibc)
  import Glibc
#endif

/// The running web server's files, on a memory file system only ($XDG_RUNTIME_DIR, else
/// /dev/shm), in a 0700 directory per node: `web.json` (which process serves which port,
/// and the current one-time sign-in URL) and `open.html`, the page `--open` hands to the
/// browser, which sends it on to that URL. Both 0600, so no other user can read the token;
/// both removed when the server stops. docs/FORMATS.md describes them.
///
/// The directory's name is predictable (a second `memo-peer web` must find it), and
/// /dev/shm is everybody's: another user can make that name first, as a directory or as a
/// link to one of yours. So it is made with mkdir (never reusing what is there unless it is a
/// real directory of yours, checked with lstat: a link is refused, never followed), inside a
/// parent that is yours or sticky, so nobody else can swap it afterwards.
struct WebRuntimeFiles {
  let directory: String
  var statePath: String { directory + "/web.json" }
  var launcherPath: String { directory + "/open.html" }

  /// What `web.json` holds (format version 1).
  struct Info: Codable, Equatable {
    var schema = 1
    var pid: Int32
    var port: UInt16
    var addresses: [String]
    var url: String
  }

  /// The node's directory under the first memory file system; one per node (its state
  /// directory's SHA-256), so several nodes on one machine never share it.
  init(paths: NodePaths, environment: [String: String]) throws {
    guard let base = EditorSession.memoryDirectories(environment).first else {
      throw MemoPeerError(
        .io, "there is no memory-backed directory for the web server's sign-in link",
        hint: "set XDG_RUNTIME_DIR (a tmpfs, as systemd's /run/user/UID) or mount a tmpfs at /dev/shm")
    }
    let node = Hex.encode(Array(try SHA256.hash(Array(paths.stateDirectory.utf8)).prefix(8)))
    directory = "\(base)/memo-peer-web-\(node)"
  }

  /// The info of a server of this node that still runs, if there is one.
  func running() -> Info? {
    guard (try? Self.check(directory, existing: true)) != nil,
      let bytes = try? PrivateFiles.read(statePath, limit: 4096),
      (try? PrivateFiles.checkPrivate(statePath, role: "web server file", expectedMode: "600")) != nil,
      let info = try? JSONDecoder().decode(Info.self, from: Data(bytes)), info.schema == 1, info.pid > 0,
      info.pid != getpid(), kill(info.pid, 0) == 0,
      // A process that took the number of a server that died is not a server.
      let command = try? PrivateFiles.read("/proc/\(info.pid)/cmdline", limit: 1 << 16),
      String(decoding: command, as: UTF8.self).contains("memo-peer")
    else { return nil }
    return info
  }

  /// Writes both files for `url` (again after each sign-in, with the next URL).
  func write(_ info: Info) throws {
    try Self.makeDirectory(directory)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    try PrivateFiles.writeAtomically(Array(try encoder.encode(info)) + [0x0A], to: statePath)
    try PrivateFiles.writeAtomically(WebAssets.launcher(for: info.url), to: launcherPath)
  }

  /// Creates `path` as a 0700 directory, or accepts one that is really ours; refuses a link,
  /// anything else, and a directory another user made.
  static func makeDirectory(_ path: String) throws {
    try checkParent(PathText.parent(path))
    do {
      _ = try System.call("mkdir") { mkdir(path, 0o700) }
      return
    } catch  where error.errno == .exists {
      try check(path, existing: false)
    } catch {
      throw PrivateFiles.ioError(error, "cannot create the web server's directory \(path)")
    }
  }

  /// Whether `path` is a directory of ours (0700, made so if it is ours and looser); with
  /// `existing`, only checks.
  @discardableResult
  static func check(_ path: String, existing: Bool) throws -> Bool {
    var info = stat()
    _ = try PrivateFiles.call("lstat", orThrow: "cannot read \(path)") { lstat(path, &info) }
    let hint =
      "memo-peer cannot use it, and cannot take it over. Start the server with a private directory of your own "
      + "instead: XDG_RUNTIME_DIR=$(mktemp -d /dev/shm/memo-peer-XXXXXX) memo-peer web (systemd sessions set "
      + "XDG_RUNTIME_DIR to /run/user/\(geteuid()), where nobody else can write); tell whoever looks after this "
      + "machine"
    switch info.st_mode & S_IFMT {
    case S_IFLNK:
      throw MemoPeerError(
        .permissionsTooOpen,
        "\(path) is a symbolic link, not memo-peer's directory: someone may be trying to catch your sign-in link",
        hint: hint)
    case S_IFDIR:
      break
    default:
      throw MemoPeerError(.permissionsTooOpen, "\(path) is not a directory memo-peer made", hint: hint)
    }
    guard info.st_uid == geteuid() else {
      throw MemoPeerError(
        .permissionsTooOpen,
        "\(path) belongs to another user (uid \(info.st_uid)), who made it first: someone may be trying to catch "
          + "your sign-in link", hint: hint)
    }
    if info.st_mode & 0o077 != 0 {
      guard !existing else { throw MemoPeerError(.permissionsTooOpen, "\(path) is open to other users") }
      _ = try PrivateFiles.call("chmod", orThrow: "cannot make \(path) private") { chmod(path, 0o700) }
    }
    return true
  }

  /// The parent must be ours or root's, and sticky if others may write in it (/dev/shm is):
  /// then nobody else can rename or replace what we made in it.
  static func checkParent(_ path: String) throws {
    var info = stat()
    _ = try PrivateFiles.call("stat", orThrow: "cannot use \(path) for the web server's files") { stat(path, &info) }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw MemoPeerError(.io, "\(path) is not a directory", hint: "set XDG_RUNTIME_DIR to a directory of your own")
    }
    let othersWrite = info.st_mode & 0o022 != 0
    guard info.st_uid == geteuid() || info.st_uid == 0, !othersWrite || info.st_mode & S_ISVTX != 0 else {
      throw MemoPeerError(
        .permissionsTooOpen, "\(path) lets other users replace what memo-peer puts there",
        hint: "set XDG_RUNTIME_DIR to a directory of your own on a memory file system")
    }
  }

  func remove() {
    unlink(statePath)
    unlink(launcherPath)
    rmdir(directory)
  }
}
