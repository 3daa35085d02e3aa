import Dispatch
import FoundationEssentials
import Synchronization

/// A point on a monotonic clock, as the time since that clock's own origin: wall-clock
/// changes never move it. Instants of two different clocks do not compare meaningfully.
public struct MonotonicInstant: Sendable, Hashable, Comparable {
  public var sinceOrigin: Duration

  public init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

  public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.sinceOrigin < rhs.sinceOrigin }
  public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
    MonotonicInstant(sinceOrigin: lhs.sinceOrigin + rhs)
  }
  public func duration(to other: MonotonicInstant) -> Duration { other.sinceOrigin - sinceOrigin }
}

/// Where the node's time comes from, so that a test can own it: the wall clock (what is
/// stored and shown), the monotonic clock (what deadlines and waits measure), and a wait on
/// the monotonic one that a manual clock satisfies when its test advances it (as swift-nio's
/// `EmbeddedEventLoop.advanceTime(by:)`), so tests never sleep.
///
/// One rounding rule for the wall clock everywhere: milliseconds since 1970, truncated
/// toward the past (a stored time never lies in the future of the moment it was read).
public protocol TimeSource: Sendable {
  /// Milliseconds since 1970, truncated.
  var wallNow: Timestamp { get }
  var monotonicNow: MonotonicInstant { get }
  /// Returns once `monotonicNow` reached `deadline`; throws `CancellationError` when the
  /// task is cancelled first.
  func sleep(until deadline: MonotonicInstant) async throws
  /// Blocks this thread until `deadline` or until `woken` signals, whichever is first;
  /// true when it was woken. The in-memory channel's threads wait on this.
  func wait(until deadline: MonotonicInstant, on woken: DispatchSemaphore) -> Bool
}

extension TimeSource {
  public func sleep(for duration: Duration) async throws { try await sleep(until: monotonicNow + duration) }
}

/// The process's real clocks: `ContinuousClock` (it counts suspended time too) and `Date`.
public struct SystemTime: TimeSource {
  /// The origin every `SystemTime` measures from, so their instants compare.
  private static let origin = ContinuousClock.now

  public init() {}

  public var wallNow: Timestamp { Self.wall() }

  /// The wall clock as a function, for the places that take a `() -> Timestamp`.
  @Sendable public static func wall() -> Timestamp {
    Timestamp((Date().timeIntervalSince1970 * 1000).rounded(.down))
  }

  public var monotonicNow: MonotonicInstant { MonotonicInstant(sinceOrigin: Self.origin.duration(to: .now)) }

  public func sleep(until deadline: MonotonicInstant) async throws {
    try await Task.sleep(until: Self.origin + deadline.sinceOrigin, clock: .continuous)
  }

  public func wait(until deadline: MonotonicInstant, on woken: DispatchSemaphore) -> Bool {
    let left = monotonicNow.duration(to: deadline)
    guard left > .zero else { return woken.wait(timeout: .now()) == .success }
    let (seconds, attoseconds) = left.components
    let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    return woken.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .success
  }
}

/// The clock the process uses where none was injected. Tests that drive time replace it
/// (`MemoTestSupport.ManualClock.install()`); production code never sets it.
public enum Clocks {
  private static let current = Mutex<any TimeSource>(SystemTime())

  public static var shared: any TimeSource { current.withLock { $0 } }

  /// For tests: the clock the process uses from now on; returns the previous one.
  @discardableResult public static func use(_ source: any TimeSource) -> any TimeSource {
    current.withLock {
      let previous = $0
      $0 = source
      return previous
    }
  }
}
