import MemoCore
import MemoNode
import MemoPresentation
import MemoStore
import MemoVault

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
  public let revocations: [RevocationJSON]
  /// Notebooks shared with this device waiting for a person (ids), and what peers sent that
  /// was kept aside (quarantined).
  public let invitations: [String]
  public let keptAside: [KeptAsideJSON]
  /// The network this device is on: `{id, name, state}` (absent: on none).
  public let network: NodeStatus.NetworkFacts?

  /// Kept aside from one peer, for one reason.
  public struct KeptAsideJSON: Encodable, Sendable {
    public let deviceID: String
    public let reason: String
    public let count: Int
    enum CodingKeys: String, CodingKey {
      case reason, count
      case deviceID = "device_id"
    }
  }

  enum CodingKeys: String, CodingKey {
    case schema, consent, running, serve, protection, changes, revocations, invitations, network
    case keptAside = "kept_aside"
  }

  public init(_ status: NodeStatus) {
    network = status.network
    changes = status.changes
    revocations = status.revocations.map(RevocationJSON.init)
    invitations = status.invitations.map(\.notebook.rawValue)
    keptAside = status.keptAside.map {
      KeptAsideJSON(deviceID: $0.peer.description, reason: $0.reason, count: $0.count)
    }
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
  /// The network this device is on, its state and the question allowing it records (absent:
  /// on none).
  public let network: NetworkConsentUseCases.Current?
  enum CodingKeys: String, CodingKey {
    case schema, scopes, network
    case usageText = "usage_text"
    case serviceTypes = "service_types"
  }

  public init(_ overview: ConsentOverview, network: NetworkConsentUseCases.Current?) {
    self.network = network
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
    public let addresses: PeerAddressesJSON
    enum CodingKeys: String, CodingKey {
      case name, source, added, recognizable, receive, addresses
      case deviceID = "device_id"
    }
  }
  public let schema = JSONOutput.schema
  public let peers: [Peer]
  public let revocations: [RevocationJSON]

  public init(_ list: TrustList, revocations: [RevocationNote] = []) {
    peers = list.peers.map {
      Peer(
        name: $0.name, deviceID: $0.deviceID.description, source: $0.source.rawValue, added: TimeText.iso($0.added),
        recognizable: $0.discoveryKey != nil, receive: ($0.receive ?? .ask).rawValue,
        addresses: PeerAddressesJSON($0))
    }
    self.revocations = revocations.map(RevocationJSON.init)
  }
}

/// Where a trusted device may be dialled without DNS-SD (`trust list --json`, `peers
/// --json`, `trust address PEER list --json`): the addresses a person gave, where it was
/// reached, newest first, and where it last said it listens.
public struct PeerAddressesJSON: Encodable, Sendable {
  public struct Reached: Encodable, Sendable {
    public let address: String
    public let network: String?
    public let at: String
  }
  public struct Announced: Encodable, Sendable {
    public let addresses: [String]
    public let network: String?
    public let at: String
  }
  public let given: [String]
  public let reached: [Reached]
  public let announced: Announced?

  public init(_ peer: TrustedPeer) {
    given = (peer.addresses ?? []).map(\.description)
    reached = (peer.reached ?? []).map {
      Reached(address: $0.address.description, network: $0.network, at: TimeText.iso($0.at))
    }
    announced = peer.announced.map {
      Announced(addresses: $0.addresses.map(\.description), network: $0.network, at: TimeText.iso($0.at))
    }
  }
}

/// `trust address PEER … --json`.
public struct TrustAddressesJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let name: String
  public let deviceID: String
  public let addresses: PeerAddressesJSON
  enum CodingKeys: String, CodingKey {
    case schema, name, addresses
    case deviceID = "device_id"
  }

  public init(_ peer: TrustedPeer) {
    name = peer.name
    deviceID = peer.deviceID.description
    addresses = PeerAddressesJSON(peer)
  }
}

/// One revocation held here (`trust list --json`, `status --json`).
public struct RevocationJSON: Encodable, Sendable {
  public let revoker: String
  public let revoked: String
  /// The revoked device's name here, when it had one.
  public let name: String?
  public let made: String
  /// `applied`, `against-this-device` or `overridden`.
  public let state: String
  /// The peer it came from; absent: made on this device.
  public let via: String?

  public init(_ note: RevocationNote) {
    revoker = note.revoker.description
    revoked = note.revoked.description
    name = note.name
    made = TimeText.iso(note.made)
    state = note.state.rawValue
    via = note.via?.description
  }
}

/// `trust remove --json` and `trust revoke --json`.
public struct TrustRemovalJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let name: String
  public let deviceID: String
  /// False for `--here-only`.
  public let revoked: Bool
  public let unshared: [String]
  public let rotated: [String]
  /// What the running daemon said: `confirmed` (it closed the device's connections),
  /// `unconfirmed` (not within 2 s; the device is refused anyway) or `none` (no daemon).
  public let daemon: String

  enum CodingKeys: String, CodingKey {
    case schema, name, revoked, unshared, rotated, daemon
    case deviceID = "device_id"
  }

  public init(_ removal: TrustUseCases.Removal) {
    name = removal.peer.name
    deviceID = removal.peer.deviceID.description
    revoked = removal.revocation != nil
    unshared = removal.revocation?.unshared.map(\.rawValue) ?? []
    rotated = removal.revocation?.rotated.map(\.rawValue) ?? []
    daemon = removal.daemon.rawValue
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
