import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Tells which network this device is on now (`NetworkPlace`), from the kernel's tables: the
/// default route and its gateway's hardware address (`/proc/net/route`, `/proc/net/arp`)
/// and the interface's IPv4 prefix, hashed (HMAC-SHA256) under `state/network-key`, 32
/// random bytes made on first use that never leave the device (docs/PRIVACY.md,
/// "Networks"). Nothing is sent to learn any of it: an entry for the gateway is in the
/// neighbour table once the machine has used its route. Each call reads afresh (a few
/// small files), so a laptop that moved is seen at the next look.
public struct NetworkReader: Sendable {
  let keyPath: String
  let stateDirectory: String
  /// Where the kernel's tables are read (a test's folder of texts in their place).
  let procNet: String

  public init(paths: NodePaths, procNet: String = "/proc/net") {
    stateDirectory = paths.stateDirectory
    keyPath = paths.stateDirectory + "/network-key"
    self.procNet = procNet
  }

  /// The network now; nil when this device is on none (no interface up with an address
  /// but loopback), or its key cannot be read or made (then nothing is allowed by it).
  public func current() -> NetworkPlace? {
    guard let fingerprint = fingerprint() else { return nil }
    if fingerprint.gateway != nil && fingerprint.gatewayHardware == nil { return .unidentified(fingerprint) }
    guard let key = try? key() else { return nil }
    guard let mac = try? HMACSHA256.authenticate(key: key, message: fingerprint.hashInput) else { return nil }
    return NetworkPlace(id: "net-" + Hex.encode(Array(mac.prefix(8))), name: fingerprint.name)
  }

  /// What identifies the network now: the default route's interface, gateway and its
  /// hardware address, and the interface's IPv4 prefix; without a default route, the first
  /// interface that is up with an address.
  func fingerprint() -> NetworkFingerprint? {
    let interfaces = NetworkInterfaces.all().filter { $0.isUp && !$0.isLoopback && !$0.addresses.isEmpty }
    let route = (try? text("route")).flatMap(NetworkFingerprint.defaultRoute(fromRouteTable:))
    guard let interface = route.map(\.interface) ?? interfaces.first?.name,
      interfaces.contains(where: { $0.name == interface })
    else { return nil }
    let hardware = route.flatMap { route in
      (try? text("arp")).flatMap {
        NetworkFingerprint.hardwareAddress(of: route.gateway, on: route.interface, fromARPTable: $0)
      }
    }
    return NetworkFingerprint(
      interface: interface, gateway: route?.gateway, gatewayHardware: hardware,
      prefix: NetworkInterfaces.ipv4Prefix(of: interface))
  }

  private func text(_ name: String) throws -> String {
    String(decoding: try PrivateFiles.read(procNet + "/" + name, limit: 1 << 20), as: UTF8.self)
  }

  /// The key, made when there is none (exclusive: of two processes making it at once, one
  /// wins and the other reads it).
  private func key() throws -> SecureBytes {
    if !PrivateFiles.exists(keyPath) {
      try PrivateFiles.ensureDirectory(stateDirectory, role: "state directory")
      var fresh = try SystemRandom.bytes(32)
      defer { SecureBytes.wipe(&fresh) }
      try? PrivateFiles.writeAtomically(fresh, to: keyPath, exclusive: true)
    }
    var bytes = try PrivateFiles.readSecret(keyPath, limit: 64)
    defer { SecureBytes.wipe(&bytes) }
    guard bytes.count == 32 else {
      throw MemoPeerError(.storage, "the network key \(keyPath) is damaged", hint: "remove it; a new one is made")
    }
    return SecureBytes(copying: bytes)
  }
}
