import Foundation
import MemoCore

/// A `ServiceNotifier` that keeps every event, in order, for tests of the engine's calls
/// (watchdog pings, sent on every loop turn, are counted apart).
public final class RecordingServiceNotifier: ServiceNotifier, @unchecked Sendable {
  // Unchecked: both fields are only touched under `lock`.
  private let lock = NSLock()
  private var recorded: [ServiceEvent] = []
  private var pings = 0

  public init() {}

  public func notify(_ event: ServiceEvent) {
    lock.withLock {
      if event == .watchdog { pings += 1 } else { recorded.append(event) }
    }
  }

  public var events: [ServiceEvent] { lock.withLock { recorded } }
  public var watchdogPings: Int { lock.withLock { pings } }

  /// Returns the events so far and forgets them.
  public func take() -> [ServiceEvent] {
    lock.withLock {
      defer { recorded = [] }
      return recorded
    }
  }
}
