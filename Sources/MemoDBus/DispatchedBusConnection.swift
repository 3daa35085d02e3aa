import Dispatch

/// A `BusConnection` driven by a serial dispatch queue (the system bus connection to
/// avahi-daemon, MemoDiscovery): a dispatch source reads the socket, replies go to the
/// handler registered for their call, signals to the handler registered for their object
/// path. The connection is closed when the read source has been cancelled (by `close()` or
/// deinit), so the socket is never closed under a live source, and released after that.
///
/// `@unchecked Sendable`: its mutable state and the `BusConnection` (which is not Sendable)
/// are used only on the serial `queue`; every public method hops there first (`perform`).
public final class DispatchedBusConnection: @unchecked Sendable {
  public typealias ReplyHandler = @Sendable (Result<BusMessage, BusError>) -> Void
  public typealias SignalHandler = @Sendable (BusMessage) -> Void

  public let queue = DispatchQueue(label: "memo-peer.dbus")
  /// Marks `queue`, so work already running there (a reply handler sending the next call)
  /// is done at once, in order, instead of being queued behind later messages.
  private let onQueueKey = DispatchSpecificKey<Bool>()
  private let bus: BusConnection
  private let source: any DispatchSourceRead
  private var replies: [UInt32: ReplyHandler] = [:]
  private var signals: [String: SignalHandler] = [:]
  private var closed = false
  /// True while incoming messages are being handed out, so a handler that sends a call
  /// does not start a nested round of handing out (which could reorder messages).
  private var dispatching = false

  /// Connects to `address` and says Hello (see `BusConnection.init`).
  public init(_ address: BusAddress) throws(BusError) {
    let bus = try BusConnection(address)
    guard let fd = bus.socket else { throw BusError.disconnected }  // bus's deinit closes it
    self.bus = bus
    queue.setSpecific(key: onQueueKey, value: true)
    source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    source.setEventHandler { [weak self] in self?.readAvailable() }
    let handle = ConnectionHandle(bus)
    source.setCancelHandler { handle.connection.close() }
    source.resume()
  }

  /// Sends a method call; `reply` hears its answer (or the bus's error) on `queue`.
  public func call(_ call: BusCall, reply: @escaping ReplyHandler) {
    perform { [self] in
      guard !closed else { return reply(.failure(.disconnected)) }
      do throws(BusError) {
        replies[try bus.send(call)] = reply
      } catch {
        return reply(.failure(error))
      }
      flush()
    }
  }

  /// Sends a method call whose answer nobody needs (freeing a daemon-side object).
  public func send(_ call: BusCall) {
    perform { [self] in
      guard !closed else { return }
      bus.sendWithoutReply(call)
      flush()
    }
  }

  /// Asks the bus daemon to deliver signals matching `rule`, without waiting for its answer
  /// (in force before any call sent after it).
  public func addMatch(_ rule: String) {
    perform { [self] in
      guard !closed else { return }
      bus.addMatch(rule)
      flush()
    }
  }

  /// Routes signals from the object at `path` to `handler` (nil removes the route). Called
  /// from the reply that names the object, it is in force for the very next message.
  public func route(signalsFrom path: String, to handler: SignalHandler?) {
    perform { [self] in signals[path] = handler }
  }

  /// Closes the connection (the daemon then frees every object this client made) and fails
  /// the calls still waiting. Idempotent.
  public func close() {
    perform { [self] in shutDown() }
  }

  deinit {
    // Nothing else can use the connection now (handlers hold `self` weakly, queued work
    // strongly); the cancel handler closes it, and the last reference releases it.
    source.cancel()
  }

  /// Runs `body` on `queue`: at once when already there (a reply or signal handler), so
  /// what it does comes before the next incoming message; otherwise as soon as possible.
  public func perform(_ body: @escaping @Sendable () -> Void) {
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
    bus.flush()
    dispatchIncoming()
  }

  private func readAvailable() {
    guard !closed else { return }
    bus.readWrite()
    dispatchIncoming()
    if !closed && !bus.isConnected { shutDown() }
  }

  private func dispatchIncoming() {
    guard !dispatching else { return }
    dispatching = true
    defer { dispatching = false }
    while !closed, let message = bus.popMessage() {
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
}

/// Carries the connection into the read source's cancel handler, which runs once on the
/// queue. `@unchecked Sendable`: the `BusConnection` is not Sendable, but the handler runs
/// on the same serial queue as every other use of it, and after the last of them.
private final class ConnectionHandle: @unchecked Sendable {
  let connection: BusConnection
  init(_ connection: BusConnection) { self.connection = connection }
}
