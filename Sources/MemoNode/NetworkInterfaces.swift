import FoundationEssentials
import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// One network interface as the doctor and `--interface` see it.
public struct NetworkInterface: Sendable, Equatable, Codable {
  public let name: String
  public let index: UInt32
  public let isUp: Bool
  public let isLoopback: Bool
  public let supportsMulticast: Bool
  public var addresses: [String]

  enum CodingKeys: String, CodingKey {
    case name, index, addresses
    case isUp = "up"
    case isLoopback = "loopback"
    case supportsMulticast = "multicast"
  }
}

public enum NetworkInterfaces {
  /// Every interface with its flags and IP addresses (getifaddrs).
  public static func all() -> [NetworkInterface] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return [] }
    defer { freeifaddrs(list) }
    var result: [NetworkInterface] = []
    var cursor = list
    while let entry = cursor?.pointee {
      defer { cursor = entry.ifa_next }
      let name = String(cString: entry.ifa_name)
      let flags = Int32(bitPattern: entry.ifa_flags)
      if !result.contains(where: { $0.name == name }) {
        result.append(
          NetworkInterface(
            name: name, index: if_nametoindex(entry.ifa_name), isUp: flags & Int32(IFF_UP) != 0,
            isLoopback: flags & Int32(IFF_LOOPBACK) != 0,
            supportsMulticast: flags & Int32(IFF_MULTICAST) != 0, addresses: []))
      }
      if let address = entry.ifa_addr, let text = presentation(address) {
        result[result.firstIndex { $0.name == name }!].addresses.append(text)
      }
    }
    return result
  }

  /// Interfaces mDNS can use: up, multicast-capable, not loopback.
  public static func multicastCapable() -> [NetworkInterface] {
    all().filter { $0.isUp && $0.supportsMulticast && !$0.isLoopback }
  }

  /// What a daemon listening on every address says in its hellos (`listen_addresses`):
  /// the announceable addresses of `interfaces` (empty: of every interface that is up and
  /// not loopback), at most `AnnouncedAddresses.maximumCount`, IPv4 first.
  public static func listenAddresses(on interfaces: [String], from all: [NetworkInterface] = all()) -> [String] {
    let chosen = all.filter { $0.isUp && !$0.isLoopback && (interfaces.isEmpty || interfaces.contains($0.name)) }
    let addresses = chosen.flatMap(\.addresses).filter(AnnouncedAddresses.isAnnounceable)
    let ordered = addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") }
    return Array(ordered.prefix(AnnouncedAddresses.maximumCount))
  }

  /// The IPv4 network of `interface`'s first IPv4 address, as `169.254.0.0/16`; nil when it
  /// has none.
  public static func ipv4Prefix(of interface: String) -> String? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var cursor = list
    while let entry = cursor?.pointee {
      defer { cursor = entry.ifa_next }
      guard String(cString: entry.ifa_name) == interface, let address = entry.ifa_addr, let mask = entry.ifa_netmask,
        Int32(address.pointee.sa_family) == AF_INET, let text = presentation(address),
        let maskText = presentation(mask)
      else { continue }
      return NetworkFingerprint.prefix(address: text, netmask: maskText)
    }
    return nil
  }

  private static func presentation(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
      return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
        var raw = ipv4.pointee.sin_addr
        return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)).map { String(cString: $0) }
      }
    case AF_INET6:
      return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
        var raw = ipv6.pointee.sin6_addr
        return inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)).map { String(cString: $0) }
      }
    default:
      return nil
    }
  }
}
