internal import CSystemd
import FoundationEssentials
import MemoCore
import MemoSystem
import Synchronization

/// Tells systemd about the daemon through libsystemd's `sd_notify` (Type=notify units). Does
/// nothing when NOTIFY_SOCKET is not set, so `memo-peer serve` on a terminal is unaffected.
///
/// Watchdog pings are paced here: the engine reports every loop turn, and a ping goes out at
/// most every half of WATCHDOG_USEC (sd_watchdog_enabled), as sd_watchdog_enabled(3) advises.
public final class SystemdNotifier: ServiceNotifier, Sendable {
  private let watchdogInterval: Double?
  private let lastPing = Mutex<Double>(0)

  /// Loads libsystemd (CLazyLibraries: only `serve` does); a missing library is an error
  /// here rather than a daemon that never says it is ready.
  public init() throws {
    do { try LazyLibrary.systemd.load() } catch { throw MemoPeerError(.io, error.message, hint: error.hint) }
    var microseconds: UInt64 = 0
    // 0 keeps WATCHDOG_USEC in the environment, for child processes (there are none).
    watchdogInterval = sd_watchdog_enabled(0, &microseconds) > 0 ? Double(microseconds) / 1_000_000 : nil
  }

  /// Whether a service manager listens (NOTIFY_SOCKET is set).
  public static var isActive: Bool { ProcessInfo.processInfo.environment["NOTIFY_SOCKET"] != nil }

  public func notify(_ event: ServiceEvent) {
    switch event {
    case .ready: send("READY=1")
    case .status(let text): send("STATUS=" + Self.oneLine(text))
    case .reloading: send("RELOADING=1")
    case .stopping: send("STOPPING=1")
    case .watchdog:
      guard let interval = watchdogInterval else { return }
      let now = ProcessInfo.processInfo.systemUptime
      let due = lastPing.withLock { lastPing in
        guard now - lastPing >= interval / 2 else { return false }
        lastPing = now
        return true
      }
      if due { send("WATCHDOG=1") }
    }
  }

  /// A status is one line of printable text (the protocol is newline-separated).
  static func oneLine(_ text: String) -> String {
    String(text.map { $0.isNewline || ($0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false) ? " " : $0 }.prefix(200))
  }

  private func send(_ message: String) {
    // A failure (no socket, socket gone) is ignored: the daemon must go on without systemd.
    _ = message.withCString { sd_notify(0, $0) }
  }
}
