import MemoCore
import MemoDBus

/// What D-Bus failures mean when the other end is avahi-daemon on the system bus.
extension BusError {
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
    if name == Self.libraryMissingName {
      return MemoPeerError(.io, "D-Bus cannot be used: " + detail, remedy: .runDoctor(device: nil))
    }
    if meansDaemonUnreachable { return DaemonUnavailable.error(diagnostics: "\(name): \(detail)") }
    if self == Self.timedOut || name == "org.freedesktop.Avahi.TimeoutError" {
      return MemoPeerError(.discovery, "no answer from the network in time", remedy: .runDoctor(device: nil))
    }
    return MemoPeerError(
      .discovery, "avahi-daemon refused the request (\(name))", remedy: .runDoctor(device: nil),
      diagnostics: detail)
  }
}

/// The one message for "no mDNS daemon to talk to", whichever API found out.
enum DaemonUnavailable {
  static func error(diagnostics: String?, dnsServiceCode: Int32? = nil) -> MemoPeerError {
    MemoPeerError(
      .daemonUnavailable, "the mDNS daemon (avahi-daemon) cannot be reached over D-Bus",
      hint: "start it with `systemctl start avahi-daemon` (and make sure dbus runs)",
      remedy: .runDoctor(device: nil),
      diagnostics: diagnostics, dnsServiceCode: dnsServiceCode)
  }
}
