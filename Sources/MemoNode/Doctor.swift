import CAvahiProbe
import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// One finding of `memo-peer doctor`: what was checked, in plain words, and the fix.
public struct DoctorCheck: Codable, Sendable, Equatable {
  public let name: String
  public let ok: Bool
  public let detail: String
  public let fix: String?

  public init(name: String, ok: Bool, detail: String, fix: String?) {
    self.name = name
    self.ok = ok
    self.detail = detail
    self.fix = fix
  }
}

/// Why discovery is silent. Each check says what it found and how to fix it; only the last
/// one (seeing our own advertisement) uses the network, and only under consent.
public enum Doctor {
  /// Whether memo-peer may use the network this device is on now (`NetworkRule`).
  static func networkCheck(_ gate: ConsentGate) -> DoctorCheck {
    guard let network = gate.networks.current() else {
      return DoctorCheck(
        name: "network", ok: false, detail: "this device is on no network: no interface but loopback has an address",
        fix: "connect to your home network")
    }
    let records = (try? gate.log.records()) ?? []
    let name = network.name.terminalSafe
    switch NetworkRule.state(of: network, in: records) {
    case nil, .granted?:
      return DoctorCheck(
        name: "network", ok: true, detail: "this network (\(name), \(network.id)) is allowed", fix: nil)
    case .undetermined?:
      return DoctorCheck(
        name: "network", ok: false,
        detail:
          "this network (\(name), \(network.id)) is not one a person allowed: nothing is advertised, browsed or dialled here",
        fix: "if it is your home network, allow it: `memo-peer network allow` (or answer `memo-peer browse`)")
    case .denied(let record)?:
      return DoctorCheck(
        name: "network", ok: false, detail: "this network (\(name), \(network.id)) was \(record.decision.rawValue)",
        fix: "allow it with `memo-peer network allow` if it is one of yours")
    }
  }

  public static func run(paths: NodePaths, environment: [String: String]) async -> [DoctorCheck] {
    var checks: [DoctorCheck] = []
    let gate = try? ConsentGate(paths: paths)
    let consent = (try? gate?.state(.localNetwork)) ?? .undetermined
    checks.append(
      DoctorCheck(
        name: "consent", ok: consent.isGranted, detail: "local-network consent is \(consent.name)",
        fix: consent.isGranted
          ? nil : "grant it: `memo-peer consent grant` (or answer the prompt of `memo-peer browse`)"))

    let network = gate.map(networkCheck)
    if let network { checks.append(network) }

    let bus = busSocketPath(environment)
    let busReachable = bus.map(canConnect) ?? false
    checks.append(
      DoctorCheck(
        name: "dbus", ok: busReachable,
        detail: busReachable
          ? "the D-Bus system bus answers at \(bus!)" : "no D-Bus system bus at \(bus ?? "(unsupported address)")",
        fix: busReachable ? nil : "start dbus (`systemctl start dbus`), or set DBUS_SYSTEM_BUS_ADDRESS"))

    let avahi = probeAvahi()
    checks.append(
      DoctorCheck(
        name: "avahi-daemon", ok: avahi.version != nil,
        detail: avahi.version.map { "\($0.terminalSafe) is running and reachable over D-Bus" }
          ?? "avahi-daemon cannot be reached (\(avahi.error.terminalSafe))",
        fix: avahi.version == nil
          ? "install and start it: `apt-get install avahi-daemon && systemctl start avahi-daemon`" : nil))

    let interfaces = NetworkInterfaces.multicastCapable()
    checks.append(
      DoctorCheck(
        name: "interfaces", ok: !interfaces.isEmpty,
        detail: interfaces.isEmpty
          ? "no network interface is up and multicast-capable"
          : "multicast-capable: "
            + interfaces.map { "\($0.name) (\($0.addresses.joined(separator: ", ")))" }.joined(separator: "; "),
        fix: interfaces.isEmpty ? "connect to your home network; mDNS needs an interface with multicast" : nil))

    let serve = ServeStatus.read(paths)
    let running = serve?.isRunning ?? false
    checks.append(
      DoctorCheck(
        name: "daemon", ok: running && serve?.state == .advertising,
        detail: running ? "memo-peer serve is \(serve!.summary)" : "memo-peer serve is not running",
        fix: !running
          ? "start it: `memo-peer serve` (or the systemd unit in Services/)"
          : serve?.waitingFor == ServeEngine.waitingForUnlock
            ? "unlock the node: `memo-peer unlock` (a locked node cannot prove who it is, so it does not advertise)"
            : serve?.state == .waiting ? "it waits for \(serve?.waitingFor ?? "something"); see the checks above" : nil)
    )

    if running, let port = serve?.port {
      let listening = canConnectTCP(port: port)
      checks.append(
        DoctorCheck(
          name: "listening port", ok: listening,
          detail: listening
            ? "TCP port \(port) accepts connections" : "nothing accepts connections on TCP port \(port)",
          fix: listening ? nil : "restart `memo-peer serve`; check that no firewall rule drops the port"))
    }

    if consent.isGranted, running, serve?.state == .advertising, avahi.version != nil, let gate,
      let name = serve?.instance
    {
      let seen = await seesOwnAdvertisement(name: name, discovery: gate.discovery)
      checks.append(
        DoctorCheck(
          name: "own advertisement", ok: seen,
          detail: seen
            ? "this node's browse sees its own advertisement \(name)" : "this node's own browse does not see \(name)",
          fix: seen
            ? nil
            : "check that avahi-daemon uses the interface (allow-interfaces in avahi-daemon.conf) and that no firewall drops UDP port 5353"
        ))
    }
    // The devices met before: shown by DNS-SD here, or only at an address, or not at all.
    // Not on a network a person allowed: nothing is tried here (the network check says so).
    if consent.isGranted, avahi.version != nil, let gate, network?.ok == true,
      let peers = await DoctorPeerPaths.check(paths: paths, gate: gate)
    {
      checks.append(peers)
    }
    return checks
  }

  static func busSocketPath(_ environment: [String: String]) -> String? {
    let address = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
    guard address.hasPrefix("unix:path=") else { return nil }
    return String(address.dropFirst("unix:path=".count).prefix { $0 != "," })
  }

  static func canConnect(_ socketPath: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(socketPath.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    } == 0
  }

  static func canConnectTCP(port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    } == 0
  }

  static func probeAvahi() -> (version: String?, error: String) {
    var version = [CChar](repeating: 0, count: 128)
    var error = [CChar](repeating: 0, count: 256)
    let ok = memo_avahi_probe(&version, version.count, &error, error.count) == 1
    func text(_ chars: [CChar]) -> String {
      String(nulTerminated: chars)
    }
    return ok ? (text(version), "") : (nil, text(error))
  }

  static func seesOwnAdvertisement(name: String, discovery: GatedDiscovery) async -> Bool {
    guard let events = try? discovery.browse(type: LocalNetworkManifest.memoPeerServiceType) else { return false }
    return await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        do {
          for try await event in events {
            if case .added(let instance) = event, instance.name == name { return true }
          }
        } catch {}
        return false
      }
      group.addTask {
        try? await Task.sleep(for: .seconds(3))
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
  }
}
