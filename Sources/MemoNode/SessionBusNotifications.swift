internal import CDBus
import Foundation
import MemoCore

/// Where desktop notices go: org.freedesktop.Notifications, or a fake in tests.
///
/// Contract: `send` returns the notification's id, or nil when it could not be shown (no
/// notification daemon); it never throws and never blocks for long. `invokedActions`
/// returns the ids of notifications whose "Open" action was chosen since the last call.
public protocol DesktopNotifying: Sendable {
  func send(_ notice: DesktopNotice) -> UInt32?
  func invokedActions() -> [UInt32]
}

/// org.freedesktop.Notifications on the user's session bus, through libdbus. Apart from
/// the system-bus connection to avahi-daemon (MemoDiscovery), on purpose: a different bus,
/// different rules (the session bus may start the notification daemon on demand), and
/// nothing here should ever reach avahi-daemon.
///
/// `@unchecked Sendable`: the connection is only used under `lock`; the C pointer never
/// leaves this class and is closed and released in deinit.
public final class SessionBusNotifications: DesktopNotifying, @unchecked Sendable {
  private let lock = NSLock()
  private let connection: OpaquePointer
  static let service = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"
  /// How long a call may wait for the notification daemon.
  static let timeoutMilliseconds: Int32 = 2000

  /// Connects to the session bus named by DBUS_SESSION_BUS_ADDRESS (or
  /// $XDG_RUNTIME_DIR/bus); nil when there is none, as for the system daemon.
  public init?(environment: [String: String]) {
    var address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
    if address.isEmpty, let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"),
      FileManager.default.fileExists(atPath: runtime + "/bus")
    {
      address = "unix:path=" + runtime + "/bus"
    }
    // Never libdbus's X11 autolaunch: no bus named, no notifications.
    guard !address.isEmpty else { return nil }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard let opened = dbus_connection_open_private(address, &error) else { return nil }
    guard dbus_bus_register(opened, &error) != 0 else {
      dbus_connection_close(opened)
      dbus_connection_unref(opened)
      return nil
    }
    dbus_connection_set_exit_on_disconnect(opened, 0)
    dbus_bus_add_match(
      opened, "type='signal',interface='\(Self.service)',member='ActionInvoked'", &error)
    connection = opened
  }

  deinit {
    dbus_connection_close(connection)
    dbus_connection_unref(connection)
  }

  public func send(_ notice: DesktopNotice) -> UInt32? {
    lock.withLock {
      guard let message = dbus_message_new_method_call(Self.service, Self.path, Self.service, "Notify") else {
        return nil
      }
      defer { dbus_message_unref(message) }
      var arguments = DBusMessageIter()
      dbus_message_iter_init_append(message, &arguments)
      var replaces: UInt32 = 0
      var expire: Int32 = -1
      guard append(&arguments, "memo-peer"), dbus_message_iter_append_basic(&arguments, code("u"), &replaces) != 0,
        append(&arguments, "mail-unread"), append(&arguments, notice.summary), append(&arguments, notice.body),
        appendStrings(&arguments, ["default", "Open"]), appendEmptyHints(&arguments),
        dbus_message_iter_append_basic(&arguments, code("i"), &expire) != 0
      else { return nil }
      var error = DBusError()
      dbus_error_init(&error)
      defer { dbus_error_free(&error) }
      guard
        let reply = dbus_connection_send_with_reply_and_block(
          connection, message, Self.timeoutMilliseconds, &error)
      else { return nil }
      defer { dbus_message_unref(reply) }
      var iterator = DBusMessageIter()
      guard dbus_message_iter_init(reply, &iterator) != 0, dbus_message_iter_get_arg_type(&iterator) == code("u")
      else { return nil }
      var id: UInt32 = 0
      dbus_message_iter_get_basic(&iterator, &id)
      return id
    }
  }

  public func invokedActions() -> [UInt32] {
    lock.withLock {
      var invoked: [UInt32] = []
      // Reads what has arrived, without waiting.
      _ = dbus_connection_read_write(connection, 0)
      while let message = dbus_connection_pop_message(connection) {
        defer { dbus_message_unref(message) }
        guard dbus_message_is_signal(message, Self.service, "ActionInvoked") != 0 else { continue }
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0, dbus_message_iter_get_arg_type(&iterator) == code("u")
        else { continue }
        var id: UInt32 = 0
        dbus_message_iter_get_basic(&iterator, &id)
        invoked.append(id)
      }
      return invoked
    }
  }

  // MARK: - Encoding (on the caller's message, under `lock`)

  private func code(_ character: Unicode.Scalar) -> Int32 { Int32(UInt8(ascii: character)) }

  private func append(_ iterator: inout DBusMessageIter, _ text: String) -> Bool {
    text.withCString { pointer in
      var cString: UnsafePointer<CChar>? = pointer
      return dbus_message_iter_append_basic(&iterator, code("s"), &cString) != 0
    }
  }

  private func appendStrings(_ iterator: inout DBusMessageIter, _ texts: [String]) -> Bool {
    var array = DBusMessageIter()
    guard dbus_message_iter_open_container(&iterator, code("a"), "s", &array) != 0 else { return false }
    for text in texts where !append(&array, text) {
      dbus_message_iter_abandon_container(&iterator, &array)
      return false
    }
    return dbus_message_iter_close_container(&iterator, &array) != 0
  }

  private func appendEmptyHints(_ iterator: inout DBusMessageIter) -> Bool {
    var dictionary = DBusMessageIter()
    guard dbus_message_iter_open_container(&iterator, code("a"), "{sv}", &dictionary) != 0 else { return false }
    return dbus_message_iter_close_container(&iterator, &dictionary) != 0
  }
}
