import MemoCore
import MemoNode
import MemoProtocol
import MemoTransport
import MemoVault
import Synchronization

/// The channels of a real `ServeEngine` over an `InMemoryNetwork`: listening attaches the
/// node to the network (which is also how others find it: the in-memory browse reports every
/// attached device), dialling goes through the real `PeerConnector`. With
/// `InMemoryAdvertiser`, several engines run side by side in one process, each with its
/// own store, with no socket, no TLS and no mDNS.
public struct InMemoryChannels: ChannelFactory {
  public let network: InMemoryNetwork
  public let gate: ConsentGate
  let clock: @Sendable () -> Timestamp

  public init(network: InMemoryNetwork, gate: ConsentGate, clock: @escaping @Sendable () -> Timestamp) {
    self.network = network
    self.gate = gate
    self.clock = clock
  }

  public func listen(
    identity: NodeIdentity, port: UInt16, accepts: @escaping @Sendable (DeviceID) -> Bool,
    events: @escaping @Sendable (ServerEvent) -> Void, handler: @escaping @Sendable (any FrameChannel) -> Void
  ) throws -> any ChannelListener {
    let listener = InMemoryListener(network: network, device: identity.deviceID)
    listener.port = network.attach(
      identity,
      accepts: { peer in
        let accepted = accepts(peer)
        events(
          accepted
            ? .accepted(peer, address: "memory")
            : .refused(TransportError(.untrustedPeer, "key not trusted", presented: peer), address: "memory"))
        return accepted
      },
      handler: { channel in
        guard listener.track(channel) else { return channel.close() }
        handler(channel)
      })
    return listener
  }

  public func dialer(identity: NodeIdentity, trust: TrustStore, sessions: LiveSessions) -> any PeerDialer {
    network.connector(gate: gate, identity: identity, trust: trust, sessions: sessions, clock: clock)
  }
}

/// A node attached to an `InMemoryNetwork`, as a TLS server listens: `stop` takes it off
/// the network and closes every channel it served.
final class InMemoryListener: ChannelListener {
  let network: InMemoryNetwork
  let device: DeviceID
  private let state = Mutex((port: UInt16(0), stopped: false, channels: [(any FrameChannel)]()))

  init(network: InMemoryNetwork, device: DeviceID) {
    self.network = network
    self.device = device
  }

  var port: UInt16 {
    get { state.withLock { $0.port } }
    set { state.withLock { $0.port = newValue } }
  }

  /// Keeps `channel` to close it later (ended ones too, until `stop`: a test's channels are
  /// few); false once stopped.
  func track(_ channel: any FrameChannel) -> Bool {
    state.withLock { state in
      guard !state.stopped else { return false }
      state.channels.append(channel)
      return true
    }
  }

  func stop() {
    network.detach(device)
    let channels = state.withLock { state in
      state.stopped = true
      defer { state.channels = [] }
      return state.channels
    }
    for channel in channels { channel.interrupt() }
  }

  func closeChannels(where matches: (DeviceID?) -> Bool) {
    let closing = state.withLock { state in
      let (closing, kept) = (state.channels.filter { matches($0.peer) }, state.channels.filter { !matches($0.peer) })
      state.channels = kept
      return closing
    }
    for channel in closing { channel.interrupt() }
  }
}

/// Advertising where the network is in memory: attaching the listener already made the
/// node visible, so an advertisement only stands (and is never lost).
public struct InMemoryAdvertiser: ServiceAdvertiser {
  public init() {}

  public func advertise(name: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32) async throws
    -> any StandingAdvertisement
  {
    Standing(name: name)
  }

  struct Standing: StandingAdvertisement {
    let name: String
    var isLost: Bool { false }
    func withdraw() async {}
  }
}
