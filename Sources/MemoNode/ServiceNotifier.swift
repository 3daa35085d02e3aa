/// What a daemon tells its service manager (systemd's notification protocol, sd_notify(3)).
public enum ServiceEvent: Sendable, Equatable {
  /// Start-up is done: the daemon listens or waits (READY=1). Also sent after a reload.
  case ready
  /// A one-line state for `systemctl status` (STATUS=…). Never memo content.
  case status(String)
  /// The main loop is alive (WATCHDOG=1). Sent on every turn of the loop: the notifier
  /// itself paces the pings to the interval systemd asked for, or drops them.
  case watchdog
  /// A reload of the trust store begins (RELOADING=1); `.ready` follows when it is done.
  case reloading
  /// The daemon is shutting down (STOPPING=1).
  case stopping
}

/// The seam between the daemon's engine and the service manager. The engine calls it at its
/// state changes; the systemd implementation (`SystemdNotifier`) is beside it, a recording
/// fake in MemoTestSupport.
///
/// Contract: `notify` returns at once and never throws (a missing or broken notification
/// socket must never stop the daemon); events arrive in the order the engine sent them.
public protocol ServiceNotifier: Sendable {
  func notify(_ event: ServiceEvent)
}

/// For daemons run outside a service manager, and for tests that do not look.
public struct SilentServiceNotifier: ServiceNotifier {
  public init() {}
  public func notify(_ event: ServiceEvent) {}
}
