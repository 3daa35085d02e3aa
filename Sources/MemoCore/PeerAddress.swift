#if canImport(Glibc)
  import Glibc
#endif

/// Where a trusted device may be dialled when DNS-SD does not show it: an address a person
/// gave (`trust address PEER add HOST[:PORT]`) for a home server on another subnet, or one
/// the device was last reached at. A wrong address is harmless: whoever answers there must
/// still prove the pinned key.
///
/// Text form: `HOST[:PORT]`, where HOST is an IPv4 address, an IPv6 address (in brackets
/// when a port follows, with `%zone` only for a link-local one), or a DNS name. Parsed with
/// the C library's `inet_pton`; the canonical text is `inet_ntop`'s.
public struct PeerAddress: Sendable, Hashable, Codable, CustomStringConvertible {
  public enum Host: Sendable, Hashable {
    case ipv4(String)
    /// The address and, for a link-local one, the interface it is on.
    case ipv6(String, zone: String?)
    /// A DNS name, resolved when dialled (lower case, no trailing dot).
    case name(String)
  }

  public let host: Host
  /// Nil: the port the device was last reached at (with none known, it is not dialled).
  public let port: UInt16?

  /// The longest text accepted: a 253-byte name, a port, brackets.
  public static let maximumTextLength = 270
  /// The longest zone (an interface name: IFNAMSIZ - 1, or an index).
  public static let maximumZoneLength = 15

  public init(host: Host, port: UInt16?) {
    self.host = host
    self.port = port
  }

  /// The host as `getaddrinfo` takes it (a zone kept, no brackets).
  public var hostText: String {
    switch host {
    case .ipv4(let address): address
    case .ipv6(let address, let zone): zone.map { "\(address)%\($0)" } ?? address
    case .name(let name): name
    }
  }

  /// Whether the host is a DNS name (resolved when dialled), not a numeric address.
  public var isName: Bool {
    if case .name = host { return true }
    return false
  }

