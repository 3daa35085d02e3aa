/// What a consent covers. Each is asked and recorded separately, as the source documents
/// separate local-network access from the entitlement to enumerate every service type.
public enum ConsentScope: String, Codable, Sendable, CaseIterable {
  /// Find and connect to devices on the local network (browse, advertise, connect).
  case localNetwork = "local-network"
  /// Enumerate every DNS-SD service type on the network (`browse --all-types`).
  case allServiceTypes = "all-service-types"
  /// Let the daemon sync on a schedule, with nobody at the keyboard.
  case backgroundSync = "background-sync"
  /// Use one network (`ConsentRecord.network`, a `NetworkPlace`'s id): advertise, browse
  /// and dial there. Decided per network, on top of `local-network` (`network allow`).
  case network

  /// The scopes a person decides with `consent` (and the page's buttons), each once for
  /// the node; `network` is decided per network, with `network allow|deny`.
  public static var allCases: [ConsentScope] { [.localNetwork, .allServiceTypes, .backgroundSync] }

  /// A scope a person names to `consent`: one of `allCases`.
  public init?(named name: String) {
    guard let scope = ConsentScope(rawValue: name), Self.allCases.contains(scope) else { return nil }
    self = scope
  }
}

/// A person's answer, or its withdrawal.
public enum ConsentDecision: String, Codable, Sendable {
  case granted, denied
  /// A grant withdrawn; behaves as denied until granted again.
  case revoked
}

/// How the decision reached the record: the audit trail says whether a person saw a prompt.
public enum ConsentMethod: String, Codable, Sendable {
  /// Answered at the terminal prompt that showed the usage description.
  case prompt
  /// `memo-peer consent grant|deny|revoke`.
  case command
  /// Written by an administrator setting up a trusted host (`--provisioning`).
  case provisioning
  /// Answered on the local web page (`memo-peer web`), by a click on the prompt that showed
  /// the same usage description as the terminal's.
  case web
  /// Written by a new version for the network the node was on when it first ran: the
  /// local-network consent given before networks were told apart covered that one.
  case upgrade
}

/// One line of the append-only consent log (format version 1, docs/FORMATS.md).
public struct ConsentRecord: Codable, Sendable, Equatable {
  public var version = 1
  public var decision: ConsentDecision
  public var scope: ConsentScope
  /// The exact usage description shown (or that applied) when the decision was made.
  public var usageText: String
  public var serviceTypes: [String]
  public var user: String
  public var uid: UInt32
  /// Milliseconds since the epoch.
  public var time: Timestamp
  public var method: ConsentMethod
  public var note: String?
  /// Scope `network`: the network's id (`NetworkPlace.id`: a keyed hash, meaningless off
  /// this device) and what the person was shown of it (`NetworkPlace.name`).
  public var network: String?
  public var networkName: String?

  public init(
    decision: ConsentDecision, scope: ConsentScope, usageText: String, serviceTypes: [String], user: String,
    uid: UInt32, time: Timestamp, method: ConsentMethod, note: String? = nil, network: NetworkPlace? = nil
  ) {
    self.network = network?.id
    self.networkName = network?.name
    self.decision = decision
    self.scope = scope
    self.usageText = usageText
    self.serviceTypes = serviceTypes
    self.user = user
    self.uid = uid
    self.time = time
    self.method = method
    self.note = note
  }

  enum CodingKeys: String, CodingKey {
    case version, decision, scope, user, uid, time, method, note, network
    case networkName = "network_name"
    case usageText = "usage_text"
    case serviceTypes = "service_types"
  }
}

/// The state of one scope, derived from the log: the last record for the scope wins.
public enum ConsentState: Sendable, Equatable {
  case undetermined
  case granted(ConsentRecord)
  case denied(ConsentRecord)

  public static func of(_ scope: ConsentScope, in records: [ConsentRecord]) -> ConsentState {
    guard let last = records.last(where: { $0.scope == scope }) else { return .undetermined }
    return last.decision == .granted ? .granted(last) : .denied(last)
  }

  /// The state of one network (scope `network`, by its id).
  public static func of(network id: String, in records: [ConsentRecord]) -> ConsentState {
    guard let last = records.last(where: { $0.scope == .network && $0.network == id }) else { return .undetermined }
    return last.decision == .granted ? .granted(last) : .denied(last)
  }

  public var isGranted: Bool {
    if case .granted = self { return true }
    return false
  }

  /// `undetermined`, `granted` or `denied` — or `revoked` when a grant was withdrawn.
  public var name: String {
    switch self {
    case .undetermined: "undetermined"
    case .granted: "granted"
    case .denied(let record): record.decision.rawValue
    }
  }
}
