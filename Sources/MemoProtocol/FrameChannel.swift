import MemoCore

/// A connection to one authenticated device that carries memo-peer frames: the seam between
/// the sessions (hello, ping, delivery, sync, pairing) and the transport under them.
///
/// `TLSConnection` is the real one; `InMemoryChannel` (MemoTestSupport) joins two sessions
/// in one process, with injectable delay, cut-off and corruption, so the sessions are tested
/// against each other without sockets.
///
/// Contract, for every conformance:
/// - One thread drives a channel (sends, receives, `close()`); `interrupt()` may come from
///   any thread and ends every wait on it at once (the driving thread's next call fails with
///   `interrupted`): how `trust remove` and `lock` end live sessions.
/// - `send` writes one whole frame or throws; it never blocks longer than the connection's
///   frame limit. A send into a connection the peer has left may still succeed (the bytes
///   are lost, as with TCP); the next `receive` tells.
/// - `receive(before:)` returns the next frame, or nil when the peer ended the stream
///   between frames (a clean close, or a cut connection). It waits for a frame to start
///   until `deadline` (nil: the idle limit), then at most the frame limit for the rest. A
///   header that breaks the protocol (version, type, a length over the maximum) and a
///   stream that ends inside a frame throw `protocolViolation`; nothing of such a frame is
///   returned. A timeout throws `idleTimeout` (or `frameTimeout`).
/// - `peer` is the device the transport authenticated; nil only on a channel that never
///   completed its handshake (sessions never get such a channel).
/// - `exportKeyingMaterial` gives both ends the same bytes only if they are the two ends
///   of one session (TLS: RFC 8446 §7.5); pairing derives its code from it.
/// - `wireBytes` counts what crossed the transport so far, both ways (for byte counts).
public protocol FrameChannel: AnyObject, Sendable {
  var peer: DeviceID? { get }
  func send(_ frame: Frame) throws(TransportError)
  func receive(before deadline: Deadline?) throws(TransportError) -> Frame?
  /// Ends the channel from the driving thread: a clean end for the peer when possible;
  /// idempotent.
  func close()
  /// Ends the channel from any thread, at once.
  func interrupt()
  func exportKeyingMaterial(label: String, length: Int) throws(TransportError) -> [UInt8]
  var wireBytes: (sent: UInt64, received: UInt64) { get }
  /// The numeric address of the other end, zone included (nil: not a network channel).
  /// What a trusted device is remembered at once it proved its key.
  var remoteHost: String? { get }
}

extension FrameChannel {
  public var remoteHost: String? { nil }

  /// The next frame within the idle limit; nil on a clean close.
  public func receive() throws(TransportError) -> Frame? { try receive(before: nil) }

  /// The next frame, which must be there: a closed stream is an error naming `expected`.
  public func receiveRequired(_ expected: String, before deadline: Deadline? = nil) throws(TransportError) -> Frame {
    guard let frame = try receive(before: deadline) else {
      throw TransportError(.closed, "closed before \(expected)")
    }
    return frame
  }
}

extension TransportError {
  /// A frame the reader refused (header or truncation), as the error that ends the channel.
  public static func frame(_ error: FrameError) -> TransportError {
    TransportError(.protocolViolation, error.description)
  }
}
