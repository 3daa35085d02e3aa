import MemoCore

/// When `serve` (re)registers its advertisement, and what it waits for when it cannot:
/// the rules of advertising, apart from the listener and the mDNS daemon (tested without
/// either).
///
/// The advertisement is registered when there is none, when the period rotated it (a new
/// plan), and when the mDNS daemon lost it (it restarted). A failure is retried after 2 s,
/// and closes the listener; but while the mDNS daemon restarts (it lost our registration
/// and is not back yet) the listener stays open for the devices already connected, and the
/// registration is tried again every second. A node whose keys cannot be loaded waits 2 s
/// before it tries again.
struct AdvertisingSchedule: Sendable {
  /// What a failed registration asks of the daemon.
  struct Failure: Sendable, Equatable {
    /// Withdraw the advertisement but keep the listener (and the links) open.
    var keepListening: Bool
    /// What `status` says the daemon waits for.
    var waitingFor: String
  }

  /// Nothing is tried before this (after a failure).
  private(set) var retryAfter: Timestamp = 0
  /// The mDNS daemon dropped the advertisement while the node served: until it is
  /// registered again, the listener stays open.
  private(set) var readvertising = false
  /// The plan registered now; nil when none is.
  private(set) var registered: AdvertisementPlan?

  /// Whether anything may be tried at `now`.
  func due(now: Timestamp) -> Bool { now >= retryAfter }

  /// Whether `plan` must be registered (again): `standing` while registrations stand,
  /// `lost` when the mDNS daemon dropped one of them.
  mutating func needsRegistering(_ plan: AdvertisementPlan, standing: Bool, lost: Bool) -> Bool {
    if plan == registered && standing && !lost { return false }
    if lost { readvertising = true }
    return true
  }

  /// `plan` is registered.
  mutating func registered(_ plan: AdvertisementPlan) {
    registered = plan
    readvertising = false
  }

  /// The advertisement was withdrawn (the listener may stay).
  mutating func withdrawn() { registered = nil }

  /// The advertisement was withdrawn and the listener closed: nothing on the network.
  mutating func stopped() {
    registered = nil
    readvertising = false
  }

  /// Registering failed at `now` with `code` (nil: not a `MemoPeerError`); `port` is the
  /// one asked for.
  mutating func failed(_ code: MemoPeerError.Code?, now: Timestamp, port: UInt16) -> Failure {
    let keep = code == .daemonUnavailable && readvertising
    retryAfter = now + (keep ? 1000 : 2000)
    if !keep { stopped() }
    let reason =
      switch code {
      case .daemonUnavailable: "the mDNS daemon (avahi-daemon) to be reachable"
      case .io: "TCP port \(port) to be free"
      default: "DNS-SD registration to succeed"
      }
    return Failure(keepListening: keep, waitingFor: reason)
  }

  /// The keys could not be loaded at `now` (not because the node is locked): wait 2 s.
  mutating func keysFailed(now: Timestamp) { retryAfter = now + 2000 }
}
