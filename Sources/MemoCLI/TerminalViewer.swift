import CSystemShims
import MemoCore
import MemoPresentation
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Runs `PrivacyScreen` on the controlling terminal for `show`: reads keys and focus reports
/// from /dev/tty, turns SIGTSTP, SIGCONT, SIGWINCH and the terminating signals into events,
/// and carries out the screen's actions in the order it gives them.
final class TerminalViewer {
  private let tty: Int32
  private var saved = termios()
  private var hasSavedMode = false

  /// A viewer when stdout is a terminal that can take escape sequences; nil on a pipe, for
  /// TERM=dumb, or without a controlling terminal (then the memo is printed as text).
  init?(environment: [String: String]) {
    guard isatty(1) == 1, let term = environment["TERM"], !term.isEmpty, term != "dumb" else { return nil }
    let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
    guard tty >= 0 else { return nil }
    self.tty = tty
  }

  deinit {
    if hasSavedMode { tcsetattr(tty, TCSAFLUSH, &saved) }
    close(tty)
  }

  func show(_ document: [String]) throws {
    try PrivateFiles.call("tcgetattr", orThrow: "cannot read the terminal's mode") { tcgetattr(tty, &saved) }
    hasSavedMode = true
    let size = self.size()
    var screen = PrivacyScreen(document: document, rows: size.rows, columns: size.columns)
    let signals = try TerminalSignals([SIGTSTP, SIGCONT, SIGWINCH, SIGINT, SIGTERM, SIGHUP])
    defer { signals.close() }
    var decoder = TerminalInputDecoder()
    var done = perform(screen.handle(.start))
    var buffer = [UInt8](repeating: 0, count: 256)
    while !done {
      var fds = [
        pollfd(fd: tty, events: Int16(POLLIN), revents: 0),
        pollfd(fd: signals.readFD, events: Int16(POLLIN), revents: 0),
      ]
      // Retried on EINTR: the signal's byte on the pipe then ends the wait at once.
      try PrivateFiles.call("poll", orThrow: "cannot wait for the terminal") { poll(&fds, 2, -1) }
      var events: [PrivacyScreen.Event] = []
      for number in signals.drain() { events.append(event(for: number)) }
      if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
        // Not retried on EINTR: back to the poll, which also hears the signal's byte.
        do throws(SystemError) {
          let count = try System.call("read", retryingOnInterrupt: false) {
            buffer.withUnsafeMutableBytes { read(tty, $0.baseAddress, $0.count) }
          }
          if count > 0 {
            events += decoder.decode(buffer[0..<count]).map { .input($0) }
          } else {
            events.append(.terminate)  // end of file: the terminal went away
          }
        } catch let error where error.errno == .interrupted || error.errno == .wouldBlock {
          // Nothing to read after all: wait again.
        } catch {
          events.append(.terminate)  // the terminal went away
        }
      }
      for event in events where !done { done = perform(screen.handle(event)) }
    }
  }

  private func event(for signal: Int32) -> PrivacyScreen.Event {
    switch signal {
    case SIGTSTP: return .suspend
    case SIGCONT: return .resume
    case SIGWINCH:
      let size = self.size()
      return .resize(rows: size.rows, columns: size.columns)
    default: return .terminate
    }
  }

  /// Carries out actions in order; true once the viewer is finished.
  private func perform(_ actions: [PrivacyScreen.Action]) -> Bool {
    for action in actions {
      switch action {
      case .write(let bytes): try? PrivateFiles.writeAll(tty, bytes, path: "/dev/tty")
      case .enterViewerMode:
        var mode = saved
        // No echo, no line buffering; ISIG stays on so Ctrl-Z and Ctrl-C still signal.
        mode.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &mode.c_cc) { cc in
          cc[Int(VMIN)] = 1
          cc[Int(VTIME)] = 0
        }
        tcsetattr(tty, TCSAFLUSH, &mode)
      case .restoreMode: tcsetattr(tty, TCSAFLUSH, &saved)
      case .stopProcess: kill(getpid(), SIGSTOP)
      case .finish: return true
      }
    }
    return false
  }

  private func size() -> (rows: Int, columns: Int) {
    var rows: UInt16 = 0
    var columns: UInt16 = 0
    guard memo_terminal_size(tty, &rows, &columns) == 0, rows > 0, columns > 0 else { return (24, 80) }
    return (Int(rows), Int(columns))
  }

  /// The privacy guard for `edit` on a terminal, or nil when not on one.
  static func editorPrivacy() -> EditorPrivacy? {
    guard isatty(0) == 1, isatty(1) == 1 else { return nil }
    let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
    guard tty >= 0 else { return nil }
    return EditorPrivacy(tty: tty)
  }
}
