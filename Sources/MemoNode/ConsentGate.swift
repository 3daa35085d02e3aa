import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoSystem
import MemoVault

#if canImport(Glibc)
  import Glibc
#endif

/// The node's consent policy as an injectable value: the manifest in force, the consent
/// log and the network this device is on, evaluated afresh on every use so a change (a
/// decision, a move to another network) is followed at once.
public struct ConsentGate: Sendable {
  public let manifest: LocalNetworkManifest
  public let log: ConsentLog
  /// Which network this device is on (`NetworkRule`: uses are allowed only on networks a
  /// person allowed).
  public let networks: NetworkReader

  public init(paths: NodePaths) throws {
    manifest = try NodeConfig.load(paths: paths).manifest
    log = ConsentLog(paths: paths)
    networks = NetworkReader(paths: paths)
  }

  public func verdict(for use: LocalNetworkUse) throws -> LocalNetworkVerdict {
    let network = networks.current()
    return LocalNetworkPolicy.evaluate(use, manifest: manifest, consent: try records(on: network), network: network)
  }

  /// The log's records. A node from before networks were told apart, with local-network
  /// consent, gets the network it is on now recorded as allowed first (method `upgrade`):
  /// nothing changes by surprise, and from then on each new network is a person's decision.
  public func records(on network: NetworkPlace?, now: Timestamp = Clocks.shared.wallNow) throws -> [ConsentRecord] {
    let records = try log.records()
    guard let network, NetworkRule.needsUpgradeRecord(records, network: network) else { return records }
    let covered = records.last { $0.scope == .localNetwork }
    let record = networkRecord(
      .granted, network: network, method: .upgrade, now: now,
      note: "allowed when memo-peer began telling networks apart: local-network consent was on record",
      shown: covered?.usageText)
    try log.append(record)
    return records + [record]
  }

  /// Records a decision about `network` (`network allow|deny`, a prompt, provisioning).
  @discardableResult
  public func record(
    _ decision: ConsentDecision, network: NetworkPlace, method: ConsentMethod, note: String?, now: Timestamp
  ) throws -> ConsentRecord {
    let record = networkRecord(decision, network: network, method: method, now: now, note: note, shown: nil)
    try log.append(record)
    return record
  }

  private func networkRecord(
    _ decision: ConsentDecision, network: NetworkPlace, method: ConsentMethod, now: Timestamp, note: String?,
    shown: String?
  ) -> ConsentRecord {
    ConsentRecord(
      decision: decision, scope: .network, usageText: shown ?? Self.networkQuestion(network, manifest: manifest),
      serviceTypes: manifest.serviceTypes, user: Self.userName(), uid: geteuid(), time: now, method: method,
      note: note, network: network)
  }

  /// What a person is asked on a network memo-peer has not used.
  public static func networkQuestion(_ network: NetworkPlace, manifest: LocalNetworkManifest) -> String {
    "memo-peer has not been used on this network (\(network.name.terminalSafe)). Allow it here? "
      + manifest.promptText
  }

  public func state(_ scope: ConsentScope) throws -> ConsentState {
    ConsentState.of(scope, in: try log.records())
  }

  /// Discovery that refuses every use the policy does not allow right now.
  public var discovery: GatedDiscovery {
    let gate = self
    return GatedDiscovery { use in
      switch try gate.verdict(for: use) {
      case .allowed: return
      case .refused(let error): throw error
      case .needsConsent(let scope): throw ConsentGate.consentRequired(scope, manifest: gate.manifest)
      }
    }
  }

  /// Records a decision with who made it, when, how, and the exact text that applied.
  /// `shown`: the text the person saw when it is not the manifest's prompt (the question
  /// about background sync after a `sync` on a terminal).
  @discardableResult
  public func record(
    _ decision: ConsentDecision, scope: ConsentScope, method: ConsentMethod, note: String?, now: Timestamp,
    shown: String? = nil
  ) throws -> ConsentRecord {
    let record = ConsentRecord(
      decision: decision, scope: scope, usageText: shown ?? manifest.promptText, serviceTypes: manifest.serviceTypes,
      user: Self.userName(), uid: geteuid(), time: now, method: method, note: note)
    // Local-network consent given here is given for the network this device is on.
    let network =
      scope == .localNetwork && decision == .granted ? networks.current().flatMap { $0.isIdentified ? $0 : nil } : nil
    let unallowed = try network.map { !ConsentState.of(network: $0.id, in: try log.records()).isGranted } ?? false
    try log.append(record)
    if let network, unallowed {
      try log.append(networkRecord(.granted, network: network, method: method, now: now, note: note, shown: nil))
    }
    return record
  }

  public static func consentRequired(_ scope: ConsentScope, manifest: LocalNetworkManifest) -> MemoPeerError {
    if scope == .network {
      return MemoPeerError(
        .consentRequired, "memo-peer has not been allowed on this network; nothing was sent",
        remedy: .askOrGrantConsent(.network))
    }
    return MemoPeerError(
      .consentRequired,
      "memo-peer needs your consent before it uses the local network (\(scope.rawValue)); nothing was sent",
      remedy: .askOrGrantConsent(scope))
  }

  static func userName() -> String {
    guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "uid \(geteuid())" }
    return String(cString: name)
  }
}

extension LocalNetworkVerdict {
  /// Refused because a person denied this network (not the local-network scope).
  var isNetworkRefusal: Bool {
    if case .refused(let error) = self { return error.remedy == .grantConsent(.network) }
    return false
  }
}
