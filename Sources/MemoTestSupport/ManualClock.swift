import Dispatch
import MemoCore
import Synchronization

/// A clock whose time moves only when the test advances it, as swift-nio's
/// `EmbeddedEventLoop.advanceTime(by:)`: every wait on it (a `Deadline`, the in-memory
/// channel's reads, a live link's keepalive) completes when `advance(by:)` moves the time
/// past it, so a test that drives time never sleeps.
///
/// A thread waiting in `wait(until:on:)` is woken through its own semaphore, so a waiter
/// may see one spurious wake later; every caller re-checks its condition after a wake.
public final class ManualClock: TimeSource, Sendable {
  private struct Sleeper {
    let id: Int
    let until: MonotonicInstant
    let resume: @Sendable () -> Void
  }

  private struct State {
    var monotonic = MonotonicInstant(sinceOrigin: .seconds(1))
    var wall: Timestamp
    var nextID = 0
    var sleepers: [Sleeper] = []
    /// Threads in `untilWaiting`, signalled whenever a wait starts.
    var watchers: [DispatchSemaphore] = []
  }

  private let state: Mutex<State>

  /// A clock at `wall` (milliseconds since 1970); its monotonic time starts at 1 s.
  public init(wall: Timestamp = 1_796_000_000_000) { state = Mutex(State(wall: wall)) }

  public var wallNow: Timestamp { state.withLock { $0.wall } }
  public var monotonicNow: MonotonicInstant { state.withLock { $0.monotonic } }

  /// How many waits are pending: a test that needs the code under test to be waiting
  /// before it advances time polls this with `await Task.yield()`.
  public var pendingWaits: Int { state.withLock { $0.sleepers.count } }

  /// Moves both clocks forward by `duration` and completes every wait that is due.
  public func advance(by duration: Duration) {
    let due = state.withLock { state -> [Sleeper] in
      state.monotonic = state.monotonic + duration
      let (seconds, attoseconds) = duration.components
      state.wall += seconds * 1000 + attoseconds / 1_000_000_000_000_000
      let now = state.monotonic
      let due = state.sleepers.filter { $0.until <= now }
      state.sleepers.removeAll { $0.until <= now }
      return due
    }
    for sleeper in due { sleeper.resume() }
  }

  public func sleep(until deadline: MonotonicInstant) async throws {
    let resumed = Mutex<CheckedContinuation<Void, any Error>?>(nil)
    let id = state.withLock { state -> Int in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        resumed.withLock { $0 = continuation }
        let due = state.withLock { state -> Bool in
          guard state.monotonic < deadline else { return true }
          state.sleepers.append(
            Sleeper(id: id, until: deadline) { resumed.withLock { $0.take() }?.resume() })
          return false
        }
        if due || Task.isCancelled {
          state.withLock { $0.sleepers.removeAll { $0.id == id } }
          let continuation = resumed.withLock { $0.take() }
          if due { continuation?.resume() } else { continuation?.resume(throwing: CancellationError()) }
        }
      }
    } onCancel: {
      state.withLock { $0.sleepers.removeAll { $0.id == id } }
      resumed.withLock { $0.take() }?.resume(throwing: CancellationError())
    }
  }

  public func wait(until deadline: MonotonicInstant, on woken: DispatchSemaphore) -> Bool {
    let timedOut = Mutex(false)
    let id = state.withLock { state -> Int? in
      guard state.monotonic < deadline else { return nil }
      state.nextID += 1
      let id = state.nextID
      state.sleepers.append(
        Sleeper(id: id, until: deadline) {
          timedOut.withLock { $0 = true }
          woken.signal()
        })
      for watcher in state.watchers { watcher.signal() }
      return id
    }
    guard let id else { return woken.wait(timeout: .now()) == .success }
    woken.wait()
    state.withLock { $0.sleepers.removeAll { $0.id == id } }
    return !timedOut.withLock { $0 }
  }

  /// Blocks this thread until at least `count` waits are pending on the clock: the code
  /// under test reached the wait the test is about to satisfy by advancing.
  public func untilWaiting(_ count: Int = 1) {
    let signal = DispatchSemaphore(value: 0)
    state.withLock { $0.watchers.append(signal) }
    defer { state.withLock { $0.watchers.removeAll { $0 === signal } } }
    while pendingWaits < count { signal.wait() }
  }

  /// Makes this the process's clock (`Clocks.shared`) until the returned restore runs.
  public func install() -> @Sendable () -> Void {
    let previous = Clocks.use(self)
    return { Clocks.use(previous) }
  }
}
