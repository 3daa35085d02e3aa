import MemoCore
import MemoProtocol
import MemoTransport
import MemoVault

/// What the daemon listens with (the TLS server; a fake in tests).
public protocol ChannelListener: Sendable {
  var port: UInt16 { get }
  /// Stops accepting and closes every live channel. Does not wait: when it returns, the
  /// port refuses new connections.
  func stop()
  /// Closes the live channels whose peer matches (a device just removed from the trust store).
  func closeChannels(where matches: (DeviceID?) -> Bool)
}

/// Where the daemon's channels come from: a listener for the trusted devices that connect
/// to it, and a dialler for those it reaches itself (deliveries, scheduled syncs). The
/// engine takes one as a collaborator; `TLSChannels` is the real one. Both take the node's
/// identity, which the daemon holds only while the node is unlocked.
public protocol ChannelFactory: Sendable {
  /// Starts accepting: each channel whose device `accepts` lets in goes to `handler`, on a
  /// thread of its own; `events` hears every acceptance and refusal (never a peer's bytes).
  func listen(
    identity: NodeIdentity, port: UInt16, accepts: @escaping @Sendable (DeviceID) -> Bool,
    events: @escaping @Sendable (ServerEvent) -> Void, handler: @escaping @Sendable (any FrameChannel) -> Void
  ) throws -> any ChannelListener

  /// Reaches trusted devices as `identity`, registering each ready channel in `sessions`
  /// (so locking the node closes it).
  func dialer(identity: NodeIdentity, trust: TrustStore, sessions: LiveSessions) -> any PeerDialer
}

/// TLS 1.3 with the node's pinned-key identity: `TLSServer` to listen, `PeerConnector`
/// (DNS-SD behind the consent gate, then TLS) to dial.
public struct TLSChannels: ChannelFactory {
  public let gate: ConsentGate
  public let limits: ConnectionLimits
  let clock: @Sendable () -> Timestamp
  /// One back-off for every address the daemon dials without DNS-SD.
  let addressBackoff = AddressBackoffs()

  public init(
    gate: ConsentGate, limits: ConnectionLimits = ConnectionLimits(), clock: @escaping @Sendable () -> Timestamp
  ) {
    self.gate = gate
    self.limits = limits
    self.clock = clock
  }

  public func listen(
    identity: NodeIdentity, port: UInt16, accepts: @escaping @Sendable (DeviceID) -> Bool,
    events: @escaping @Sendable (ServerEvent) -> Void, handler: @escaping @Sendable (any FrameChannel) -> Void
  ) throws -> any ChannelListener {
    try TLSServer(
      port: port, context: TLSContext(identity: identity.device, role: .server), limits: limits, accepts: accepts,
      events: events, handler: { handler($0) })
  }

  public func dialer(identity: NodeIdentity, trust: TrustStore, sessions: LiveSessions) -> any PeerDialer {
    PeerConnector(
      gate: gate, identity: identity, trust: trust, limits: limits, sessions: sessions, addressBackoff: addressBackoff,
      clock: clock)
  }
}

extension TLSServer: ChannelListener {
  public func closeChannels(where matches: (DeviceID?) -> Bool) { closeConnections(where: matches) }
}
