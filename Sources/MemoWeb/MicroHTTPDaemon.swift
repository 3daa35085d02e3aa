internal import CMicroHTTPD
import MemoCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One libmicrohttpd daemon serving one listening socket through a `WebFrontDoor`. The
/// daemon pointer lives and dies here: started in init, stopped (joining libmicrohttpd's
/// threads, closing the socket and every connection) in `stop` or deinit.
///
/// libmicrohttpd calls `accessHandler` from its own threads; each call gets the request's
/// `PendingRequest` through `con_cls`, retained until `requestCompleted` releases it.
final class MicroHTTPDaemon: Sendable {
  /// The limits every connection is held to (docs/WEB.md).
  struct Limits: Sendable {
    /// Connections open at once; more are accepted and closed at once.
    var connections: UInt32 = 100
    /// Seconds a connection may stay silent before it is closed.
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
  init(socket: Int32, frontDoor: WebFrontDoor, limits: Limits) throws {
    let context = Unmanaged.passRetained(DaemonContext(frontDoor: frontDoor))
    let pointer = memo_mhd_start(
      socket, limits.threads, limits.connections, limits.idleTimeout, limits.memoryPerConnection, accessHandler,
      context.toOpaque(), requestCompleted, nil)
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

  /// Stops accepting, ends every connection, joins the threads. Idempotent.
  func stop() {
    let handle = daemon.withLock { handle -> DaemonHandle? in
      defer { handle = nil }
      return handle
    }
    guard let handle else { return }
    MHD_stop_daemon(handle.pointer)
    // No libmicrohttpd thread is left that could still use the context.
    context.release()
  }

  deinit { stop() }
}

/// The daemon pointer, moved between threads only inside `MicroHTTPDaemon`'s mutex.
private struct DaemonHandle: @unchecked Sendable {
  // Unchecked: a C pointer; libmicrohttpd's calls on a daemon are safe from any thread,
  // and MicroHTTPDaemon stops it exactly once.
  let pointer: OpaquePointer
}

/// What every request of one daemon shares: the front door.
private final class DaemonContext: Sendable {
  let frontDoor: WebFrontDoor
  init(frontDoor: WebFrontDoor) { self.frontDoor = frontDoor }
}

/// One request in progress: its head, and its body as it arrives. Touched only by the one
/// libmicrohttpd thread that serves the connection, one call at a time.
private final class PendingRequest {
  let head: HTTPRequest
  var body: [UInt8] = []
  var answered = false

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
  let frontDoor = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().frontDoor
  guard let existing = state.pointee else {
    // The head has arrived: check it before reading any body.
    let head = requestHead(connection, url: url, method: method)
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
      return queue(
        frontDoor.screen(refusal, contentLength: UInt64(APICall.maxBodyBytes) + 1)
          ?? HTTPResponse.error(413, code: "too-large", "the request body is too large"), on: connection)
    }
    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
      pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
    }
    return .YES
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
  guard let state, let existing = state.pointee else { return }
  state.pointee = nil
  let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeRetainedValue()
  pending.wipe()
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
  return HTTPRequest(
    method: text(method), path: text(url), query: fields(.GET_ARGUMENT_KIND), headers: fields(.HEADER_KIND),
    cookies: fields(.COOKIE_KIND))
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
