/// Why a connection is waiting rather than failing: each clears on its own, and the
/// connection proceeds when it does.
public enum WaitReason: Equatable, Sendable, CustomStringConvertible {
  /// No local-network consent on record yet (or it was revoked).
  case localNetworkConsent
  /// This device is on a network no person allowed memo-peer to use (or one denied).
  case networkNotAllowed
  /// The peer's advertisement has not been seen on the network.
  case peerNotFound
  /// The peer was seen but did not answer (yet).
  case peerUnreachable

  public var description: String {
    switch self {
    case .localNetworkConsent: "local-network consent"
    case .networkNotAllowed: "this network to be allowed"
    case .peerNotFound: "peer not found on the network"
    case .peerUnreachable: "peer not reachable"
    }
  }
}

/// The life of a connection to a peer, after Apple's NWConnection states:
/// setup → waiting(reason) ⇄ preparing → ready → failed / cancelled.
public enum ConnectionState: Equatable, Sendable, CustomStringConvertible {
  case setup
  case waiting(WaitReason)
  /// Connecting and running the TLS handshake.
  case preparing
  case ready
  case failed(String)
  case cancelled

  public var isFinal: Bool {
    switch self {
    case .failed, .cancelled: true
    default: false
    }
  }

  /// Whether `next` may follow this state. Final states have no successor; `ready` only
  /// ends; everything else may wait, retry, or end.
  public func allows(_ next: ConnectionState) -> Bool {
    switch (self, next) {
    case (.failed, _), (.cancelled, _): false
    case (_, .failed), (_, .cancelled): true
    case (.ready, _): false
    case (_, .setup): false
    case (.setup, .waiting), (.setup, .preparing): true
    case (.waiting(let old), .waiting(let new)): old != new
    case (.waiting, .preparing), (.preparing, .waiting), (.preparing, .ready): true
    default: false
    }
  }

  public var description: String {
    switch self {
    case .setup: "setup"
    case .waiting(let reason): "waiting (\(reason))"
    case .preparing: "preparing"
    case .ready: "ready"
    case .failed(let reason): "failed (\(reason))"
    case .cancelled: "cancelled"
    }
  }
}
