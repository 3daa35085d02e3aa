import FoundationEssentials
import MemoApp
import MemoCore
import MemoCrypto
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The process's standard streams and terminal, in one place so commands never touch file
/// descriptors directly.
final class Console {
  private var buffer: [UInt8] = []
  private(set) var stdoutClosed = false
  /// Why stdout could not be written (not a closed pipe): the command then exits with the
  /// status of `io` (7) rather than 0, having printed less than it said.
  private(set) var writeFailure: MemoPeerError?

  var stdinIsTerminal: Bool { isatty(0) == 1 }
  var stdoutIsTerminal: Bool { isatty(1) == 1 }
  var stderrIsTerminal: Bool { isatty(2) == 1 }

  /// Buffers text for stdout; flushed in 64 KiB writes so listing 100,000 memos is cheap.
  func print(_ text: String) {
    buffer.append(contentsOf: text.utf8)
    buffer.append(0x0A)
    if buffer.count >= 1 << 16 { flush() }
  }

  /// A line that `body` writes straight into the buffer (no string in between), then a
  /// newline: `list` and `search` write 100,000 of them.
  func printLine(_ body: (inout [UInt8]) -> Void) {
    body(&buffer)
    buffer.append(0x0A)
    if buffer.count >= 1 << 16 { flush() }
  }

  func write(_ bytes: [UInt8]) {
    buffer.append(contentsOf: bytes)
    if buffer.count >= 1 << 16 { flush() }
  }

  /// Writes what is buffered. A closed pipe (`memo-peer list | head`) is not an error; any
  /// other failure (a full disk, `> /dev/full`) is kept in `writeFailure`.
  func flush() {
    defer { buffer.removeAll(keepingCapacity: true) }
    guard !stdoutClosed, !buffer.isEmpty else { return }
    do {
      var offset = 0
      while offset < buffer.count {
        offset += try System.call("write") {
          buffer.withUnsafeBytes { Glibc.write(1, $0.baseAddress! + offset, $0.count - offset) }
        }
      }
    } catch {
      stdoutClosed = true
      guard error.code != EPIPE else { return }
      writeFailure = MemoPeerError(
        error.code == ENOSPC || error.code == EDQUOT ? .diskFull : .io,
        "cannot write the output to stdout: \(error.errno)",
        hint: "check where the output goes (a full disk, a file that cannot be written); it is incomplete",
        diagnostics: error.diagnostics)
    }
  }

  /// A line on stderr; an error's priority when stderr is the journal.
  func error(_ text: String) {
    flush()
    let bytes = Array((JournalStream.prefix(.error) + text + "\n").utf8)
    try? PrivateFiles.writeAll(2, bytes, path: "stderr")
  }

  /// A progress line on stderr for long work, only when stderr is a terminal (never on a
  /// pipe or in a log). Counts only: never memo content.
  func progress(_ text: String) {
    guard isatty(2) == 1 else { return }
    try? PrivateFiles.writeAll(2, Array(("\r\u{1B}[K" + text).utf8), path: "stderr")
    showingProgress = true
  }

  /// Clears the progress line, if one is shown.
  func endProgress() {
    guard showingProgress else { return }
    try? PrivateFiles.writeAll(2, Array("\r\u{1B}[K".utf8), path: "stderr")
    showingProgress = false
  }

  private var showingProgress = false

  /// What stdin carries, for its limit's message and hint.
  enum StdinUse {
    /// A memo's body, for the command that reads it: 64 KiB.
    case memoBody(MemoBodyCommand)
    /// The text to search for (`search --stdin`): 4 KiB.
    case searchText

    var limit: Int {
      switch self {
      case .memoBody: MemoRules.maxBodyBytes
      case .searchText: 4096
      }
    }

