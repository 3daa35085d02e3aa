import Foundation
import MemoNode
import Synchronization

/// A `ServiceNotifier` that keeps every event, in order, for tests of the engine's calls
/// (watchdog pings, sent on every loop turn, are counted apart).
public final class RecordingServiceNotifier: ServiceNotifier, Sendable {
  private struct State {
    var recorded: [ServiceEvent] = []
    var pings = 0
  }
  private let state = Mutex(State())

  public init() {}

  public func notify(_ event: ServiceEvent) {
    state.withLock {
      if event == .watchdog { $0.pings += 1 } else { $0.recorded.append(event) }
    }
  }

  public var events: [ServiceEvent] { state.withLock { $0.recorded } }
  public var watchdogPings: Int { state.withLock { $0.pings } }

  /// Returns the events so far and forgets them.
  public func take() -> [ServiceEvent] {
    state.withLock { state in
      defer { state.recorded = [] }
      return state.recorded
    }
  }
}
