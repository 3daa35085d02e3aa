import Dispatch
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Turns signals into bytes on a pipe, so one poll loop can wait for the terminal and for
/// signals together and handle both in order, on one thread.
///
/// Each signal is set to SIG_IGN (its default action, such as stopping on SIGTSTP, would
/// otherwise act before memo-peer could hide the memo) and watched with a dispatch source.
/// `close` puts every signal back to its default action.
final class TerminalSignals {
  /// The read end: one byte per signal, the signal's number.
  let readFD: Int32
  private let writeFD: Int32
  private var sources: [any DispatchSourceSignal] = []
  private let signals: [Int32]

  init(_ signals: [Int32]) throws {
    var fds: [Int32] = [0, 0]
    try PrivateFiles.call("pipe", orThrow: "cannot set up signal handling") { pipe(&fds) }
    // Cannot fail on descriptors just made.
    for fd in fds {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }
    readFD = fds[0]
    writeFD = fds[1]
    self.signals = signals
    let writeEnd = writeFD
    for number in signals {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        var byte = UInt8(truncatingIfNeeded: number)
        // Errors ignored: a full pipe already holds signals the viewer has yet to read.
        _ = Glibc.write(writeEnd, &byte, 1)
      }
      source.resume()
      sources.append(source)
    }
  }

  /// The signals that arrived since the last call (in order).
  func drain() -> [Int32] {
    var received: [Int32] = []
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      // Non-blocking: EAGAIN (or any error) means nothing more has arrived.
      let count = buffer.withUnsafeMutableBytes { Glibc.read(readFD, $0.baseAddress, $0.count) }
      if count <= 0 { break }
      received += buffer[0..<count].map { Int32($0) }
    }
    return received
  }

  func close() {
    for source in sources { source.cancel() }
    sources = []
    for number in signals { signal(number, SIG_DFL) }
  }

  deinit {
    close()
    Glibc.close(readFD)
    Glibc.close(writeFD)
  }
}
