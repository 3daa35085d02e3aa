internal import COpenSSL
internal import COpenSSLShims
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One TLS 1.3 connection carrying memo-peer frames. Owns its SSL object and its socket
/// (non-blocking; every wait is a poll(2) against a deadline, so no peer can hold a thread
/// longer than the limits allow).
///
/// One thread drives a connection; `interrupt()` may be called from any other thread to
/// close it at once (trust removed, server stopping). A `FrameChannel`: the sessions take it
/// through that protocol only.
///
/// `@unchecked Sendable`: it owns the SSL object and the socket, used by the one driving
/// thread only; what other threads touch (the verdict, the interrupt flag) is in `state`, a
/// `Mutex`, and `interrupt()` only shuts the socket down (shutdown(2) is safe from any thread).
public final class TLSConnection: FrameChannel, @unchecked Sendable {
  let ssl: OpaquePointer
  let fd: Int32
  public let limits: ConnectionLimits
  /// Which device keys this side accepts from the other.
  private let accepts: @Sendable (DeviceID) -> Bool
  private let state = Mutex(State())
  public let remoteAddress: String
  public var remoteHost: String? { remoteAddress == "?" ? nil : remoteAddress }
  /// The frame being read: only the driving thread touches it.
  private var decoder: FrameDecoder

  /// What the verify callback learns and what `interrupt()` sets.
  private struct State {
    var presentedID: DeviceID?
    var rejection: TransportError?
    var interrupted = false
  }

  /// Takes ownership of `fd` (closed in deinit, also when init throws).
  init(
    fd: Int32, context: TLSContext, limits: ConnectionLimits, remoteAddress: String,
    accepts: @escaping @Sendable (DeviceID) -> Bool
  ) throws(TransportError) {
    guard let ssl = SSL_new(context.context) else {
      Glibc.close(fd)
      throw .openSSL(.library, "SSL_new")
    }
    self.ssl = ssl
    self.fd = fd
    self.limits = limits
    self.accepts = accepts
    self.remoteAddress = remoteAddress
    self.decoder = FrameDecoder(maximumPayload: limits.maximumPayload)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    SSL_set_fd(ssl, fd)
    if context.role == .server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
    // Weak in spirit: the connection outlives every callback, which only runs inside
    // SSL calls this object makes.
    SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
  }

  deinit {
    SSL_free(ssl)
    Glibc.close(fd)
  }

  /// TLS record bytes written to and read from the socket so far (handshake included):
  /// what crossed the wire above TCP, for the sync's byte counts and benchmarks.
  public var wireBytes: (sent: UInt64, received: UInt64) {
    (UInt64(BIO_number_written(SSL_get_wbio(ssl))), UInt64(BIO_number_read(SSL_get_rbio(ssl))))
  }

  /// The application protocol both sides agreed on in the handshake (ALPN), if any.
  public var negotiatedProtocol: String? {
    var selected: UnsafePointer<UInt8>?
    var length: UInt32 = 0
    SSL_get0_alpn_selected(ssl, &selected, &length)
    guard let selected, length > 0 else { return nil }
    return String(decoding: UnsafeBufferPointer(start: selected, count: Int(length)), as: UTF8.self)
  }

  /// The device the other side proved it holds the key of (after a handshake).
  public var peer: DeviceID? { state.withLock { $0.rejection == nil ? $0.presentedID : nil } }

  /// Called by OpenSSL during the handshake with the peer's leaf certificate.
  func verify(certificate: OpaquePointer) -> Bool {
    let id: DeviceID
    do { id = try DeviceIdentity.deviceID(ofCertificate: certificate) } catch {
      state.withLock { $0.rejection = error }
      return false
    }
    let accepted = accepts(id)
    state.withLock {
      $0.presentedID = id
      $0.rejection = accepted ? nil : TransportError(.untrustedPeer, "key not trusted", presented: id)
    }
    return accepted
  }

  /// Runs the TLS handshake; afterwards `peer` is the authenticated device. A deadline that
  /// has already passed fails it before it starts: otherwise a peer whose answers happen to
  /// be waiting whenever they are read (a busy machine, loopback) would let the handshake
  /// finish without ever reaching a wait that checks the deadline.
  public func handshake(deadline: Deadline) throws(TransportError) {
    if deadline.hasPassed { throw TransportError(.handshakeTimeout, "timed out before the handshake") }
    do {
      try perform(deadline: deadline, timeout: .handshakeTimeout) { SSL_do_handshake(ssl) }
    } catch {
      if let rejected = state.withLock({ $0.rejection }) { throw rejected }
      guard error.kind == .closed else { throw error }
      throw TransportError(.handshakeFailed, "the peer closed the connection during the handshake")
    }
    guard negotiatedProtocol != nil else { throw TransportError(.handshakeFailed, "no ALPN protocol agreed") }
    guard peer != nil else { throw TransportError(.handshakeFailed, "no peer certificate") }
  }

  /// Sends one frame within the frame timeout.
  public func send(_ frame: Frame) throws(TransportError) {
    let bytes = frame.encoded()
    let deadline = Deadline.after(seconds: limits.frameSeconds)
    var offset = 0
    while offset < bytes.count {
      var written = 0
      try bytes.withUnsafeBufferPointer { buffer throws(TransportError) in
        try perform(deadline: deadline, timeout: .frameTimeout) {
          SSL_write_ex(ssl, buffer.baseAddress! + offset, buffer.count - offset, &written)
        }
      }
      offset += written
    }
  }

