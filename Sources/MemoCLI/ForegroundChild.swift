import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a child (the user's editor) in memo-peer's own process group, the way system(3)
/// does, so it is the terminal's foreground job with memo-peer: it can read the keyboard,
/// and Ctrl-Z stops both together. (Foundation's `Process` puts a child in a process group
/// of its own, where a terminal editor cannot read the terminal.)
///
/// The child starts with default signal actions and an empty signal mask, whatever
/// memo-peer ignores. While it runs, memo-peer ignores SIGINT and SIGQUIT, as system(3)
/// does: Ctrl-C is the editor's to handle, and memo-peer must live on to remove the
/// editor's file.
enum ForegroundChild {
  /// How the child ended.
  enum Outcome: Equatable {
    case exited(Int32)
    case signalled(Int32)
  }

  static func run(_ executable: String, _ arguments: [String]) throws -> Outcome {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGPIPE, SIGINT, SIGQUIT, SIGTSTP, SIGCONT, SIGTERM, SIGHUP, SIGWINCH] {
      sigaddset(&defaults, number)
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var mask = sigset_t()
    sigemptyset(&mask)
    posix_spawnattr_setsigmask(&attributes, &mask)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

    let previousInt = signal(SIGINT, SIG_IGN)
    let previousQuit = signal(SIGQUIT, SIG_IGN)
    defer {
      signal(SIGINT, previousInt)
      signal(SIGQUIT, previousQuit)
    }
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    let result = argv.withUnsafeBufferPointer { buffer in
      posix_spawn(&pid, executable, nil, &attributes, buffer.baseAddress!, environ)
    }
    guard result == 0 else {
      throw MemoPeerError(
        .editor, "could not start the editor", hint: "check VISUAL or EDITOR", diagnostics: "posix_spawn: \(result)")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      guard errno == EINTR else {
        throw MemoPeerError(.editor, "lost track of the editor", diagnostics: "waitpid: errno \(errno)")
      }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros Swift cannot import.
    return status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
  }
}
