internal import CDBus
import FoundationEssentials
import MemoSystem

/// Which bus to connect to.
public enum BusAddress: Sendable, Equatable {
  /// The system bus, where avahi-daemon lives: DBUS_SYSTEM_BUS_ADDRESS, or the default
  /// socket (libdbus reads the variable itself).
  case system
  /// The bus at a D-Bus address (`unix:path=…`): the session bus, or a test's own bus.
  case address(String)

  /// The user's session bus: DBUS_SESSION_BUS_ADDRESS in `environment`, else
  /// $XDG_RUNTIME_DIR/bus when that socket exists. Nil when neither names one (as for a
  /// system daemon): never libdbus's X11 autolaunch.
  public static func session(environment: [String: String]) -> BusAddress? {
    var address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
    if address.isEmpty, let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"),
      FileManager.default.fileExists(atPath: runtime + "/bus")
    {
      address = "unix:path=" + runtime + "/bus"
    }
    return address.isEmpty ? nil : .address(address)
  }
}

/// One private connection to a D-Bus bus, through libdbus: the one owner of its
/// `DBusConnection`, which it closes and releases in deinit (or closes earlier, on `close()`).
/// Calls take and give `BusCall`, `BusMessage` and `BusError`; no libdbus type leaves the
/// module.
///
/// Not Sendable: libdbus connections are not to be driven from two threads at once. Its
/// users keep it to one thread at a time: `DispatchedBusConnection` on its serial queue,
/// `SessionBusNotifications` (MemoNode) under a `Mutex`.
public final class BusConnection {
  private let connection: OpaquePointer
  private var closed = false

  /// Connects and says Hello. Blocks for one round trip to the bus daemon; sends nothing to
  /// the network. libdbus's default of exiting the process when the bus goes away is off.
  public init(_ address: BusAddress) throws(BusError) {
    // libdbus is loaded by the first connection (CLazyLibraries), not at every start.
    do { try LazyLibrary.dbus.load() } catch { throw BusError.libraryMissing(error) }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    var opened: OpaquePointer?
    switch address {
    case .system:
      opened = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
    case .address(let address):
      opened = dbus_connection_open_private(address, &error)
      if let connection = opened, dbus_bus_register(connection, &error) == 0 {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        opened = nil
      }
    }
    guard let connection = opened else { throw BusError(error) }
    dbus_connection_set_exit_on_disconnect(connection, 0)
    self.connection = connection
  }

  deinit {
    close()
    dbus_connection_unref(connection)
  }

  /// Closes the connection (the bus then drops what this client owned). Idempotent; after
  /// it, calls fail with `BusError.disconnected` and nothing more is received.
  public func close() {
    guard !closed else { return }
    closed = true
    dbus_connection_close(connection)
  }

  /// Whether the connection is open and the bus still there.
  public var isConnected: Bool { !closed && dbus_connection_get_is_connected(connection) != 0 }

  /// The connection's socket, for a dispatch read source; nil when it has none.
  public var socket: Int32? {
    var fd: Int32 = -1
    guard dbus_connection_get_unix_fd(connection, &fd) != 0, fd >= 0 else { return nil }
    return fd
  }

  /// Queues a method call and returns its serial, which its reply names
  /// (`BusMessage.replySerial`). Written by `flush()` or the next read and write.
  public func send(_ call: BusCall) throws(BusError) -> UInt32 {
    guard !closed else { throw .disconnected }
    var serial: UInt32 = 0
    let queued = BusMessageCoding.withMessage(call) { dbus_connection_send(connection, $0, &serial) != 0 }
    guard queued == true else { throw .encoding }
    return serial
  }

  /// Queues a method call whose answer nobody needs (freeing a service-side object); one
  /// that cannot be sent is dropped.
  public func sendWithoutReply(_ call: BusCall) {
    guard !closed else { return }
    BusMessageCoding.withMessage(call) { message in
      dbus_message_set_no_reply(message, 1)
      dbus_connection_send(connection, message, nil)
    }
  }

  /// Sends a method call and waits up to `timeoutMilliseconds` for its reply. The bus's or
  /// the service's error comes back under its own name (`…DBus.Error.NoReply` on timeout).
  /// Messages that arrive meanwhile wait for `popMessage()`.
  public func call(_ call: BusCall, timeoutMilliseconds: Int32) throws(BusError) -> BusMessage {
    guard !closed else { throw .disconnected }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let answer: BusMessage?? = BusMessageCoding.withMessage(call) { message in
      guard let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMilliseconds, &error)
      else { return nil }
      defer { dbus_message_unref(reply) }
      return BusMessageCoding.parse(reply)
    }
    guard let sent = answer else { throw .encoding }
    guard let reply = sent else { throw BusError(error) }
    return reply
  }

  /// Asks the bus to deliver signals matching `rule`, without waiting for its answer: the
  /// bus handles a connection's messages in order, so the rule is in force before any call
  /// sent after it.
  public func addMatch(_ rule: String) {
    guard !closed else { return }
    dbus_bus_add_match(connection, rule, nil)
  }

  /// `addMatch`, waiting for the bus to accept the rule.
  public func addMatchAndWait(_ rule: String) throws(BusError) {
    guard !closed else { throw .disconnected }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    dbus_bus_add_match(connection, rule, &error)
    if dbus_error_is_set(&error) != 0 { throw BusError(error) }
  }

  /// Writes everything queued (blocking until written).
  public func flush() {
    guard !closed else { return }
    dbus_connection_flush(connection)
  }

  /// Reads what has arrived and writes what is queued, waiting at most
  /// `timeoutMilliseconds` (0: not at all) for the socket.
  public func readWrite(timeoutMilliseconds: Int32 = 0) {
    guard !closed else { return }
    _ = dbus_connection_read_write(connection, timeoutMilliseconds)  // false only once disconnected
  }

  /// The next message received and not yet handed out, parsed; nil when there is none.
  public func popMessage() -> BusMessage? {
    guard !closed, let message = dbus_connection_pop_message(connection) else { return nil }
    defer { dbus_message_unref(message) }
    return BusMessageCoding.parse(message)
  }
}

extension BusError {
  /// libdbus's error, by its name (`…DBus.Error.Failed` when it set none).
  init(_ error: DBusError) {
    self.init(
      name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
      detail: error.message.map { String(cString: $0) } ?? "")
  }
}
