internal import CMicroHTTPD
import FoundationEssentials
import MemoCore
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One libmicrohttpd daemon serving one listening socket through a `WebFrontDoor`. The
/// daemon pointer lives and dies here: started in init, stopped (joining libmicrohttpd's
/// threads, closing the socket and every connection) in `stop` or deinit.
///
/// libmicrohttpd calls `accessHandler` from its own threads; each call gets the request's
/// `PendingRequest` through `con_cls`, retained until `requestCompleted` releases it. Each
/// connection goes through the `ConnectionGate` as it starts (`connectionNotified`): a
/// refused one is shut down at once, an admitted one carries its entry's number as its
/// socket context, so the gate hears when its head arrives, when it is answered and when it
/// closes.
final class MicroHTTPDaemon: Sendable {
  /// The limits every connection is held to (docs/WEB.md).
  struct Limits: Sendable {
    /// libmicrohttpd's own ceiling, far above the gate's (`ConnectionGate.Limits`), so that
    /// libmicrohttpd never stops accepting: the gate refuses, and closes, first.
    var connections: UInt32 = 1000
    /// Seconds a connection may stay silent before it is closed (the gate's deadlines are
    /// shorter for a head).
    var idleTimeout: UInt32 = 30
    /// Bytes of libmicrohttpd's buffer per connection: request line and headers must fit.
    var memoryPerConnection = 64 * 1024
    /// libmicrohttpd's threads (each runs requests one after another).
    var threads: UInt32 = 2
  }

  private let daemon: Mutex<DaemonHandle?>
  private let context: Unmanaged<DaemonContext>

  /// Starts serving `socket` (a listening socket made by `LoopbackListener`, closed by the
  /// daemon when it stops; closed here if it cannot start).
  init(socket: Int32, frontDoor: WebFrontDoor, gate: ConnectionGate, limits: Limits, longestWait: Double) throws {
    // libmicrohttpd is loaded here, by the commands that serve the page (CLazyLibraries).
    do { try LazyLibrary.microhttpd.load() } catch {
      close(socket)
      throw MemoPeerError(.io, "the web server cannot start: " + error.message, hint: error.hint)
    }
    let context = Unmanaged.passRetained(
      DaemonContext(frontDoor: frontDoor, gate: gate, waiters: ChangeWaiters(longestWait: longestWait)))
    let pointer = memo_mhd_start(
      socket, limits.threads, limits.connections, limits.idleTimeout, limits.memoryPerConnection, accessHandler,
      context.toOpaque(), requestCompleted, context.toOpaque(), connectionNotified, context.toOpaque())
    guard let pointer else {
      close(socket)
      context.release()
      throw MemoPeerError(
        .io, "the web server (libmicrohttpd) could not start its threads",
        hint: "the system may be out of threads or memory; try again")
    }
    self.context = context
    daemon = Mutex(DaemonHandle(pointer: pointer))
  }

  /// Lets go the status calls whose wait is over (`ChangeWaiters.wake`): each is then
  /// answered on one of libmicrohttpd's threads. Under the daemon's lock: once `stop` has
  /// begun, no wake runs or starts (the context is released when the daemon has stopped).
  func wakeWaiters(now: Double, look: MarkLook) {
    daemon.withLock { handle in
      guard handle != nil else { return }
      context.takeUnretainedValue().waiters.wake(now: now, look: look) { MHD_resume_connection($0.pointer) }
    }
  }

  /// How many status calls wait for a change.
  var waiting: Int {
    daemon.withLock { handle in handle == nil ? 0 : context.takeUnretainedValue().waiters.count }
  }

  /// Stops accepting, ends every connection, joins the threads. Idempotent.
  func stop() {
    let handle = daemon.withLock { handle -> DaemonHandle? in
      defer { handle = nil }
      return handle
    }
    guard let handle else { return }
    // Every waiting call is let go first, and none is held from now on: libmicrohttpd
    // stops a daemon with suspended connections only with a complaint.
    context.takeUnretainedValue().waiters.close { MHD_resume_connection($0.pointer) }
    MHD_stop_daemon(handle.pointer)
    // No libmicrohttpd thread is left that could still use the context.
    context.release()
  }

  deinit { stop() }
}

/// The daemon pointer, moved between threads only inside `MicroHTTPDaemon`'s mutex.
///
/// `@unchecked Sendable`: a C pointer; libmicrohttpd's calls on a daemon are safe from any
/// thread, and MicroHTTPDaemon stops it exactly once.
private struct DaemonHandle: @unchecked Sendable {
  let pointer: OpaquePointer
}

/// A connection of libmicrohttpd's, held in `ChangeWaiters` while its status call waits.
///
/// `@unchecked Sendable`: a C pointer, used only for MHD_suspend_connection (on the thread
/// serving it) and MHD_resume_connection (from any thread, as libmicrohttpd allows), each
/// once, under the waiters' lock; the connection lives until it is resumed.
private struct ConnectionHandle: @unchecked Sendable {
  let pointer: OpaquePointer
}

