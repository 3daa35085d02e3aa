import FoundationEssentials
import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What `serve` is doing, written to `state/serve.json` (0600) on every change so that
/// `memo-peer status` and `doctor` can report it. Format version 1.
public struct ServeStatus: Codable, Sendable, Equatable {
  public enum State: String, Codable, Sendable {
    /// Not advertising; `waitingFor` says why.
    case waiting
    case advertising
    case stopped
  }

  public var schema = 1
  public var pid: Int32
  public var state: State
  public var waitingFor: String?
  public var instance: String?
  public var port: UInt16
  /// Interface names advertised on, or empty for all.
  public var interfaces: [String]
  public var updated: Timestamp
  /// The memos' lock state as the daemon sees it: `unprotected`, `unlocked` or `locked`.
  public var store: String?
  /// When each trusted device (compact device ID in the file) last completed a trusted
  /// handshake with this daemon, in ms since the epoch. Counted by the widget as "peers
  /// online".
  public var trustedContacts: [DeviceID: Timestamp]?
  /// Live sync while advertising: `on`, or `waiting (background-sync consent)`.
  public var liveSync: String?
  /// The trusted devices (compact device IDs in the file) with a live link up now, in the
  /// order of that text.
  public var livePeers: [DeviceID]?
  /// Of those, the ones dialled at an address because DNS-SD did not show them (a network
  /// that filters multicast, another subnet): `doctor`'s finding, seen by the daemon.
  public var liveAddresses: [DeviceID: String]?
  /// The fingerprint of the trust store file (`TrustStore.fingerprint`) the daemon has
  /// applied: loaded, and the connections of every device it no longer trusts closed.
  /// `trust remove` waits for it to be the file's (`ServeStatus.hasApplied`).
  public var trustStore: String?

  public init(
    pid: Int32, state: State, waitingFor: String?, instance: String?, port: UInt16, interfaces: [String],
    updated: Timestamp
  ) {
    self.pid = pid
    self.state = state
    self.waitingFor = waitingFor
    self.instance = instance
    self.port = port
    self.interfaces = interfaces
    self.updated = updated
  }

  enum CodingKeys: String, CodingKey {
    case schema, pid, state, instance, port, interfaces, updated, store
    case waitingFor = "waiting_for"
    case trustedContacts = "trusted_contacts"
    case liveSync = "live_sync"
    case livePeers = "live_peers"
    case liveAddresses = "live_addresses"
    case trustStore = "trust_store"
  }

  /// `devices` in the order `live_peers` lists them: by their compact text, as the file
  /// always has (not by their bytes, `DeviceID.<`).
  static func listed(_ devices: some Sequence<DeviceID>) -> [DeviceID] { devices.sorted { $0.compact < $1.compact } }

  /// Whether the process that wrote the status still runs.
  public var isRunning: Bool { state != .stopped && kill(pid, 0) == 0 }

  public static func path(_ paths: NodePaths) -> String { paths.stateDirectory + "/serve.json" }

  public static func read(_ paths: NodePaths) -> ServeStatus? {
    guard let bytes = try? PrivateFiles.read(path(paths), limit: 1 << 16) else { return nil }
    return try? JSONDecoder().decode(ServeStatus.self, from: Data(bytes))
  }

  public func write(_ paths: NodePaths) throws {
    try PrivateFiles.ensureDirectory(paths.stateDirectory, role: "state directory")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    try PrivateFiles.writeAtomically(Array(try encoder.encode(self)), to: Self.path(paths))
  }

  /// One line for people: `advertising as memo-peer-1a2b3c4d on eth0 (port 7410)`. Read
  /// back from a file, so it goes through the terminal rule.
  public var summary: String {
    let memos = store == "locked" ? "; memos locked" : ""
    let byAddress = liveAddresses?.count ?? 0
    let withoutDNSSD = byAddress > 0 ? ", \(byAddress) reached at an address DNS-SD did not show" : ""
    let linked =
      livePeers.map { $0.isEmpty ? "" : " (\($0.count) device\($0.count == 1 ? "" : "s") connected\(withoutDNSSD))" }
      ?? ""
    let live = liveSync.map { "; live sync \($0)\(linked)" } ?? ""
    return TerminalText.render(stateSummary + memos + live, limit: 512).text
  }

  private var stateSummary: String {
    switch state {
    case .waiting: "waiting (\(waitingFor ?? "unknown"))"
    case .advertising:
      "advertising as \(instance ?? "?") on \(interfaces.isEmpty ? "all interfaces" : interfaces.joined(separator: ", "))"
        + " (port \(port))"
    case .stopped: "stopped"
    }
  }
}
