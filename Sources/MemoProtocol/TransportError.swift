import MemoCore

/// Why a connection ended. Each has a stable `kind` that the server logs (never the peer's
/// bytes) and the client turns into a `MemoPeerError` that says what to do. It lives beside
/// `FrameChannel` because every frame channel (TLS, or the in-memory one of the tests)
/// reports with it.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
  public enum Kind: String, Sendable {
    /// The peer's key is not in the trust store.
    case untrustedPeer = "untrusted-peer"
    /// The peer's key differs from the one pinned for the device we meant to reach.
    case fingerprintMismatch = "fingerprint-mismatch"
    /// TLS failed: not TLS, wrong version, no certificate, bad signature, no ALPN …
    case handshakeFailed = "handshake-failed"
    case handshakeTimeout = "handshake-timeout"
    case idleTimeout = "idle-timeout"
    case frameTimeout = "frame-timeout"
    case protocolViolation = "protocol-violation"
    /// The peer closed the connection.
    case closed
    /// This node closed it (trust removed, shutting down).
    case interrupted
    case connectFailed = "connect-failed"
    case tooManyConnections = "too-many-connections"
    case library
  }

  public let kind: Kind
  /// Technical detail for logs: OpenSSL's queue, errno, the frame error. Never memo text.
  public let detail: String
  /// The device that presented itself, when the handshake got that far.
  public let presented: DeviceID?

  public init(_ kind: Kind, _ detail: String, presented: DeviceID? = nil) {
    self.kind = kind
    self.detail = detail
    self.presented = presented
  }

  public var description: String { "\(kind.rawValue): \(detail)" }
}
