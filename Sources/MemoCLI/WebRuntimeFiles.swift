import Foundation
import MemoCore
import MemoCrypto
import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// The running web server's files, on a memory file system only ($XDG_RUNTIME_DIR, else
/// /dev/shm), in a 0700 directory per node: `web.json` (which process serves which port,
/// and the current one-time sign-in URL) and `open.html`, the page `--open` hands to the
/// browser, which sends it on to that URL. Both 0600, so no other user can read the token;
/// both removed when the server stops. docs/FORMATS.md describes them.
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
    guard let bytes = try? PrivateFiles.read(statePath, limit: 4096),
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
    try PrivateFiles.ensureDirectory(directory, role: "web server directory")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    try PrivateFiles.writeAtomically(Array(try encoder.encode(info)) + [0x0A], to: statePath)
    try PrivateFiles.writeAtomically(Array(Self.launcher(for: info.url).utf8), to: launcherPath)
  }

  func remove() {
    unlink(statePath)
    unlink(launcherPath)
    rmdir(directory)
  }

  /// A page that sends the browser on to `url` at once. The URL is made of letters,
  /// digits and `:/.?=[]-_` only, so it needs no escaping in the attribute.
  static func launcher(for url: String) -> String {
    """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
    <meta http-equiv="refresh" content="0;url=\(url)"><title>memo-peer</title></head>
    <body><p><a href="\(url)">Open memo-peer</a></p></body></html>

    """
  }
}
