import Dispatch
import MemoCore

/// When a live link sends a keepalive and when it gives its peer up: the rules, apart from
/// their I/O and their clock (tested in simulated time; docs/PROTOCOL.md, "Live sync").
///
/// Of a pair of devices only one pings, the one with the lower device ID (the *pinger*), on
/// its own link to the other, once `quietSeconds` passed in which nothing arrived from the
/// other on either of the pair's links; the ping must be answered within `pongSeconds`. The
/// other device (the *listener*) sends no keepalive while the pinger's link to it is open:
/// it expects the pinger's traffic, and gives the pinger up once `expectSeconds` (the quiet
/// and the pong's time) passed without a frame from it. Only while the pinger's link is not
/// open (being dialled again, or refused one way) does the listener ping, after that same
/// silence. So an idle pair exchanges one ping and one pong per 30 s and a round trip (per
/// 33 s when only the listener's link is up), and a peer gone silent is given up 33 s after
/// its last frame (36 s by a listener without the peer's link: its own ping goes unanswered
/// first).
struct LiveKeepalive: Sendable, Equatable {
  /// Seconds without a frame from the peer before the pinger pings.
  static let quietSeconds = 30.0
  /// Seconds the peer has to answer a ping.
  static let pongSeconds = 3.0
  /// Seconds a listener waits for the pinger's traffic: the pinger pings after
  /// `quietSeconds` of quiet counted from the last frame it got from here (our answer to its
  /// last frame, a round trip after that frame), so `pongSeconds` is the same allowance for
  /// round trip and scheduling as the pinger gives a pong.
  static let expectSeconds = quietSeconds + pongSeconds

  /// Whether this side pings: the lower device ID of the pair.
  let pings: Bool

  init(local: DeviceID, peer: DeviceID) { pings = local < peer }

  enum Step: Equatable {
    /// Nothing is due for `seconds` (a frame from the peer meanwhile moves it on).
    case wait(seconds: Double)
    /// Ping now; the pong is due within `pongSeconds`.
    case ping
    /// The peer's keepalive is overdue: it is given up.
    case silent
  }

  /// What is due after `silence` seconds without a frame from the peer; `peerLinkOpen`:
  /// the peer's own link to this device is open (served here).
  func step(silence: Double, peerLinkOpen: Bool) -> Step {
    let due = pings ? Self.quietSeconds : Self.expectSeconds
    guard silence >= due else { return .wait(seconds: due - silence) }
    return pings || !peerLinkOpen ? .ping : .silent
  }
}

/// The time a live link keeps (monotonic seconds) and waits on: the system's in the daemon,
/// a simulated one in tests.
protocol LinkClock: Sendable {
  var now: Double { get }
  /// Waits until `signal` is signalled (true) or `seconds` passed (false).
  func wait(for signal: DispatchSemaphore, seconds: Double) -> Bool
}

/// The monotonic clock of `Clocks.shared`: a wall-clock change never fires or delays a
/// keepalive, and a test's manual clock drives it.
struct SystemLinkClock: LinkClock {
  let time: any TimeSource = Clocks.shared

  var now: Double {
    let (seconds, attoseconds) = time.monotonicNow.sinceOrigin.components
    return Double(seconds) + Double(attoseconds) / 1e18
  }

  func wait(for signal: DispatchSemaphore, seconds: Double) -> Bool {
    time.wait(until: time.monotonicNow + .milliseconds(Int64((max(seconds, 0) * 1000).rounded())), on: signal)
  }
}