  /// The next frame; nil when the peer closed cleanly between frames. Waits until
  /// `deadline` (nil: the idle timeout) for a frame to start and the frame timeout for it
  /// to finish. The bytes go straight from TLS into `decoder`, the `FrameDecoder` every
  /// machine test feeds too: the header is checked before any payload is read, and the
  /// payload is read into its own buffer (no intermediate copy: this is the bulk path).
  public func receive(before deadline: Deadline?) throws(TransportError) -> Frame? {
    let idle = deadline ?? .after(seconds: limits.idleSeconds)
    // Set once the frame's first byte is in: from then on the frame deadline applies.
    var frameDeadline: Deadline? = decoder.isAtBoundary ? nil : .after(seconds: limits.frameSeconds)
    while true {
      let wait = frameDeadline ?? idle
      let timeout: TransportError.Kind = frameDeadline == nil ? .idleTimeout : .frameTimeout
      do {
        if let frame = try decoder.fill({ room throws(TransportError) in
          var count = 0
          try perform(deadline: wait, timeout: timeout) { SSL_read_ex(ssl, room.baseAddress!, room.count, &count) }
          return count
        }) {
          return frame
        }
      } catch {
        switch error {
        case .frame(let refused): throw .frame(refused)
        case .read(let failure) where failure.kind == .closed:
          if let truncated = decoder.truncation { throw .frame(truncated) }
          return nil
        case .read(let failure): throw failure
        }
      }
      if frameDeadline == nil { frameDeadline = .after(seconds: limits.frameSeconds) }
    }
  }

  /// Keying material bound to this session (RFC 8446 §7.5): both ends get the same bytes
  /// only if they ran the same handshake.
  public func exportKeyingMaterial(label: String, length: Int) throws(TransportError) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: length)
    let labelBytes = Array(label.utf8)
    guard SSL_export_keying_material(ssl, &output, length, labelBytes, labelBytes.count, nil, 0, 0) == 1 else {
      throw .openSSL(.library, "SSL_export_keying_material")
    }
    return output
  }

  /// Sends close_notify (best effort, without waiting) so the peer sees a clean end. Only
  /// the driving thread may call it; from another thread, `interrupt()`.
  public func shutdown() {
    ERR_clear_error()
    _ = SSL_shutdown(ssl)
  }

  /// The channel's end: close_notify from the driving thread.
  public func close() { shutdown() }

  /// Closes the connection from another thread: the driving thread's wait ends at once
  /// and its next call fails with `closed`.
  public func interrupt() {
    state.withLock { $0.interrupted = true }
    Glibc.shutdown(fd, Int32(SHUT_RDWR))
  }

  private var isInterrupted: Bool { state.withLock { $0.interrupted } }

  /// Retries an SSL call until it succeeds, waiting in poll(2) for what it needs.
  func perform(deadline: Deadline, timeout: TransportError.Kind, _ call: () -> Int32) throws(TransportError) {
    while true {
      if isInterrupted { throw TransportError(.interrupted, "closed by this node") }
      ERR_clear_error()
      let result = call()
      if result > 0 { return }
      if isInterrupted { throw TransportError(.interrupted, "closed by this node") }
      let reason = SSL_get_error(ssl, result)
      switch reason {
      case SSL_ERROR_WANT_READ: try wait(for: Int16(POLLIN), until: deadline, timeout: timeout)
      case SSL_ERROR_WANT_WRITE: try wait(for: Int16(POLLOUT), until: deadline, timeout: timeout)
      case SSL_ERROR_ZERO_RETURN: throw TransportError(.closed, "the peer closed the connection")
      case SSL_ERROR_SSL where memo_ssl_error_is_unexpected_eof() == 1:
        // The peer closed TCP without TLS close_notify: a close (clean between frames, a
        // truncated frame inside one), not a TLS failure.
        _ = OpenSSLErrorQueueText.drain()
        throw TransportError(.closed, "the peer closed the connection without TLS close_notify")
      case SSL_ERROR_SYSCALL:
        let queue = OpenSSLErrorQueueText.drain()
        throw TransportError(
          .closed, queue.isEmpty ? "the connection was closed (\(Errno.current))" : queue)
      default:
        throw TransportError(.handshakeFailed, OpenSSLErrorQueueText.drain())
      }
    }
  }

  private func wait(for events: Int16, until deadline: Deadline, timeout: TransportError.Kind) throws(TransportError) {
    var descriptor = pollfd(fd: fd, events: events, revents: 0)
    while true {
      if deadline.remaining == 0 { throw TransportError(timeout, "timed out") }
      let ready: Int32
      do throws(SystemError) {
        // Retried on EINTR with what is left of the deadline.
        ready = try System.call("poll") { poll(&descriptor, 1, deadline.remaining) }
      } catch {
        throw TransportError(.closed, "poll failed")
      }
      if ready > 0 { return }
    }
  }
}

/// OpenSSL's error queue as one line for logs.
enum OpenSSLErrorQueueText {
  static func drain() -> String {
    let queue = OpenSSLErrorQueue.drain()
    return queue.isEmpty ? "TLS error" : queue.joined(separator: "; ")
  }
}

extension TLSConnection {
  /// Writes bytes that need not be a valid frame: for tests of the peer's frame checks.
  func sendRaw(_ bytes: [UInt8]) throws(TransportError) {
    var written = 0
    let deadline = Deadline.after(seconds: limits.frameSeconds)
    try bytes.withUnsafeBufferPointer { buffer throws(TransportError) in
      try perform(deadline: deadline, timeout: .frameTimeout) {
        SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &written)
      }
    }
  }
}