  /// `HOST[:PORT]`, IPv6 in brackets when a port follows: what `parse` reads back.
  public var description: String {
    guard let port else { return hostText }
    if case .ipv6 = host { return "[\(hostText)]:\(port)" }
    return "\(hostText):\(port)"
  }

  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    do {
      self = try Self.parse(text)
    } catch {
      throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.reason))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }

  /// Why a text is not an address, in words a person can act on (never the whole text when
  /// it holds control characters: the reason shows it escaped).
  public struct ParseError: Error, Equatable, Sendable {
    public let reason: String
  }

  /// Reads `HOST[:PORT]`. Refuses, naming what was wrong: an empty or overlong text, space
  /// or control characters, a port that is not 1 to 65535, a zone on anything but an IPv6
  /// link-local address, an IPv4-looking text that is not one, a malformed name.
  public static func parse(_ text: String) throws(ParseError) -> PeerAddress {
    guard !text.isEmpty else { throw ParseError(reason: "the address is empty") }
    guard text.utf8.count <= maximumTextLength else {
      throw ParseError(reason: "the address is longer than \(maximumTextLength) bytes")
    }
    guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
      throw ParseError(reason: "\(text.terminalSafe) holds spaces, control or non-ASCII characters")
    }
    let (hostPart, portPart, bracketed) = try split(text)
    let port = try portPart.map(parsePort)
    let (address, zone) = splitZone(hostPart)
    if let zone {
      guard !zone.isEmpty, zone.utf8.count <= maximumZoneLength,
        zone.utf8.allSatisfy(isZoneByte)
      else {
        throw ParseError(reason: "\(text): the zone after % must be an interface name or index")
      }
    }
    if let v6 = canonical(address, family: AF_INET6) {
      guard zone == nil || isLinkLocalIPv6(address) else {
        throw ParseError(
          reason: "\(text): a zone (%\(zone ?? "")) belongs only to a link-local IPv6 address (fe80::/10)")
      }
      return PeerAddress(host: .ipv6(v6, zone: zone), port: port)
    }
    guard !bracketed else { throw ParseError(reason: "\(text): the text in brackets is not an IPv6 address") }
    if let v4 = canonical(address, family: AF_INET) {
      guard zone == nil else {
        throw ParseError(reason: "\(text): a zone (%\(zone ?? "")) belongs only to a link-local IPv6 address, not IPv4")
      }
      return PeerAddress(host: .ipv4(v4), port: port)
    }
    guard zone == nil else { throw ParseError(reason: "\(text): a zone belongs only to a link-local IPv6 address") }
    return PeerAddress(host: .name(try checkedName(address, in: text)), port: port)
  }

  /// HOST and PORT texts: `[v6]:port`, `[v6]`, a bare IPv6 (two or more colons: no port),
  /// or `host:port`.
  private static func split(_ text: String) throws(ParseError) -> (String, String?, Bool) {
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else {
        throw ParseError(reason: "\(text): an opening [ without its closing ]")
      }
      let host = String(text[text.index(after: text.startIndex)..<close])
      let rest = text[text.index(after: close)...]
      if rest.isEmpty { return (host, nil, true) }
      guard rest.hasPrefix(":") else { throw ParseError(reason: "\(text): only :PORT may follow the ]") }
      return (host, String(rest.dropFirst()), true)
    }
    let colons = text.count(where: { $0 == ":" })
    if colons > 1 { return (text, nil, false) }
    if colons == 1, let colon = text.firstIndex(of: ":") {
      return (String(text[..<colon]), String(text[text.index(after: colon)...]), false)
    }
    return (text, nil, false)
  }

  private static func parsePort(_ text: String) throws(ParseError) -> UInt16 {
    guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(text)
    else {
      throw ParseError(reason: "the port \(text.terminalSafe) is not a number from 1 to 65535")
    }
    guard (1...65535).contains(value) else {
      throw ParseError(reason: "the port \(value) is outside 1 to 65535")
    }
    return UInt16(value)
  }

  /// An interface name's bytes: ASCII letters, digits, `_`, `-`, `.`.
  private static func isZoneByte(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F: true
    default: false
    }
  }

  private static func splitZone(_ host: String) -> (String, String?) {
    guard let percent = host.firstIndex(of: "%") else { return (host, nil) }
    return (String(host[..<percent]), String(host[host.index(after: percent)...]))
  }

  /// `inet_pton` then `inet_ntop`: nil when the text is not an address of `family`.
  private static func canonical(_ text: String, family: Int32) -> String? {
    var bytes = [UInt8](repeating: 0, count: 16)
    guard inet_pton(family, text, &bytes) == 1 else { return nil }
    var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    guard inet_ntop(family, bytes, &out, socklen_t(out.count)) != nil else { return nil }
    return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  private static func isLinkLocalIPv6(_ text: String) -> Bool {
    var bytes = [UInt8](repeating: 0, count: 16)
    guard inet_pton(AF_INET6, text, &bytes) == 1 else { return false }
    return bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80
  }

  /// A DNS name: labels of letters, digits and hyphens (not first or last), 1 to 63 bytes
  /// each, 253 in all, one trailing dot allowed. A name of digits and dots only is an IPv4
  /// address that `inet_pton` refused, and is said to be one.
  private static func checkedName(_ name: String, in text: String) throws(ParseError) -> String {
    var name = name.lowercased()
    if name.hasSuffix(".") { name.removeLast() }
    if name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }) {
      throw ParseError(reason: "\(text) is not a valid IPv4 address")
    }
    guard !name.isEmpty, name.utf8.count <= 253 else {
      throw ParseError(reason: "\(text) is not an IP address or a DNS name of at most 253 bytes")
    }
    for label in name.split(separator: ".", omittingEmptySubsequences: false) {
      let valid =
        (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
        && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
      guard valid else {
        throw ParseError(
          reason: "\(text) is not an IP address, and not a DNS name (letters, digits and inner hyphens, dot-separated)")
      }
    }
    return name
  }
}
