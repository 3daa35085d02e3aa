import FoundationEssentials
import MemoDBus

#if canImport(Glibc)
  import Glibc
#endif

/// Avahi's answers in the shapes the dns_sd wrapper already reports (fully qualified names
/// with a trailing dot, service types split the way dns_sd splits `_services._dns-sd._udp`
/// answers), so the output does not depend on which API answered.
///
/// `@_spi(Fuzzing) public` (with `AvahiResolution`'s decoders): what avahi-daemon answers is
/// outside input, fuzzed by Tests/Fuzz (`avahi-records`) without `@testable import`.
@_spi(Fuzzing) public enum AvahiNames {
  /// `_memo-peer._tcp.` → `_memo-peer._tcp`: Avahi's calls take names without the root dot.
  public static func bare(_ name: String) -> String { name.hasSuffix(".") ? String(name.dropLast()) : name }
  /// `lab-a.local` → `lab-a.local.`, as dns_sd reports names.
  public static func qualified(_ name: String) -> String { name.hasSuffix(".") || name.isEmpty ? name : name + "." }
}

/// One browse item: an instance seen on one interface over one IP transport (Avahi reports
/// an instance once per transport it was seen on).
struct AvahiItem: Equatable, Sendable {
  let instance: ServiceInstance
  let transport: Int32

  /// From the arguments of an `ItemNew` or `ItemRemove` signal: (interface, protocol, name,
  /// type, domain, flags) from a service browser, (interface, protocol, type, domain, flags)
  /// from a service-type browser, whose types are reported as dns_sd reports them: the first
  /// label as the name (`_memo-peer`), the rest as the type (`_tcp.`).
  init?(signal arguments: [BusValue], browser: AvahiAPI.Browser) {
    guard arguments.count >= 2, let interface = arguments[0].int32, let transport = arguments[1].int32 else {
      return nil
    }
    let name: String
    let type: String
    let domain: String
    switch browser {
    case .services:
      guard arguments.count >= 5, let found = arguments[2].string, let foundType = arguments[3].string,
        let foundDomain = arguments[4].string
      else { return nil }
      (name, type, domain) = (found, foundType, foundDomain)
    case .serviceTypes:
      guard arguments.count >= 4, let foundType = arguments[2].string, let foundDomain = arguments[3].string,
        let dot = foundType.firstIndex(of: ".")
      else { return nil }
      (name, type, domain) = (String(foundType[..<dot]), String(foundType[foundType.index(after: dot)...]), foundDomain)
    }
    self.transport = transport
    instance = ServiceInstance(
      name: name, type: AvahiNames.qualified(type), domain: AvahiNames.qualified(domain),
      interfaceIndex: UInt32(bitPattern: interface))
  }
}

/// Which transports each instance is currently seen on. memo-peer reports an instance when
/// the first transport sees it and its departure when the last one loses it.
struct AvahiItemSet: Sendable {
  private var transports: [ServiceInstance: Set<Int32>] = [:]

  /// True when `item` is the instance's first sighting.
  mutating func insert(_ item: AvahiItem) -> Bool {
    transports[item.instance, default: []].insert(item.transport).inserted && transports[item.instance]!.count == 1
  }

  /// True when `item` was the instance's last sighting.
  mutating func remove(_ item: AvahiItem) -> Bool {
    guard var seen = transports[item.instance], seen.remove(item.transport) != nil else { return false }
    transports[item.instance] = seen.isEmpty ? nil : seen
    return seen.isEmpty
  }
}

/// One answer of `Server.ResolveService`: (interface, protocol, name, type, domain, host,
/// address protocol, address, port, TXT as an array of byte strings, flags).
/// `@_spi(Fuzzing) public` for `wireFormat` and `scoped` only, the decoders Tests/Fuzz runs
/// (`avahi-records`); the rest stays internal.
@_spi(Fuzzing) public struct AvahiResolution: Equatable, Sendable {
  let host: String
  /// In presentation form; IPv6 link-local addresses carry `%interface`.
  let address: String?
  let addressProtocol: Int32
  let port: UInt16
  /// The TXT record in DNS wire format, for `TXTRecordBytes.decode`.
  let txtRecord: [UInt8]

  init?(reply arguments: [BusValue], interfaceIndex: UInt32) {
    guard arguments.count >= 10, let host = arguments[5].string, let addressProtocol = arguments[6].int32,
      let port = arguments[8].uint16
    else { return nil }
    self.host = host
    self.addressProtocol = addressProtocol
    self.port = port
    address = arguments[7].string.flatMap { Self.scoped($0, interfaceIndex: interfaceIndex) }
    var entries: [[UInt8]] = []
    if case .array(let values) = arguments[9] {
      for case .bytes(let entry) in values { entries.append(entry) }
    }
    txtRecord = Self.wireFormat(entries)
  }

  /// TXT entries as DNS wire format: each entry preceded by its length (entries longer
  /// than a length byte can say are dropped, as no valid record has them).
  public static func wireFormat(_ entries: [[UInt8]]) -> [UInt8] {
    entries.filter { $0.count <= 255 }.flatMap { [UInt8($0.count)] + $0 }
  }

  /// `fe80::1` on interface 2 → `fe80::1%eth0`; other addresses unchanged. Nil when the
  /// text is not an IP address.
  public static func scoped(_ text: String, interfaceIndex: UInt32) -> String? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 {
      return formatAddress(withUnsafeBytes(of: &v4) { Array($0) }, type: 1, interfaceIndex: interfaceIndex)
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 {
      return formatAddress(withUnsafeBytes(of: &v6) { Array($0) }, type: 28, interfaceIndex: interfaceIndex)
    }
    return nil
  }
}