/// What every request of one daemon shares: the front door, the connection gate and the
/// status calls waiting for a change.
private final class DaemonContext: Sendable {
  let frontDoor: WebFrontDoor
  let gate: ConnectionGate
  let waiters: ChangeWaiters<ConnectionHandle>
  init(frontDoor: WebFrontDoor, gate: ConnectionGate, waiters: ChangeWaiters<ConnectionHandle>) {
    self.frontDoor = frontDoor
    self.gate = gate
    self.waiters = waiters
  }
}

/// Shuts down the connections of a gate as they pass their deadline, on a thread of its
/// own, until stopped. It sleeps until the next deadline, and at most `longestSleep`: a
/// connection accepted meanwhile has its deadline `headSeconds` later, so a server with
/// nobody connected wakes once a second (it woke four times a second before), and an
/// overdue connection is shut down within `lateness` of its deadline.
final class ConnectionWatchdog: Sendable {
  static let longestSleep = 1.0
  static let lateness = 0.01
  private let stopped = Mutex(false)

  /// `tick` runs on each wake, after the deadlines: the server lets go the status calls
  /// that waited their longest (`WebServer`), whoever else wakes them.
  init(gate: ConnectionGate, logger: Logger, tick: @escaping @Sendable () -> Void = {}) {
    // Without its thread the server still serves; only deadlines go unwatched, so the
    // failure is logged.
    do {
      try SystemThread.start(name: "mp.web-watchdog") { [self] in
        var lastReport = monotonicSeconds()
        while !stopped.withLock({ $0 }) {
          let now = monotonicSeconds()
          let ended = gate.endOverdue(now: now) { memo_shutdown_socket($0) }
          if ended > 0 { logger.debug("closed \(ended, privacy: .public) connections past their deadline") }
          tick()
          if now - lastReport >= 10 {
            lastReport = now
            for (reason, count) in gate.takeRefusals() {
              logger.debug("refused \(count, privacy: .public) connections: \(reason.rawValue, privacy: .public)")
            }
          }
          let untilNext = (gate.nextDeadline() ?? .infinity) - monotonicSeconds() + Self.lateness
          SystemThread.sleep(seconds: min(Self.longestSleep, max(untilNext, Self.lateness)))
        }
      }
    } catch {
      logger.error(error, while: "starting the connection watchdog")
    }
  }

  func stop() { stopped.withLock { $0 = true } }
}

/// Seconds on the monotonic clock (deadlines and lifetimes never move with the wall clock).
public func monotonicSeconds() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// The gate's entry number of a connection (its socket context), if it was admitted.
private func gateEntry(_ connection: OpaquePointer) -> UInt64? {
  memo_mhd_socket_context(connection).map { UInt64(UInt(bitPattern: $0)) }
}

/// One request in progress: its head, and its body as it arrives. Touched only by the one
/// libmicrohttpd thread that serves the connection, one call at a time.
private final class PendingRequest {
  let head: HTTPRequest
  var body: [UInt8] = []
  var answered = false
  /// Whether the request has waited for a change already: when libmicrohttpd calls again
  /// after the wait, it is answered.
  var waited = false

  init(head: HTTPRequest) { self.head = head }

  /// Overwrites the body: it may hold a passphrase or memo text.
  func wipe() {
    for index in body.indices { body[index] = 0 }
    body = []
  }
}

// MARK: - Callbacks (global functions: C calls them from libmicrohttpd's threads)

private func accessHandler(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
  _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
  _ uploadSize: UnsafeMutablePointer<Int>?, _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
  guard let cls, let connection, let state, let uploadSize else { return .NO }
  let context = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
  let frontDoor = context.frontDoor
  guard let existing = state.pointee else {
    // The head has arrived: check it before reading any body.
    let entry = gateEntry(connection)
    if let entry { context.gate.headArrived(entry, now: monotonicSeconds()) }
    var head = requestHead(connection, url: url, method: method)
    head.version = text(version)
    // Whose connection it is, as the kernel told when it started (nil: not told, refused).
    head.user = entry.flatMap { context.gate.user(of: $0) }
    let pending = PendingRequest(head: head)
    state.pointee = Unmanaged.passRetained(pending).toOpaque()
    let length = head.singleHeader("Content-Length").flatMap { UInt64($0) }
    if let refusal = frontDoor.screen(head, contentLength: length) {
      pending.answered = true
      return queue(refusal, on: connection)
    }
    return .YES
  }
  let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
  let size = uploadSize.pointee
  if pending.answered {
    uploadSize.pointee = 0
    return .YES
  }
  if size > 0 {
    uploadSize.pointee = 0
    guard pending.body.count + size <= APICall.maxBodyBytes, let uploadData else {
      // Not reached while the head's Content-Length is checked (a body without one is
      // refused with 411); kept so that the limit holds whatever arrives. The rest is
      // discarded, unread.
      pending.answered = true
      pending.wipe()
      var refusal = HTTPRequest(method: pending.head.method, path: pending.head.path, headers: pending.head.headers)
      refusal.cookies = pending.head.cookies
      refusal.malformed = pending.head.malformed
      refusal.user = pending.head.user
      refusal.version = pending.head.version
      return queue(
        frontDoor.screen(refusal, contentLength: UInt64(APICall.maxBodyBytes) + 1)
          ?? HTTPResponse.error(413, code: "too-large", "the request body is too large"), on: connection)
    }
    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
      pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
    }
    return .YES
  }
  if !pending.waited, let mark = frontDoor.waitMark(for: pending.head) {
    // Held without a thread until the mark moves; libmicrohttpd calls again after.
    pending.waited = true
    let held = context.waiters.suspend(ConnectionHandle(pointer: connection), mark: mark, now: monotonicSeconds()) {
      MHD_suspend_connection($0.pointer)
    }
    if held { return .YES }
  }
  var request = pending.head
  // Moved, not copied: one buffer to wipe afterwards.
  swap(&request.body, &pending.body)
  let response = frontDoor.respond(to: request)
  for index in request.body.indices { request.body[index] = 0 }
  pending.answered = true
  return queue(response, on: connection)
}

