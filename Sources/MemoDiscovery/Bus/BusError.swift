import MemoCore

/// A D-Bus failure, typed: the error's name says what happened (`…DBus.Error.ServiceUnknown`:
/// nobody owns the name; `…Avahi.TimeoutError`: the daemon found no answer in time).
/// Messages from the bus are kept for `--debug` diagnostics only, never shown.
struct BusError: Error, Equatable, Sendable {
  let name: String
  let detail: String

  init(name: String, detail: String = "") {
    self.name = name
    self.detail = detail
  }

  /// libdbus could not build a message (out of memory, or an argument it refused).
  static let encoding = BusError(name: "memo-peer.Error.Encoding")
  /// The connection to the bus was closed or lost.
  static let disconnected = BusError(name: "org.freedesktop.DBus.Error.Disconnected")
  /// Nothing answered within the caller's time limit.
  static let timedOut = BusError(name: "memo-peer.Error.TimedOut")

  /// The method does not exist: an older avahi-daemon without `org.freedesktop.Avahi.Server2`.
  var isUnknownMethod: Bool {
    name == "org.freedesktop.DBus.Error.UnknownMethod" || name == "org.freedesktop.DBus.Error.UnknownInterface"
  }

  /// The bus is unreachable, or no process owns avahi-daemon's name on it.
  var meansDaemonUnreachable: Bool {
    [
      "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
      "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.FileNotFound",
      "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.AccessDenied",
      "org.freedesktop.DBus.Error.BadAddress", "org.freedesktop.DBus.Error.Disconnected",
      "org.freedesktop.DBus.Error.Spawn.ExecFailed",
    ].contains(name)
  }

  /// What the user sees: "daemon unreachable" with how to start it, or Avahi's refusal by name.
  var memoPeerError: MemoPeerError {
    if meansDaemonUnreachable { return DaemonUnavailable.error(diagnostics: "\(name): \(detail)") }
    if self == Self.timedOut || name == "org.freedesktop.Avahi.TimeoutError" {
      return MemoPeerError(.discovery, "no answer from the network in time", hint: "run `memo-peer doctor`")
    }
    return MemoPeerError(
      .discovery, "avahi-daemon refused the request (\(name))", hint: "run `memo-peer doctor`",
      diagnostics: detail)
  }
}

/// The one message for "no mDNS daemon to talk to", whichever API found out.
enum DaemonUnavailable {
  static func error(diagnostics: String?, dnsServiceCode: Int32? = nil) -> MemoPeerError {
    MemoPeerError(
      .daemonUnavailable, "the mDNS daemon (avahi-daemon) cannot be reached over D-Bus",
      hint: "start it with `systemctl start avahi-daemon` (and make sure dbus runs); "
        + "`memo-peer doctor` checks the rest",
      diagnostics: diagnostics, dnsServiceCode: dnsServiceCode)
  }
}
