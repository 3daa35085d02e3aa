/// The network this device is on, as memo-peer tells networks apart (docs/PRIVACY.md,
/// "Networks"): `id` is a keyed hash of what identifies it (the default gateway's hardware
/// address and the interface's prefix), under a key that never leaves this device, so the
/// id says nothing to anyone else and two devices' ids of one network differ. `name` is
/// what a person is shown to recognise it; it stays in the consent log on this device.
public struct NetworkPlace: Sendable, Equatable, Codable {
  public var id: String
  public var name: String

  public init(id: String, name: String) {
    self.id = id
    self.name = name
  }

  /// The id of a network with a default gateway whose hardware address is not known yet
  /// (the machine has not used the route): nothing is allowed on it, and no decision is
  /// recorded for it, until it can be told apart.
  public static let unidentifiedID = "net-unidentified"

  /// A network that cannot be told apart yet (`unidentifiedID`).
  public static func unidentified(_ fingerprint: NetworkFingerprint) -> NetworkPlace {
    NetworkPlace(id: unidentifiedID, name: fingerprint.name + " (not told apart yet: its gateway has not answered)")
  }

  public var isIdentified: Bool { id != Self.unidentifiedID }
}

/// What identifies the network a device is on, read from the kernel's tables
/// (`/proc/net/route`, `/proc/net/arp`) and the interface's address: pure, so it is tested
/// on texts.
public struct NetworkFingerprint: Sendable, Equatable {
  /// The interface of the default route (or, without one, the first with an address).
  public var interface: String
  /// The default gateway's IPv4 address and hardware address; nil without a default route.
  public var gateway: String?
  public var gatewayHardware: String?
  /// The interface's IPv4 network, as `169.254.0.0/16`; nil when it has none.
  public var prefix: String?

  public init(interface: String, gateway: String?, gatewayHardware: String?, prefix: String?) {
    self.interface = interface
    self.gateway = gateway
    self.gatewayHardware = gatewayHardware
    self.prefix = prefix
  }

  /// The bytes the id is a keyed hash of (versioned, so a later way of telling networks
  /// apart makes other ids instead of colliding). Without a gateway, a network is told by
  /// its prefix alone, on whatever interface: two gateway-less networks with one prefix are
  /// one network to memo-peer (docs/PRIVACY.md).
  public var hashInput: [UInt8] {
    let gatewayPart = gatewayHardware.map { "gw=" + $0.lowercased() } ?? "no-gateway"
    return Array("memo-peer network v1\n\(gatewayPart)\n\(prefix ?? "no-ipv4")".utf8)
  }

  /// What a person is shown: the interface, and the gateway or the prefix.
  public var name: String {
    if let gateway { return "\(interface), gateway \(gateway)" }
    return "\(interface), \(prefix ?? "no IPv4 address"), no gateway"
  }

  /// The default route of `/proc/net/route` (hex, little-endian fields): its interface and
  /// gateway; nil without one. The lowest metric wins.
  public static func defaultRoute(fromRouteTable text: String) -> (interface: String, gateway: String)? {
    var best: (interface: String, gateway: String, metric: Int)?
    for line in text.split(separator: "\n").dropFirst() {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
        let gateway = UInt32(fields[2], radix: 16), gateway != 0, let metric = Int(fields[6])
      else { continue }
      let dotted = (0..<4).map { String((gateway >> (8 * UInt32($0))) & 0xFF) }.joined(separator: ".")
      if best == nil || metric < best!.metric { best = (String(fields[0]), dotted, metric) }
    }
    return best.map { ($0.interface, $0.gateway) }
  }

  /// The hardware address `/proc/net/arp` holds for `address` on `interface`, when the
  /// entry is complete (flags 0x2); nil otherwise.
  public static func hardwareAddress(of address: String, on interface: String, fromARPTable text: String) -> String? {
    for line in text.split(separator: "\n").dropFirst() {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 6, fields[0] == address, fields[5] == interface,
        let flags = Int(fields[2].dropFirst(2), radix: 16), flags & 0x2 != 0,
        fields[3] != "00:00:00:00:00:00"
      else { continue }
      return fields[3].lowercased()
    }
    return nil
  }

  /// `address` and `netmask` (dotted IPv4) as a network with its prefix length; nil when
  /// either is not IPv4 or the mask is not contiguous.
  public static func prefix(address: String, netmask: String) -> String? {
    func bytes(_ text: String) -> [UInt8]? {
      let parts = text.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
      return parts.count == 4 ? parts : nil
    }
    guard let a = bytes(address), let m = bytes(netmask) else { return nil }
    let mask = m.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    let length = mask.nonzeroBitCount
    guard mask == (length == 0 ? 0 : UInt32.max << (32 - length)) else { return nil }
    return zip(a, m).map { String($0 & $1) }.joined(separator: ".") + "/\(length)"
  }
}

/// The per-network rule, on top of the local-network scope (docs/PRIVACY.md, "Networks").
public enum NetworkRule {
  /// What the log says of `network`: allowed, not decided, or denied. A log with no network
  /// record at all is a node from before networks were told apart: its local-network
  /// consent covers the network it is on now (`needsUpgradeRecord`). No network at all
  /// (nil): nothing to protect, nothing reachable.
  public static func state(of network: NetworkPlace?, in records: [ConsentRecord]) -> ConsentState? {
    guard let network else { return nil }
    guard network.isIdentified else { return .undetermined }
    guard records.contains(where: { $0.scope == .network }) else { return nil }
    return ConsentState.of(network: network.id, in: records)
  }

  /// Whether the log holds a local-network grant and no network record yet: the node was
  /// upgraded, and the network it is on now is recorded as allowed (method `upgrade`).
  public static func needsUpgradeRecord(_ records: [ConsentRecord], network: NetworkPlace?) -> Bool {
    network?.isIdentified == true && ConsentState.of(.localNetwork, in: records).isGranted
      && !records.contains(where: { $0.scope == .network })
  }
}
