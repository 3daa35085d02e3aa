import MemoCore

/// The terminal privacy screen of `show`: the memo is drawn on the alternate screen, is
/// replaced by a placeholder whenever the terminal loses focus or the job is suspended, and
/// leaves nothing behind in the normal screen or its scrollback.
///
/// A value-type state machine: it takes events and returns what to do, and the terminal
/// code only carries the actions out. That keeps the order of every step — placeholder
/// *before* the process stops, the alternate screen cleared *before* it is left — testable
/// without a terminal.
public struct PrivacyScreen: Sendable {
  /// What the terminal code must do, in order.
  public enum Action: Sendable, Equatable {
    /// Write these bytes to the terminal.
    case write([UInt8])
    /// Put the terminal in the viewer's mode (no echo, no line buffering; signals stay on).
    case enterViewerMode
    /// Give the terminal back its original mode.
    case restoreMode
    /// Stop this process (SIGSTOP), after everything before it is written.
    case stopProcess
    /// The viewer is done.
    case finish
  }

  /// Why the memo is not on screen.
  public enum HiddenReason: Sendable, Equatable {
    /// The terminal reported focus loss (`ESC [ O`).
    case focusLost
    /// The job was suspended (SIGTSTP); the memo is off the screen until SIGCONT.
    case suspended
  }

  public enum Event: Sendable, Equatable {
    /// Enter the alternate screen and draw the memo.
    case start
    /// A key or a focus report from the terminal.
    case input(TerminalInputEvent)
    /// SIGTSTP (Ctrl-Z, or a job-control stop): hide, leave, then stop.
    case suspend
    /// SIGCONT: the job is back in the foreground.
    case resume
    /// SIGWINCH: the terminal has a new size.
    case resize(rows: Int, columns: Int)
    /// SIGINT, SIGTERM or SIGHUP: leave cleanly.
    case terminate
  }

  /// The memo's text, line by line, as it should be shown (before wrapping).
  let document: [String]
  public private(set) var rows: Int
  public private(set) var columns: Int
  public private(set) var scroll = 0
  public private(set) var hidden: HiddenReason?
  /// On the alternate screen (between `start` and a suspend or the end).
  public private(set) var active = false
  public private(set) var finished = false

  /// - Parameter document: the lines to show. Control characters in them are drawn as `�`
  ///   (a tab as four spaces): a memo holding escape sequences must not be able to leave the
  ///   alternate screen or move text into the scrollback.
  public init(document: [String], rows: Int, columns: Int) {
    self.document = document.map(Self.printable)
    self.rows = max(rows, 2)
    self.columns = max(columns, 10)
  }

  // DEC private modes: 1049 alternate screen (saving the cursor), 1004 focus reports,
  // 25 cursor visibility.
  static let enterSequence = "\u{1B}[?1049h\u{1B}[?1004h\u{1B}[?25l"
  static let leaveSequence = "\u{1B}[H\u{1B}[2J\u{1B}[?1004l\u{1B}[?25h\u{1B}[?1049l"
  static let clear = "\u{1B}[H\u{1B}[2J"

  public mutating func handle(_ event: Event) -> [Action] {
    guard !finished else { return [] }
    switch event {
    case .start:
      active = true
      hidden = nil
      return [.enterViewerMode, .write(bytes(Self.enterSequence + frame()))]
    case .input(let input):
      return handle(input)
    case .suspend:
      guard active else { return [] }
      active = false
      hidden = .suspended
      // The placeholder first, so that nothing captured from here on shows the memo; then
      // the alternate screen is cleared and left, so the shell's prompt returns on the
      // normal screen, which never held the memo.
      return [.write(bytes(placeholderFrame() + Self.leaveSequence)), .restoreMode, .stopProcess]
    case .resume:
      guard !active else { return [] }
      active = true
      hidden = nil
      return [.enterViewerMode, .write(bytes(Self.enterSequence + frame()))]
    case .resize(let newRows, let newColumns):
      rows = max(newRows, 2)
      columns = max(newColumns, 10)
      scroll = min(scroll, maxScroll)
      return active ? [.write(bytes(hidden == nil ? frame() : placeholderFrame()))] : []
    case .terminate:
      return finish()
    }
  }

  private mutating func handle(_ input: TerminalInputEvent) -> [Action] {
    guard active else { return [] }
    switch input {
    case .quit: return finish()
    case .focusLost:
      hidden = .focusLost
      return [.write(bytes(placeholderFrame()))]
    case .focusGained:
      hidden = nil
      return [.write(bytes(frame()))]
    case .redraw:
      return [.write(bytes(hidden == nil ? frame() : placeholderFrame()))]
    case .lineUp: return scrolled(to: scroll - 1)
    case .lineDown: return scrolled(to: scroll + 1)
    case .pageUp: return scrolled(to: scroll - pageHeight)
    case .pageDown: return scrolled(to: scroll + pageHeight)
    case .top: return scrolled(to: 0)
    case .bottom: return scrolled(to: maxScroll)
    }
  }

  private mutating func finish() -> [Action] {
    finished = true
    guard active else { return [.finish] }
    active = false
    return [.write(bytes(Self.leaveSequence)), .restoreMode, .finish]
  }

  private mutating func scrolled(to target: Int) -> [Action] {
    let clamped = min(max(target, 0), maxScroll)
    guard clamped != scroll else { return [] }
    scroll = clamped
    return hidden == nil ? [.write(bytes(frame()))] : []
  }

  /// Rows for text; the last row is the status line.
  var pageHeight: Int { rows - 1 }
  var maxScroll: Int { max(wrapped.count - pageHeight, 0) }

  /// The document wrapped to the terminal's width.
  var wrapped: [String] {
    var lines: [String] = []
    for line in document {
      var rest = Substring(line)
      if rest.isEmpty { lines.append("") }
      while !rest.isEmpty {
        lines.append(String(rest.prefix(columns)))
        rest = rest.dropFirst(columns)
      }
    }
    return lines
  }

  /// The screen with the memo: the visible lines, then a status line in reverse video.
  func frame() -> String {
    let lines = wrapped
    let visible = lines.dropFirst(scroll).prefix(pageHeight)
    let last = min(scroll + pageHeight, lines.count)
    let position = lines.count > pageHeight ? "  lines \(scroll + 1)–\(last) of \(lines.count)" : ""
    let status = "q quit · ↑↓ space b scroll" + position
    return Self.clear + visible.joined(separator: "\r\n") + "\u{1B}[\(rows);1H\u{1B}[7m"
      + String(status.prefix(columns)) + "\u{1B}[0m"
  }

  /// The screen without the memo: only a line saying why.
  func placeholderFrame() -> String {
    let reason = hidden == .suspended ? "suspended" : "the terminal is not in focus"
    return Self.clear + String("memo-peer: memo hidden (\(reason))".prefix(columns))
  }

  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  static func printable(_ line: String) -> String {
    var result = ""
    for scalar in line.unicodeScalars {
      switch scalar.value {
      case 0x09: result += "    "
      case 0x00..<0x20, 0x7F..<0xA0: result += "\u{FFFD}"
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result
  }
}
