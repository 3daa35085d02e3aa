import MemoCore
import MemoNode
import MemoPresentation
import MemoStore

// The `--json` shapes of the node's state: `status`, `consent`, `protect`/`unlock`/`lock`
// (and the page's status, consent, Lock and unlock).

/// `status --json`, `GET /api/status`: consent per scope, the daemon, the protection.
public struct StatusJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let consent: [String: String]
  public let running: Bool
  public let serve: ServeStatus?
  public let protection: ProtectionJSON
  /// Moves whenever a revision is stored or the inbox changes (counts only): the page
  /// reloads what it shows then, so a change a peer sent appears without a reload.
  public let changes: String?

  public init(_ status: NodeStatus) {
    changes = status.changes
    var consent: [String: String] = [:]
    for (scope, state) in status.consent { consent[scope.rawValue] = state.name }
    self.consent = consent
    running = status.serve != nil
    serve = status.serve
    protection = ProtectionJSON(status.protection, changed: nil)
  }
}

/// `protect`, `unlock`, `lock --json`; the page's Lock and unlock.
public struct ProtectionJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let protection: String
  public let state: String
  public let idleTimeout: UInt32?
  public let unlockedSinceBoot: Bool
  public let changed: Bool?

  public init(_ status: DeviceKeys.Status, changed: Bool?) {
    protection = status.protection.rawValue
    state = status.lockState.name
    idleTimeout = status.idleTimeout
    unlockedSinceBoot = status.lockState.unlockedSinceBoot
    self.changed = changed
  }

  public init(_ change: ProtectionChange) { self.init(change.status, changed: change.changed) }

  enum CodingKeys: String, CodingKey {
    case schema, protection, state, changed
    case idleTimeout = "idle_timeout"
    case unlockedSinceBoot = "unlocked_since_boot"
  }
}

/// `consent status --json`, `GET /api/consent`: each scope's state and last record, and the
/// usage text the prompts show (on the terminal and on the web page).
public struct ConsentJSON: Encodable, Sendable {
  public struct Scope: Encodable, Sendable {
    public let state: String
    public let last: ConsentRecord?
  }
  public let schema = JSONOutput.schema
  public let scopes: [String: Scope]
  public let usageText: String
  public let serviceTypes: [String]
  enum CodingKeys: String, CodingKey {
    case schema, scopes
    case usageText = "usage_text"
    case serviceTypes = "service_types"
  }

  public init(_ overview: ConsentOverview) {
    var scopes: [String: Scope] = [:]
    for scope in ConsentScope.allCases {
      scopes[scope.rawValue] = Scope(state: overview.state(scope).name, last: overview.last(scope))
    }
    self.scopes = scopes
    usageText = overview.manifest.promptText
    serviceTypes = overview.manifest.serviceTypes
  }
}

/// `id --json`.
public struct DeviceIDJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let deviceID: String
  enum CodingKeys: String, CodingKey {
    case schema
    case deviceID = "device_id"
  }

  public init(_ id: DeviceID) { deviceID = id.description }
}

/// `trust list --json`.
public struct TrustListJSON: Encodable, Sendable {
  public struct Peer: Encodable, Sendable {
    public let name: String
    public let deviceID: String
    public let source: String
    public let added: String
    public let recognizable: Bool
    public let receive: String
    enum CodingKeys: String, CodingKey {
      case name, source, added, recognizable, receive
      case deviceID = "device_id"
    }
  }
  public let schema = JSONOutput.schema
  public let peers: [Peer]

  public init(_ list: TrustList) {
    peers = list.peers.map {
      Peer(
        name: $0.name, deviceID: $0.deviceID.description, source: $0.source.rawValue, added: TimeText.iso($0.added),
        recognizable: $0.discoveryKey != nil, receive: ($0.receive ?? .ask).rawValue)
    }
  }
}

/// `ping --json`.
public struct PingJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let peer: String
  public let deviceID: String
  public let received: Int
  public let milliseconds: [Double]
  enum CodingKeys: String, CodingKey {
    case schema, peer, received, milliseconds
    case deviceID = "device_id"
  }

  public init(_ result: PingResult) {
    peer = result.peer.displayName
    deviceID = result.deviceID.description
    received = result.milliseconds.count
    milliseconds = result.milliseconds
  }
}
