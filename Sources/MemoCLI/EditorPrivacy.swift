import Dispatch
import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// What `edit` can do for privacy while the user's editor owns the terminal: run it on the
/// alternate screen, wipe that screen when the job is suspended (Ctrl-Z) and when the editor
/// exits, so the memo never stays on the normal screen or in its scrollback.
///
/// Focus reports (DECSET 1004) are not turned on here: the editor reads the terminal, not
/// memo-peer, and an editor that does not expect `ESC [ I` / `ESC [ O` would take them as
/// typed text. Hiding the memo on focus loss is the editor's part (vim: `:au FocusLost`).
final class EditorPrivacy: @unchecked Sendable {
  // `tty` is written from the signal queue and the main thread; each write is one
  // complete sequence, and the file descriptor itself is safe to share.
  private let tty: Int32
  private var sources: [any DispatchSourceSignal] = []

  init(tty: Int32) { self.tty = tty }

  deinit { close(tty) }

  /// Alternate screen on; Ctrl-Z wipes it before the job stops.
  func begin() {
    write("\u{1B}[?1049h")
    signal(SIGTSTP, SIG_IGN)
    let tstp = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
    tstp.setEventHandler { [weak self] in
      // Wipe the alternate screen whether the editor left it already or not, go back to
      // the normal screen (which never held the memo), then stop like a normal job.
      self?.write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J\u{1B}[?1049l")
      kill(getpid(), SIGSTOP)
    }
    let cont = DispatchSource.makeSignalSource(signal: SIGCONT, queue: .global())
    cont.setEventHandler { [weak self] in
      // Back to the alternate screen, saving the cursor for the way out. Terminals (xterm,
      // tmux) ignore this when an editor that redraws on SIGCONT is already back there.
      self?.write("\u{1B}[?1049h")
    }
    for source in [tstp, cont] {
      source.resume()
      sources.append(source)
    }
  }

  /// Wipes and leaves the alternate screen; signals back to their defaults.
  func end() {
    for source in sources { source.cancel() }
    sources = []
    signal(SIGTSTP, SIG_DFL)
    write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J\u{1B}[?1049l")
  }

  private func write(_ text: String) {
    try? PrivateFiles.writeAll(tty, Array(text.utf8), path: "/dev/tty")
  }
}