private func requestCompleted(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
  _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
  _ reason: MHD_RequestTerminationCode
) {
  if let cls, let connection, let entry = gateEntry(connection) {
    Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().gate.requestFinished(entry, now: monotonicSeconds())
  }
  guard let state, let existing = state.pointee else { return }
  state.pointee = nil
  let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeRetainedValue()
  pending.wipe()
}

/// A connection starts or ends. A new one is admitted by the gate or shut down at once (so
/// libmicrohttpd closes it on its next read, before reading anything); a closing one leaves
/// the gate (libmicrohttpd calls this before it closes the descriptor).
private func connectionNotified(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
  _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
  guard let cls, let connection, let socketContext else { return }
  let context = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
  if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
    let fd = memo_mhd_connection_fd(connection)
    guard fd >= 0 else { return }
    let uid = memo_peer_socket_uid(fd)
    var buffer = [CChar](repeating: 0, count: 64)
    let length = memo_peer_address(fd, &buffer, buffer.count)
    let address = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    switch context.gate.admit(
      user: uid >= 0 ? UInt32(truncatingIfNeeded: uid) : nil, address: address, fd: fd, now: monotonicSeconds())
    {
    case .success(let entry):
      socketContext.pointee = UnsafeMutableRawPointer(bitPattern: UInt(entry))
    case .failure:
      // Counted by the gate, logged by the watchdog as counts.
      socketContext.pointee = nil
      memo_shutdown_socket(fd)
    }
  } else if code.rawValue == 1, let pointer = socketContext.pointee {
    // MHD_CONNECTION_NOTIFY_CLOSED
    socketContext.pointee = nil
    context.gate.closed(UInt64(UInt(bitPattern: pointer)))
  }
}

/// Hands a response to libmicrohttpd (which sends it and wipes its copy when done).
private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
  let made = response.body.withUnsafeBytes { memo_mhd_response_copying($0.baseAddress, $0.count) }
  guard let made else { return .NO }
  defer { MHD_destroy_response(made) }
  for field in response.headers {
    guard MHD_add_response_header(made, field.name, field.value) == .YES else { return .NO }
  }
  return MHD_queue_response(connection, UInt32(response.status), made)
}

/// The request line and headers, cookies and query parameters as libmicrohttpd parsed them.
private func requestHead(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?)
  -> HTTPRequest
{
  func fields(_ kind: MHD_ValueKind) -> [HTTPField] {
    let collected = FieldCollector()
    withExtendedLifetime(collected) {
      _ = MHD_get_connection_values(connection, kind, collectField, Unmanaged.passUnretained(collected).toOpaque())
    }
    return collected.fields
  }
  // libmicrohttpd left every escape as it came (memo_mhd_keep_escapes): decoded here,
  // strictly, or the request is marked malformed and refused.
  var malformed = false
  func decoded(_ raw: String) -> String {
    guard let value = HTTPRequest.percentDecoded(raw) else {
      malformed = true
      return ""
    }
    return value
  }
  let query = fields(.GET_ARGUMENT_KIND).map { HTTPField(decoded($0.name), decoded($0.value)) }
  var request = HTTPRequest(
    method: text(method), path: decoded(text(url)), query: query, headers: fields(.HEADER_KIND),
    cookies: fields(.COOKIE_KIND))
  request.malformed = malformed
  return request
}

private final class FieldCollector {
  var fields: [HTTPField] = []
}

private func collectField(
  _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?
) -> MHD_Result {
  guard let cls else { return .NO }
  let collector = Unmanaged<FieldCollector>.fromOpaque(cls).takeUnretainedValue()
  // A bounded number: libmicrohttpd's per-connection memory limit bounds them anyway.
  guard collector.fields.count < 256 else { return .NO }
  collector.fields.append(HTTPField(text(key), text(value)))
  return .YES
}

/// A C string from libmicrohttpd as text; bytes that are not UTF-8 become U+FFFD, so they
/// can never match a name or token the checks look for.
private func text(_ pointer: UnsafePointer<CChar>?) -> String {
  guard let pointer else { return "" }
  return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}
