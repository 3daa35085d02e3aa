#if canImport(Glibc)
  import Glibc
#endif

/// Where a trusted device said, in its own authenticated hello, that its daemon listens
/// now (`listen_addresses` with `listen_port`, docs/PROTOCOL.md "Addresses without
/// DNS-SD"): a laptop whose lease changed is found without multicast. Only the device
/// itself can say this of itself (the hello is on its pinned channel), and a new hello
/// replaces what the last one said. Kept in the trust store (`announced`).
public struct AnnouncedAddresses: Codable, Sendable, Equatable {
  /// How many addresses one hello may carry; more is refused whole.
  public static let maximumCount = 8

  /// Numeric addresses with the announced port.
  public var addresses: [PeerAddress]
  /// The network they were heard on (`NetworkIdentity`); nil: not known.
  public var network: String?
  public var at: Timestamp

  public init(addresses: [PeerAddress], network: String?, at: Timestamp) {
    self.addresses = addresses
    self.network = network
    self.at = at
  }

  /// Why an announcement was refused (whole: nothing of it is stored).
  public struct Refusal: Error, Equatable, Sendable {
    public let reason: String
  }

  /// Checks what a hello announced: at most `maximumCount` texts, each a numeric IPv4 or
  /// IPv6 address without port or zone (names and zones mean something only to the sender),
  /// none loopback, multicast or unspecified; `port` 1 to 65535. Nil texts: nothing said.
  public static func check(_ texts: [String]?, port: UInt16?) throws(Refusal) -> [PeerAddress]? {
    guard let texts else { return nil }
    guard texts.count <= maximumCount else {
      throw Refusal(reason: "\(texts.count) listen addresses (at most \(maximumCount))")
    }
    guard let port else { throw Refusal(reason: "listen addresses without a valid listen_port") }
    var out: [PeerAddress] = []
    for text in texts {
      // Bounded before parsing: the parser's own limit is for addresses a person types.
      guard text.utf8.count <= 45 else { throw Refusal(reason: "a listen address longer than 45 bytes") }
      let parsed: PeerAddress
      do { parsed = try PeerAddress.parse(text) } catch { throw Refusal(reason: "a listen address: \(error.reason)") }
      guard parsed.port == nil else { throw Refusal(reason: "a listen address with a port of its own: \(text)") }
      switch parsed.host {
      case .name: throw Refusal(reason: "a listen address that is a name, not a numeric address: \(text)")
      case .ipv6(_, zone: .some): throw Refusal(reason: "a listen address with a zone: \(text)")
      case .ipv4(let address), .ipv6(let address, zone: nil):
        guard isUnicast(address) else {
          throw Refusal(reason: "a listen address that is loopback, multicast or unspecified: \(text)")
        }
      }
      let withPort = PeerAddress(host: parsed.host, port: port)
      if !out.contains(withPort) { out.append(withPort) }
    }
    return out
  }

  /// Whether this device says `text` (one of its own numeric addresses) in its hellos: a
  /// unicast address, and not IPv6 link-local (its zone would name an interface of ours).
  public static func isAnnounceable(_ text: String) -> Bool {
    var bytes = [UInt8](repeating: 0, count: 16)
    if inet_pton(AF_INET6, text, &bytes) == 1, bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return false }
    return isUnicast(text)
  }

  /// Whether a numeric address can be dialled on a network: not loopback (127/8, ::1), not
  /// multicast (224/4, ff00::/8), not unspecified (0.0.0.0, ::), not IPv4's broadcast.
  static func isUnicast(_ text: String) -> Bool {
    var bytes = [UInt8](repeating: 0, count: 16)
    if inet_pton(AF_INET, text, &bytes) == 1 {
      let (a, b, c, d) = (bytes[0], bytes[1], bytes[2], bytes[3])
      return a != 127 && a != 0 && a < 224 && !(a == 255 && b == 255 && c == 255 && d == 255)
    }
    guard inet_pton(AF_INET6, text, &bytes) == 1 else { return false }
    let loopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    let unspecified = bytes.allSatisfy { $0 == 0 }
    return !loopback && !unspecified && bytes[0] != 0xFF
  }
}

extension TrustList {
  /// Replaces what `id` announced with `addresses` heard on `network`. False when nothing
  /// needs writing: not trusted, or the same said on the same network less than
  /// `ReachedAddress.refreshSeconds` ago.
  public mutating func announce(_ addresses: [PeerAddress], network: String?, at now: Timestamp, for id: DeviceID)
    -> Bool
  {
    guard let index = peers.firstIndex(where: { $0.deviceID == id }) else { return false }
    if let known = peers[index].announced, known.addresses == addresses, known.network == network,
      now - known.at < ReachedAddress.refreshMilliseconds, known.at <= now
    {
      return false
    }
    peers[index].announced = AnnouncedAddresses(addresses: addresses, network: network, at: now)
    return true
  }
}
