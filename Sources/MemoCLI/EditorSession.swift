import CSystemShims
import FoundationEssentials
import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Runs the user's editor on memo text without the plaintext ever touching persistent
/// disk: the file lives in a fresh 0700 directory on a memory file system
/// ($XDG_RUNTIME_DIR or /dev/shm), and the directory, with any swap or backup files the
/// editor made in it, is removed afterwards.
enum EditorSession {
  /// - Parameter privacy: on a terminal, keeps the editor on a wiped alternate screen.
  static func edit(_ text: String, environment: [String: String], privacy: EditorPrivacy? = nil) throws -> String {
    let editor = try editorCommand(environment)
    let directory = try privateDirectory(environment)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/memo.txt"
    try PrivateFiles.writeAtomically(Array(text.utf8), to: path)
    privacy?.begin()
    defer { privacy?.end() }
    // The memo's path is the only argument; the text itself never reaches argv.
    // `exec`: the editor replaces the shell, so a signal memo-peer passes on reaches it.
    let outcome = try ForegroundChild.run("/bin/sh", ["-c", "exec " + editor + " \"$1\"", "memo-peer-editor", path])
    guard outcome == .exited(0) else {
      let how: String
      switch outcome {
      case .exited(let status): how = "exited with status \(status)"
      case .signalled(let number): how = "was ended by signal \(number)"
      }
      throw MemoPeerError(
        .editor, "the editor \(how); the memo was not changed",
        hint: "save and quit the editor normally to keep your changes")
    }
    let bytes = try PrivateFiles.read(path, limit: MemoRules.maxBodyBytes)
    return try MemoRules.decodeUTF8(bytes, source: "the edited memo")
  }

  /// $VISUAL, then $EDITOR (both may include arguments, as git allows).
  static func editorCommand(_ environment: [String: String]) throws -> String {
    for name in ["VISUAL", "EDITOR"] {
      if let value = environment[name]?.trimmingWhitespace, !value.isEmpty { return value }
    }
    throw MemoPeerError(
      .editor, "no editor is set", hint: "set EDITOR (for example EDITOR=nano), or pass the text on stdin")
  }

  private static func privateDirectory(_ environment: [String: String]) throws -> String {
    for base in memoryDirectories(environment) {
      if let path = try? PrivateFiles.makeUniqueDirectory(in: base, prefix: "memo-peer") { return path }
    }
    throw MemoPeerError(
      .editor,
      "there is no memory-backed directory for the editor's file (tried \(memoryCandidates(environment).joined(separator: ", ")))",
      hint: "mount a tmpfs at /dev/shm or set XDG_RUNTIME_DIR, or pass the text on stdin with --stdin")
  }

  /// Where a file that must never reach persistent disk may go: $XDG_RUNTIME_DIR, then
  /// /dev/shm, whichever is a memory file system (the editor's copy, the web page's
  /// sign-in link).
  static func memoryDirectories(_ environment: [String: String]) -> [String] {
    memoryCandidates(environment).filter { memo_is_memory_file_system($0) == 1 }
  }

  private static func memoryCandidates(_ environment: [String: String]) -> [String] {
    var candidates: [String] = []
    if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { candidates.append(runtime) }
    candidates.append("/dev/shm")
    return candidates
  }
}
