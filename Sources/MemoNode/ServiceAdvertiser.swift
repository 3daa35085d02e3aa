import MemoCore
import MemoDiscovery

/// How `serve` makes the node seen on the network: DNS-SD through Avahi, behind the consent
/// gate (`DNSSDAdvertiser`), or a fake where tests run engines over an in-memory network.
public protocol ServiceAdvertiser: Sendable {
  /// Advertises the memo-peer service; returns once the advertisement stands.
  func advertise(name: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32) async throws
    -> any StandingAdvertisement
}

/// One advertisement that stands until `withdraw`.
public protocol StandingAdvertisement: Sendable {
  /// The instance name actually used (the mDNS daemon may rename it on a collision).
  var name: String { get }
  /// True once it is gone without a withdraw (the mDNS daemon restarted): to be made again.
  var isLost: Bool { get }
  func withdraw() async
}

extension DNSServiceRegistration: StandingAdvertisement {}

/// The real advertiser: `_memo-peer._tcp` through the system's Avahi daemon, refused unless
/// the node's consent policy allows it right now.
public struct DNSSDAdvertiser: ServiceAdvertiser {
  let gate: ConsentGate

  public init(gate: ConsentGate) { self.gate = gate }

  public func advertise(name: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32) async throws
    -> any StandingAdvertisement
  {
    try await gate.discovery.register(
      name: name, type: LocalNetworkManifest.memoPeerServiceType, port: port, txt: txt, interfaceIndex: interfaceIndex)
  }
}
