import MemoCore
import MemoDBus
import MemoPresentation
import Synchronization

/// Where desktop notices go: org.freedesktop.Notifications, or a fake in tests.
///
/// Contract: `send` returns the notification's id, or nil when it could not be shown (no
/// notification daemon); it never throws and never blocks for long. `invokedActions`
/// returns the ids of notifications whose "Open" action was chosen since the last call.
public protocol DesktopNotifying: Sendable {
  func send(_ notice: DesktopNotice) -> UInt32?
  func invokedActions() -> [UInt32]
}

/// org.freedesktop.Notifications on the user's session bus, through MemoDBus. Its own
/// connection, apart from the system-bus one to avahi-daemon (MemoDiscovery), on purpose: a
/// different bus, different rules (the session bus may start the notification daemon on
/// demand), and nothing here should ever reach avahi-daemon.
///
/// Sendable: the connection (which is not) is used only inside its `Mutex`.
public final class SessionBusNotifications: DesktopNotifying {
  private let connection: Mutex<BusConnection>
  static let service = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"
  /// How long a call may wait for the notification daemon.
  static let timeoutMilliseconds: Int32 = 2000

  /// Connects to the session bus named by DBUS_SESSION_BUS_ADDRESS (or
  /// $XDG_RUNTIME_DIR/bus); nil when there is none, as for the system daemon.
  public init?(environment: [String: String]) {
    // Never libdbus's X11 autolaunch: no bus named, no notifications.
    guard let address = BusAddress.session(environment: environment),
      let bus = try? BusConnection(address)
    else { return nil }
    // Errors ignored, as ever: without the rule, "Open" is simply never heard.
    try? bus.addMatchAndWait("type='signal',interface='\(Self.service)',member='ActionInvoked'")
    connection = Mutex(bus)
  }

  public func send(_ notice: DesktopNotice) -> UInt32? {
    // Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout).
    let call = BusCall(
      destination: Self.service, path: Self.path, interface: Self.service, member: "Notify",
      arguments: [
        .string("memo-peer"), .uint32(0), .string("mail-unread"), .string(notice.summary), .string(notice.body),
        .strings(["default", "Open"]), .properties([:]), .int32(-1),
      ],
      startsService: true)
    return connection.withLock { bus in
      // No notification daemon, or it refused: no notice (the contract never throws).
      let reply = try? bus.call(call, timeoutMilliseconds: Self.timeoutMilliseconds)
      return reply?.arguments.first?.uint32
    }
  }

  public func invokedActions() -> [UInt32] {
    connection.withLock { bus in
      var invoked: [UInt32] = []
      // Reads what has arrived, without waiting.
      bus.readWrite(timeoutMilliseconds: 0)
      while let message = bus.popMessage() {
        guard message.kind == .signal, message.interface == Self.service, message.member == "ActionInvoked",
          let id = message.arguments.first?.uint32
        else { continue }
        invoked.append(id)
      }
      return invoked
    }
  }
}
