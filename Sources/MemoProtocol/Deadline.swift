import MemoCore

/// A point on the monotonic clock: wall-clock changes never shorten or stretch a timeout.
///
/// A caller's time limit travels down as one of these, from `sync --timeout` through the
/// connect, the TLS handshake and the hellos to the poll(2) that waits, so no layer below
/// can overrun it with a limit of its own.
public struct Deadline: Sendable, Hashable, Comparable {
  /// The instant on `clock`'s monotonic scale.
  public let instant: MonotonicInstant
  /// The clock this deadline was read from and measures against: `Clocks.shared` (the
  /// system's unless a test installed a manual one), or one passed in.
  public let clock: any TimeSource

  public init(instant: MonotonicInstant, clock: any TimeSource = Clocks.shared) {
    self.instant = instant
    self.clock = clock
  }

  public static func now(clock: any TimeSource = Clocks.shared) -> Deadline {
    Deadline(instant: clock.monotonicNow, clock: clock)
  }

  public static func after(seconds: Double, clock: any TimeSource = Clocks.shared) -> Deadline {
    Deadline(instant: clock.monotonicNow + Self.duration(seconds), clock: clock)
  }

  /// The later deadline `seconds` after this one.
  public func adding(seconds: Double) -> Deadline {
    Deadline(instant: instant + Self.duration(seconds), clock: clock)
  }

  private static func duration(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

  private var left: Duration { clock.monotonicNow.duration(to: instant) }

  /// Milliseconds left, for poll(2); 0 once passed.
  public var remaining: Int32 {
    let left = self.left
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
  }

  /// Seconds left (0 once passed), for `Task.sleep` and messages.
  public var secondsLeft: Double {
    let left = self.left
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    return Double(seconds) + Double(attoseconds) / 1e18
  }

  public var hasPassed: Bool { clock.monotonicNow >= instant }

  /// Waits until this deadline passed, on its clock (a manual clock: until the test
  /// advanced it that far).
  public func waitUntilPassed() async throws { try await clock.sleep(until: instant) }

  public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.instant < rhs.instant }
  public static func == (lhs: Deadline, rhs: Deadline) -> Bool { lhs.instant == rhs.instant }
  public func hash(into hasher: inout Hasher) { hasher.combine(instant) }
}

/// The timeouts and limits of one connection (docs/PROTOCOL.md gives the defaults). Every
/// frame channel honours them, the TLS one and the in-memory one of the tests alike.
public struct ConnectionLimits: Sendable {
  /// TCP connect plus the whole TLS handshake (a caller's earlier deadline wins).
  public var handshakeSeconds: Double = 10
  /// Silence allowed between frames.
  public var idleSeconds: Double = 120
  /// Time allowed for the rest of a frame once its first byte arrived, and for a send.
  public var frameSeconds: Double = 15
  public var maximumPayload: Int = ConnectionLimits.defaultMaximumPayload
  /// Frame payloads are at most 1 MiB unless a connection says less (pairing: 4 KiB).
  public static let defaultMaximumPayload = 1 << 20

  public init() {}
}
