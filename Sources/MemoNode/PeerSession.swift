import Foundation
import MemoCore
import MemoStore
import MemoTransport

/// What happens on a trusted connection once TLS is up: both sides say hello (protocol
/// version, discovery key), then the client asks and the server answers.
public enum PeerSession {
  /// Sends our hello and reads the peer's. A peer that does not trust us has closed the
  /// connection by then, so this is where the client learns it was refused.
  public static func greet(_ connection: TLSConnection, identity: NodeIdentity) throws(TransportError)
    -> PeerMessage.Hello
  {
    try connection.send(
      Frame(
        .hello,
        payload: PeerMessage.encode(
          PeerMessage.Hello(
            discoveryKey: identity.discoveryKeyBase64, rotationSeconds: identity.advertisement.rotationSeconds))))
    guard let frame = try connection.receive() else { throw TransportError(.closed, "closed before hello") }
    guard frame.kind == .hello, let hello = PeerMessage.decode(PeerMessage.Hello.self, from: frame.payload),
      PeerMessage.isValidDiscoveryKey(hello.discoveryKey)
    else { throw TransportError(.protocolViolation, "expected hello, got \(frame.kind)") }
    return hello
  }

  /// The daemon's side of one trusted connection, until the peer leaves or breaks the
  /// protocol. Learns the peer's discovery key (for peers added with `trust add`).
  public static func serve(
    _ connection: TLSConnection, identity: NodeIdentity, trust: TrustStore, logger: Logger,
    receiver: DeliveryReceiver? = nil, sync: SyncAnswerer? = nil
  ) throws(TransportError) {
    guard let peer = connection.peer else { return }
    let hello = try greet(connection, identity: identity)
    do {
      _ = try trust.update {
        $0.learnDiscoveryKey(hello.discoveryKey, rotationSeconds: hello.rotationSeconds, for: peer)
      }
    } catch {
      logger.error(error, while: "recording a peer's discovery key")
    }
    while let frame = try connection.receive() {
      switch frame.kind {
      case .ping: try connection.send(Frame(.pong, payload: frame.payload))
      case .goodbye: return
      case .deliver:
        guard let receiver, let answer = receiver.answer(frame.payload, from: peer) else {
          try? connection.send(
            Frame(.goodbye, payload: PeerMessage.encode(PeerMessage.Goodbye(reason: "delivery-failed"))))
          throw TransportError(.protocolViolation, "a delivery could not be stored")
        }
        try connection.send(answer)
      case .syncHello:
        guard let sync else { throw TransportError(.protocolViolation, "this node does not answer syncs") }
        try sync.answer(frame, over: connection, from: peer)
      default:
        try? connection.send(
          Frame(.goodbye, payload: PeerMessage.encode(PeerMessage.Goodbye(reason: "unexpected-frame"))))
        throw TransportError(.protocolViolation, "unexpected \(frame.kind) frame")
      }
    }
  }
}

/// The daemon's side of syncs on one connection: the store is opened at the first sync (in
/// the connection's thread) and kept for the next ones on the same connection.
public final class SyncAnswerer: @unchecked Sendable {
  // Unchecked: one answerer serves one connection, on that connection's handler thread only.
  let paths: NodePaths
  let logger: Logger
  let clock: @Sendable () -> Timestamp
  private var store: MemoStore?

  public init(paths: NodePaths, logger: Logger, clock: @escaping @Sendable () -> Timestamp) {
    self.paths = paths
    self.logger = logger
    self.clock = clock
  }

  func answer(_ hello: Frame, over connection: TLSConnection, from peer: DeviceID) throws(TransportError) {
    try SyncSession.answer(
      hello, over: connection, peer: peer.compact,
      store: {
        if let store { return store }
        let opened = try MemoStore.open(paths: paths, logger: logger, use: .background)
        store = opened
        return opened
      }, clock: clock, logger: logger)
  }
}
