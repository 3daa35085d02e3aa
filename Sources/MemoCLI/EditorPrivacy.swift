import Dispatch
import MemoSystem
import Synchronization

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
///
/// `tty` is written from the signal queue and the main thread; each write is one complete
/// sequence, and the file descriptor itself is safe to share.
final class EditorPrivacy: Sendable {
  private let tty: Int32
  private let sources = Mutex<[any DispatchSourceSignal]>([])

  init(tty: Int32) { self.tty = tty }

  deinit { close(tty) }

  /// Alternate screen on; Ctrl-Z wipes it before the job stops.
  func begin() {
    write("\u{1B}[?1049h")
    signal(SIGTSTP, SIG_IGN)
    let tty = self.tty
    sources.withLock { sources in
      let tstp = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
      tstp.setEventHandler {
        // Wipe the alternate screen whether the editor left it already or not, go back to
        // the normal screen (which never held the memo), then stop like a normal job.
        Self.write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J\u{1B}[?1049l", to: tty)
        kill(getpid(), SIGSTOP)
      }
      let cont = DispatchSource.makeSignalSource(signal: SIGCONT, queue: .global())
      cont.setEventHandler {
        // Back to the alternate screen, saving the cursor for the way out. Terminals (xterm,
        // tmux) ignore this when an editor that redraws on SIGCONT is already back there.
        Self.write("\u{1B}[?1049h", to: tty)
      }
      sources = [tstp, cont]
      for source in sources { source.resume() }
    }
  }

  /// Wipes and leaves the alternate screen; signals back to their defaults.
  func end() {
    sources.withLock { sources in
      for source in sources { source.cancel() }
      sources = []
    }
    signal(SIGTSTP, SIG_DFL)
    write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J\u{1B}[?1049l")
  }

  private func write(_ text: String) { Self.write(text, to: tty) }

  private static func write(_ text: String, to tty: Int32) {
    try? PrivateFiles.writeAll(tty, Array(text.utf8), path: "/dev/tty")
  }
}
