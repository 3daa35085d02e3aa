import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// A point on the monotonic clock, in milliseconds: wall-clock changes never shorten or
/// stretch a timeout.
public struct Deadline: Sendable, Comparable {
  let milliseconds: Int64

  public static func now() -> Deadline {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Deadline(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
  }

  public static func after(seconds: Double) -> Deadline {
    Deadline(milliseconds: now().milliseconds + Int64(seconds * 1000))
  }

  /// Milliseconds left, for poll(2); 0 once passed.
  public var remaining: Int32 { Int32(clamping: max(0, milliseconds - Deadline.now().milliseconds)) }

  public var hasPassed: Bool { Deadline.now() >= self }

  public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.milliseconds < rhs.milliseconds }
}

/// The timeouts and limits of one connection (docs/PROTOCOL.md gives the defaults).
public struct ConnectionLimits: Sendable {
  /// TCP connect plus the whole TLS handshake.
  public var handshakeSeconds: Double = 10
  /// Silence allowed between frames.
  public var idleSeconds: Double = 120
  /// Time allowed for the rest of a frame once its first byte arrived, and for a send.
  public var frameSeconds: Double = 15
  public var maximumPayload: Int = Frame.defaultMaximumPayload

  public init() {}
}