    var tooLarge: MemoPeerError {
      switch self {
      case .memoBody(let command):
        MemoPeerError(
          .tooLarge, "the memo on stdin is larger than the limit of \(limit) bytes (64 KiB)",
          hint: command.tooLargeHint)
      case .searchText:
        MemoPeerError(
          .tooLarge, "the search text on stdin is longer than the limit of \(limit) bytes (4 KiB)",
          hint: "search for a shorter part of it")
      }
    }
  }

  /// The commands that read a memo's body from stdin, each with its own words for input
  /// that is too large or empty (only `new` and `edit` take `--allow-empty`).
  enum MemoBodyCommand {
    /// `new`, with stdin not a terminal.
    case new
    /// `edit ID --stdin`.
    case edit
    /// `send - --to PEER`.
    case send

    var tooLargeHint: String {
      switch self {
      case .new: "split it into several memos"
      case .edit: "keep the body under the limit and put the rest in a memo of its own"
      case .send: "split it into several memos and send each"
      }
    }

    /// Empty stdin (or only white space), refused: far more often a mistake (`< missing-file`,
    /// a pipe whose writer failed) than a wish.
    var emptyInput: MemoPeerError {
      switch self {
      case .new:
        MemoPeerError(
          .invalidInput, "stdin is empty: there is no text to save",
          hint: "pipe the memo's text in (echo 'text' | memo-peer new), "
            + "or pass --allow-empty for a memo of a title alone")
      case .edit:
        MemoPeerError(
          .invalidInput, "stdin is empty: there is no new body to save",
          hint: "pipe the new body in (echo 'text' | memo-peer edit ID --stdin), "
            + "or pass --allow-empty to empty the body")
      case .send:
        MemoPeerError(
          .invalidInput, "stdin is empty: there is no text to send",
          hint: "pipe the memo's text in (echo 'text' | memo-peer send - --to PEER), or send a saved memo by its id")
      }
    }
  }

  /// Reads all of stdin, refusing more than the use's limit.
  func readStdin(_ use: StdinUse) throws -> [UInt8] {
    do { return try PrivateFiles.readAll(0, limit: use.limit, what: "stdin") } catch let error as MemoPeerError
      where error.code == .tooLarge
    {
      throw use.tooLarge
    }
  }

  /// Asks a yes/no question on the controlling terminal; anything but y/yes is no.
  func confirm(_ question: String) throws -> Bool {
    let answer = try withTerminal { tty in
      try writeTerminal(tty, question + " [y/N] ")
      return try readTerminalLine(tty)
    }
    return ["y", "yes"].contains(answer.trimmingWhitespace.lowercased())
  }

  /// Asks a question on the controlling terminal and returns the answer line.
  func ask(_ question: String) throws -> String {
    try withTerminal { tty in
      try writeTerminal(tty, question)
      return try readTerminalLine(tty)
    }
  }

  /// Reads a passphrase without echo from the terminal, or one line from a descriptor the
  /// caller names (`--passphrase-fd`), so it never appears in argv or the environment.
  func passphrase(prompt: String, confirm: Bool, fd: Int32?) throws -> SecureBytes {
    if let fd {
      var line = try PrivateFiles.readSecret(fd: fd, limit: 4096, what: "the passphrase descriptor")
      defer { SecureBytes.wipe(&line) }
      while let last = line.last, last == 0x0A || last == 0x0D { line.removeLast() }
      return try checked(SecureBytes(copying: line))
    }
    return try withTerminal { tty in
      let first = try readHidden(tty, prompt: prompt)
      if confirm {
        let second = try readHidden(tty, prompt: "Repeat the passphrase: ")
        guard first.constantTimeEquals(second) else {
          throw MemoPeerError(.passphrase, "the two passphrases differ", hint: "try again")
        }
      }
      return try checked(first)
    }
  }

  private func checked(_ passphrase: SecureBytes) throws -> SecureBytes {
    guard passphrase.count >= 8 else {
      throw MemoPeerError(.passphrase, "the passphrase is shorter than 8 bytes", hint: "choose a longer passphrase")
    }
    return passphrase
  }

