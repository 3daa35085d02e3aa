import FoundationEssentials
import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a system tool (xclip, wl-copy) with bytes on its stdin or its stdout read back, via
/// posix_spawn and waitpid. Not Foundation's `Process`: clipboard tools fork a child that
/// keeps serving the selection, and `Process.waitUntilExit` can wait for that child too.
/// Text goes only through pipes, never argv or a file.
enum ToolProcess {
  /// How a run ended: the exit status (128 + N for signal N) and what it printed, if asked.
  struct Result {
    let status: Int32
    /// Nil when more than the limit was printed (or nothing was asked for).
    let output: [UInt8]?
    /// The child's process id (to wait for a detached one with `waitForExit`).
    var pid: pid_t = 0
  }

  /// Runs `executable`, writing `input` to its stdin (else /dev/null) and reading up to
  /// `captureLimit` bytes of its stdout (else /dev/null); stderr goes to /dev/null.
  /// With `detach` it starts in a session of its own and is not waited for: it has been
  /// spawned when this returns (`waitForExit` reaps it, if the caller stays).
  @discardableResult
  static func run(
    _ executable: String, _ arguments: [String], input: [UInt8]?, captureLimit: Int? = nil, detach: Bool = false
  ) throws -> Result {
    var inputPipe: [Int32] = [-1, -1]
    var outputPipe: [Int32] = [-1, -1]
    defer { for fd in inputPipe + outputPipe where fd >= 0 { close(fd) } }
    if input != nil { try makePipe(&inputPipe, executable) }
    if captureLimit != nil { try makePipe(&outputPipe, executable) }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if input != nil {
      posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
    } else {
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    if captureLimit != nil {
      posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
    } else {
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    }
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var flags = Int32(POSIX_SPAWN_SETSIGDEF)
    if detach { flags |= posixSpawnSetsid }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    do throws(SystemError) {
      try System.callReturningErrno("posix_spawn") {
        argv.withUnsafeBufferPointer { posix_spawn(&pid, executable, &actions, &attributes, $0.baseAddress!, environ) }
      }
    } catch {
      throw failure(executable, error)
    }
    // The child has its ends; closing ours lets it see end-of-file.
    if inputPipe[0] >= 0 {
      close(inputPipe[0])
      inputPipe[0] = -1
    }
    if outputPipe[1] >= 0 {
      close(outputPipe[1])
      outputPipe[1] = -1
    }
    if let input {
      try? PrivateFiles.writeAll(inputPipe[1], input, path: executable)
      close(inputPipe[1])
      inputPipe[1] = -1
    }
    var output: [UInt8]?
    if let limit = captureLimit {
      output = try? PrivateFiles.readAll(outputPipe[0], limit: limit, what: executable)
    }
    if detach { return Result(status: 0, output: nil, pid: pid) }
    return Result(status: try waitForExit(pid, executable), output: output, pid: pid)
  }

  /// Waits for the child `pid` (of `run`) to end, and its exit status (128 + N for signal N).
  static func waitForExit(_ pid: pid_t, _ executable: String) throws -> Int32 {
    var status: Int32 = 0
    do throws(SystemError) {
      try System.call("waitpid") { waitpid(pid, &status, 0) }
    } catch {
      throw failure(executable, error)
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
    return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
  }

  /// glibc's POSIX_SPAWN_SETSID (0x80), which Swift's Glibc module does not import (it
  /// needs _GNU_SOURCE).
  private static let posixSpawnSetsid: Int32 = 0x80

  /// A pipe whose ends close on exec (the child gets its end through dup2, which clears it).
  private static func makePipe(_ fds: inout [Int32], _ executable: String) throws {
    do throws(SystemError) {
      try System.call("pipe") { pipe(&fds) }
    } catch {
      throw failure(executable, error)
    }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // cannot fail on a descriptor just made
  }

  private static func failure(_ executable: String, _ error: SystemError) -> MemoPeerError {
    MemoPeerError(
      .io, "could not run \(PathText.lastComponent(executable))", hint: "check that it is installed",
      diagnostics: error.diagnostics)
  }
}
