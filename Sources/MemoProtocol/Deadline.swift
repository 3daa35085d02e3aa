/// A point on the monotonic clock: wall-clock changes never shorten or stretch a timeout.
///
/// A caller's time limit travels down as one of these, from `sync --timeout` through the
/// connect, the TLS handshake and the hellos to the poll(2) that waits, so no layer below
/// can overrun it with a limit of its own.
public struct Deadline: Sendable, Hashable, Comparable {
  let instant: ContinuousClock.Instant

  public static func now() -> Deadline { Deadline(instant: .now) }

  public static func after(seconds: Double) -> Deadline {
    Deadline(instant: ContinuousClock.Instant.now.advanced(by: .milliseconds(Int64((seconds * 1000).rounded()))))
  }

  /// The later deadline `seconds` after this one.
  public func adding(seconds: Double) -> Deadline {
    Deadline(instant: instant.advanced(by: .milliseconds(Int64((seconds * 1000).rounded()))))
  }

  /// Milliseconds left, for poll(2); 0 once passed.
  public var remaining: Int32 {
    let left = ContinuousClock.Instant.now.duration(to: instant)
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
  }

  /// Seconds left (0 once passed), for `Task.sleep` and messages.
  public var secondsLeft: Double {
    let left = ContinuousClock.Instant.now.duration(to: instant)
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    return Double(seconds) + Double(attoseconds) / 1e18
  }

  public var hasPassed: Bool { ContinuousClock.Instant.now >= instant }

  public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.instant < rhs.instant }
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