  private func withTerminal<R>(_ body: (Int32) throws -> R) throws -> R {
    // Whatever the errno (ENXIO: no controlling terminal), the answer is the same.
    guard let tty = try? System.call("open", { open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY) }) else {
      throw MemoPeerError(
        .usage, "this needs an answer from a terminal, and there is none",
        hint: "run it on a terminal, or use the command's non-interactive option (see --help)")
    }
    defer { close(tty) }
    flush()
    return try body(tty)
  }

  private func writeTerminal(_ tty: Int32, _ text: String) throws {
    try PrivateFiles.writeAll(tty, Array(text.utf8), path: "/dev/tty")
  }

  private func readTerminalLine(_ tty: Int32) throws -> String {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while bytes.count < 4096 {
      // A failed read ends the answer, as the end of input does.
      let count = (try? System.call("read") { Glibc.read(tty, &byte, 1) }) ?? 0
      if count <= 0 || byte == 0x0A { break }
      bytes.append(byte)
    }
    defer { for index in bytes.indices { bytes[index] = 0 } }
    return String(decoding: bytes, as: UTF8.self)
  }

  private func readHidden(_ tty: Int32, prompt: String) throws -> SecureBytes {
    try writeTerminal(tty, prompt)
    var saved = termios()
    let hasTermios = tcgetattr(tty, &saved) == 0
    if hasTermios {
      var quiet = saved
      quiet.c_lflag &= ~tcflag_t(ECHO)
      tcsetattr(tty, TCSAFLUSH, &quiet)
    }
    defer {
      if hasTermios { tcsetattr(tty, TCSAFLUSH, &saved) }
      try? writeTerminal(tty, "\n")
    }
    var bytes: [UInt8] = []
    defer { for index in bytes.indices { bytes[index] = 0 } }
    var byte: UInt8 = 0
    while bytes.count < 4096 {
      // A failed read ends the passphrase, as the end of input does.
      let count = (try? System.call("read") { Glibc.read(tty, &byte, 1) }) ?? 0
      if count <= 0 || byte == 0x0A || byte == 0x0D { break }
      bytes.append(byte)
    }
    return SecureBytes(copying: bytes)
  }
}

/// The terminal is where the use cases ask a person (consent, above all).
extension Console: Prompt {
  var canAsk: Bool { stdinIsTerminal }
}

/// Whole lines to stdout from any thread (streaming commands such as `browse`).
struct LinePrinter: Sendable {
  /// Held while a line is written, so lines from two threads never interleave.
  private static let writing = Mutex(())
  /// A daemon's lines start with their time (RFC 3339, UTC, milliseconds) unless stderr
  /// is the journal, which keeps its own: a fault can then be lined up with what the
  /// daemon did, in a terminal or a file.
  var timestamps = false

  func print(_ line: String) {
    Self.writing.withLock { _ in try? PrivateFiles.writeAll(1, Array((line + "\n").utf8), path: "stdout") }
  }

  /// A line on stderr, with `priority` when stderr is the journal (a state change is a
  /// notice; something the daemon cannot do is a warning).
  func error(_ line: String, priority: JournalStream.Priority = .notice) {
    let stamp = timestamps && !JournalStream.isStderr ? TimeText.iso(App.wallClock()) + " " : ""
    let text = JournalStream.prefix(priority) + stamp + line + "\n"
    Self.writing.withLock { _ in try? PrivateFiles.writeAll(2, Array(text.utf8), path: "stderr") }
  }
}

/// Log lines to stderr, prefixed with level and subsystem.
struct StderrLogSink: LogSink {
  func write(level: LogLevel, subsystem: String, message: String) {
    let priority: JournalStream.Priority =
      switch level {
      case .debug: .debug
      case .info: .info
      case .warning: .warning
      case .error: .error
      }
    let line = Array("\(JournalStream.prefix(priority))memo-peer[\(subsystem)] \(level.name): \(message)\n".utf8)
    try? PrivateFiles.writeAll(2, line, path: "stderr")
  }
}
