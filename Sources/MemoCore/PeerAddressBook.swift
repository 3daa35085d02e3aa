/// One place a trusted device was reached: the numeric address and port, on which network,
/// and when. Kept in the trust store (`trusted-peers.json`, `reached`).
public struct ReachedAddress: Codable, Sendable, Equatable {
  /// How many are kept per device, newest first: a laptop seen on a few addresses (IPv4,
  /// IPv6, a changed lease) stays reachable; an old one ages out.
  public static let maximumKept = 6
  /// A reach at a known place is written again only after this long, so that a daemon
  /// syncing every few seconds does not rewrite the trust file each time.
  public static let refreshSeconds: Int64 = 600
  /// `refreshSeconds` in the trust store's time unit (milliseconds).
  static let refreshMilliseconds = refreshSeconds * 1000

  /// A numeric address with its port (never a name: what was actually reached).
  public var address: PeerAddress
  /// The network it was reached on (`NetworkIdentity`); nil: not known.
  public var network: String?
  public var at: Timestamp
  /// True when it was dialled there because DNS-SD did not show it (a network that
  /// filters multicast): the next dial on that network tries its addresses before any
  /// browse. Nil: shown by DNS-SD, or it dialled us.
  public var withoutDNSSD: Bool?

  public init(address: PeerAddress, network: String?, at: Timestamp, withoutDNSSD: Bool? = nil) {
    self.address = address
    self.network = network
    self.at = at
    self.withoutDNSSD = withoutDNSSD
  }

  enum CodingKeys: String, CodingKey {
    case address, network, at
    case withoutDNSSD = "without_dnssd"
  }
}

/// The rules for the addresses a trusted device may be dialled at without DNS-SD.
extension TrustList {
  /// How many addresses a person may give one device.
  public static let maximumGivenAddresses = 8

  /// Adds an address a person gave; the peer as it now is. Giving one it has is no change.
  public mutating func addAddress(_ address: PeerAddress, for reference: String) throws -> TrustedPeer {
    let index = try index(of: reference)
    var given = peers[index].addresses ?? []
    guard !given.contains(address) else { return peers[index] }
    guard given.count < Self.maximumGivenAddresses else {
      throw MemoPeerError(
        .tooLarge, "\(peers[index].displayName) already has \(Self.maximumGivenAddresses) addresses",
        hint: "remove one of its addresses first")
    }
    given.append(address)
    peers[index].addresses = given
    return peers[index]
  }

  /// Removes an address a person gave; throws `notFound` when the device does not have it.
  public mutating func removeAddress(_ address: PeerAddress, for reference: String) throws -> TrustedPeer {
    let index = try index(of: reference)
    guard let given = peers[index].addresses, given.contains(address) else {
      throw MemoPeerError(
        .notFound, "\(peers[index].displayName) has no address \(address)",
        hint: "give the address as it was added, as its list of addresses shows it")
    }
    let left = given.filter { $0 != address }
    peers[index].addresses = left.isEmpty ? nil : left
    return peers[index]
  }

  /// Records that the device was reached at `address` (numeric, with its port) on
  /// `network` (`withoutDNSSD`: dialled there because DNS-SD did not show it). False when
  /// nothing needs writing: not trusted, or the same place reached the same way less than
  /// `ReachedAddress.refreshSeconds` ago.
  public mutating func remember(
    _ address: PeerAddress, network: String?, at now: Timestamp, for id: DeviceID, withoutDNSSD: Bool? = nil
  ) -> Bool {
    guard address.port != nil, !address.isName,
      let index = peers.firstIndex(where: { $0.deviceID == id })
    else { return false }
    var reached = peers[index].reached ?? []
    if let known = reached.firstIndex(where: { $0.address == address && $0.network == network }) {
      if known == 0, now - reached[known].at < ReachedAddress.refreshMilliseconds, reached[known].at <= now,
        reached[known].withoutDNSSD == withoutDNSSD
      {
        return false
      }
      reached.remove(at: known)
    }
    reached.insert(ReachedAddress(address: address, network: network, at: now, withoutDNSSD: withoutDNSSD), at: 0)
    peers[index].reached = Array(reached.prefix(ReachedAddress.maximumKept))
    return true
  }

  private func index(of reference: String) throws -> Int {
    let peer = try find(reference)
    guard let index = peers.firstIndex(where: { $0.deviceID == peer.deviceID }) else {
      throw MemoPeerError(.notFound, "\(peer.displayName) is no longer trusted", remedy: .listTrusted)
    }
    return index
  }
}

extension TrustedPeer {
  /// Where to dial this device when DNS-SD does not show it, in order: the addresses a
  /// person gave, where it was last reached on `network`, where it said it listens (its
  /// last hello on `network`), then the older places it was reached there; each once. A
  /// given address without a port takes the port it was last reached at, else
  /// `defaultPort` (nil: left out).
  public func dialAddresses(on network: String?, defaultPort: UInt16?) -> [PeerAddress] {
    let here = (reached ?? []).filter { $0.network == network }
    let said = announced.flatMap { $0.network == network ? $0.addresses : nil } ?? []
    let lastPort = here.first?.address.port ?? said.first?.port ?? defaultPort
    var seen = Set<PeerAddress>()
    var out: [PeerAddress] = []
    for given in addresses ?? [] {
      guard let port = given.port ?? lastPort else { continue }
      let address = PeerAddress(host: given.host, port: port)
      if seen.insert(address).inserted { out.append(address) }
    }
    let places = here.map(\.address)
    for place in places.prefix(1) + said + places.dropFirst() where seen.insert(place).inserted { out.append(place) }
    return out
  }
}
