import Dispatch
import FoundationEssentials
import MemoCore
import MemoSystem
import Synchronization

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
/// does, and passes SIGTERM and SIGHUP (a closed terminal) on to the child instead of
/// dying: memo-peer must live on after the editor to remove the editor's file, which holds
/// the memo in plain text.
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
    let child = ChildPID()
    let forwarders = [SIGTERM, SIGHUP].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { child.signal(number) }
      source.resume()
      return source
    }
    defer {
      for source in forwarders { source.cancel() }
      signal(SIGTERM, SIG_DFL)
      signal(SIGHUP, SIG_DFL)
      signal(SIGINT, previousInt)
      signal(SIGQUIT, previousQuit)
    }
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    let spawned = Result { () throws(SystemError) in
      try System.callReturningErrno("posix_spawn") {
        argv.withUnsafeBufferPointer { posix_spawn(&pid, executable, nil, &attributes, $0.baseAddress!, environ) }
      }
    }
    child.set(pid)
    if case .failure(let error) = spawned {
      throw MemoPeerError(
        .editor, "could not start the editor", hint: "check VISUAL or EDITOR", diagnostics: error.diagnostics)
    }
    var status: Int32 = 0
    do throws(SystemError) {
      try System.call("waitpid") { waitpid(pid, &status, 0) }
    } catch {
      throw MemoPeerError(.editor, "lost track of the editor", diagnostics: error.diagnostics)
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros Swift cannot import.
    return status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
  }
}

/// The child's pid, set once it exists, for the signal forwarders on another thread.
private final class ChildPID: Sendable {
  private let pid = Mutex<pid_t>(0)

  func set(_ value: pid_t) { pid.withLock { $0 = value } }

  func signal(_ number: Int32) {
    let target = pid.withLock { $0 }
    if target > 0 { kill(target, number) }
  }
}
