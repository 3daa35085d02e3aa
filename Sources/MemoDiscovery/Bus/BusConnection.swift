internal import CDBus
import Dispatch
import Foundation

/// Owns one private connection to a D-Bus bus (the system bus, where avahi-daemon lives).
/// Everything that touches the `DBusConnection` runs on `queue`: a dispatch source reads the
/// socket, replies go to the handler registered for their call, signals to the handler
/// registered for their object path. The C pointer never leaves this class; it is closed
/// and released exactly once, when the read source has been cancelled (by `close()` or
/// deinit), so the socket is never closed under a live source.
///
/// `@unchecked Sendable`: it owns the DBusConnection pointer, which (like all its mutable
/// state) is used only on the serial `queue`.
final class BusConnection: @unchecked Sendable {
  typealias ReplyHandler = @Sendable (Result<BusMessage, BusError>) -> Void
  typealias SignalHandler = @Sendable (BusMessage) -> Void

  let queue = DispatchQueue(label: "memo-peer.dbus")
  /// Marks `queue`, so work already running there (a reply handler sending the next call)
  /// is done at once, in order, instead of being queued behind later messages.
  private let onQueueKey = DispatchSpecificKey<Bool>()
  private let connection: OpaquePointer
  private let source: any DispatchSourceRead
  private var replies: [UInt32: ReplyHandler] = [:]
  private var signals: [String: SignalHandler] = [:]
  private var closed = false
  /// True while incoming messages are being handed out, so a handler that sends a call
  /// does not start a nested round of handing out (which could reorder messages).
  private var dispatching = false

  /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, or the default socket), or to
  /// `address` when given (tests run their own bus), and says Hello. Blocks for one round
  /// trip to the bus daemon; sends nothing to the network.
  init(address: String? = nil) throws(BusError) {
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    var opened: OpaquePointer?
    if let address {
      opened = dbus_connection_open_private(address, &error)
      if let connection = opened, dbus_bus_register(connection, &error) == 0 {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        opened = nil
      }
    } else {
      opened = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
    }
    guard let connection = opened else { throw Self.error(error) }
    // libdbus's default for bus connections is to _exit() when the bus goes away.
    dbus_connection_set_exit_on_disconnect(connection, 0)
    var fd: Int32 = -1
    guard dbus_connection_get_unix_fd(connection, &fd) != 0, fd >= 0 else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      throw BusError.disconnected
    }
    self.connection = connection
    queue.setSpecific(key: onQueueKey, value: true)
    source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    source.setEventHandler { [weak self] in self?.readAvailable() }
    let handle = ConnectionHandle(connection)
    source.setCancelHandler {
      dbus_connection_close(handle.pointer)
      dbus_connection_unref(handle.pointer)
    }
    source.resume()
  }

  /// Sends a method call; `reply` hears its answer (or the bus's error) on `queue`.
  func call(_ call: BusCall, reply: @escaping ReplyHandler) {
    perform { [self] in
      guard !closed else { return reply(.failure(.disconnected)) }
      guard let message = BusMessageCoding.makeMessage(call) else { return reply(.failure(.encoding)) }
      defer { dbus_message_unref(message) }
      var serial: UInt32 = 0
      guard dbus_connection_send(connection, message, &serial) != 0 else { return reply(.failure(.encoding)) }
      replies[serial] = reply
      flush()
    }
  }

  /// Sends a method call whose answer nobody needs (freeing a daemon-side object).
  func send(_ call: BusCall) {
    perform { [self] in
      guard !closed, let message = BusMessageCoding.makeMessage(call) else { return }
      dbus_message_set_no_reply(message, 1)
      dbus_connection_send(connection, message, nil)
      dbus_message_unref(message)
      flush()
    }
  }

  /// Asks the bus daemon to deliver signals matching `rule`, without waiting for its answer:
  /// the bus handles a connection's messages in order, so the rule is in force before any
  /// call sent after it.
  func addMatch(_ rule: String) {
    perform { [self] in
      guard !closed else { return }
      dbus_bus_add_match(connection, rule, nil)
      flush()
    }
  }

  /// Routes signals from the object at `path` to `handler` (nil removes the route). Called
  /// from the reply that names the object, it is in force for the very next message.
  func route(signalsFrom path: String, to handler: SignalHandler?) {
    perform { [self] in signals[path] = handler }
  }

  /// Closes the connection (the daemon then frees every object this client made) and fails
  /// the calls still waiting. Idempotent.
  func close() {
    perform { [self] in shutDown() }
  }

  deinit {
    // Nothing else can use the connection now (handlers hold `self` weakly, queued work
    // strongly); the cancel handler closes and releases it.
    source.cancel()
  }

  /// Runs `body` on `queue`: at once when already there (a reply or signal handler), so
  /// what it does comes before the next incoming message; otherwise as soon as possible.
  func perform(_ body: @escaping @Sendable () -> Void) {
    if DispatchQueue.getSpecific(key: onQueueKey) == true { body() } else { queue.async(execute: body) }
  }

  // MARK: - On `queue`

  private func shutDown() {
    guard !closed else { return }
    closed = true
    source.cancel()
    let waiting = replies.values
    replies = [:]
    signals = [:]
    for reply in waiting { reply(.failure(.disconnected)) }
  }

  /// Writes what is queued. Writing may also read what has arrived, so the queue of
  /// incoming messages is handled afterwards too.
  private func flush() {
    dbus_connection_flush(connection)
    dispatchIncoming()
  }

  private func readAvailable() {
    guard !closed else { return }
    dbus_connection_read_write(connection, 0)
    dispatchIncoming()
    if !closed && dbus_connection_get_is_connected(connection) == 0 { shutDown() }
  }

  private func dispatchIncoming() {
    guard !dispatching else { return }
    dispatching = true
    defer { dispatching = false }
    while !closed, let raw = dbus_connection_pop_message(connection) {
      let message = BusMessageCoding.parse(raw)
      dbus_message_unref(raw)
      switch message.kind {
      case .methodReturn:
        replies.removeValue(forKey: message.replySerial)?(.success(message))
      case .error:
        let detail = message.arguments.first?.string ?? ""
        replies.removeValue(forKey: message.replySerial)?(
          .failure(BusError(name: message.errorName ?? "unknown", detail: detail)))
      case .signal:
        if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
          shutDown()
        } else if let path = message.path {
          signals[path]?(message)
        }
      case .other:
        continue
      }
    }
  }

  private static func error(_ error: DBusError) -> BusError {
    BusError(
      name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
      detail: error.message.map { String(cString: $0) } ?? "")
  }
}

/// Carries the connection pointer into the read source's cancel handler, which runs once
/// on the connection's queue. `@unchecked Sendable`: nothing else uses it by then.
private final class ConnectionHandle: @unchecked Sendable {
  let pointer: OpaquePointer
  init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
