import MemoCore
import MemoNode
import MemoPresentation

/// The networks a person allowed or denied (`network list|allow|deny`, docs/CLI.md): each a
/// decision in the consent log with the usage text shown, as the first local-network
/// consent is.
public struct NetworkConsentUseCases {
  let app: App

  /// One network the log has a decision for, as its last record says.
  public struct Decided: Sendable, Encodable {
    public let id: String
    public let name: String
    public let state: String
    public let method: String
    public let at: String
    public let current: Bool
  }

  /// The network this device is on now (nil: none) and its state, with every network decided.
  public struct Overview: Sendable, Encodable {
    public let schema = JSONOutput.schema
    public let current: NetworkPlace?
    /// `allowed`, `undetermined` (never decided: asked on `browse`), `denied` or `revoked`;
    /// with no network decided yet, `allowed` when local-network consent is given (it
    /// covers this network, recorded at the next use), else `undetermined`.
    public let currentState: String?
    public let networks: [Decided]
    enum CodingKeys: String, CodingKey {
      case schema, current, networks
      case currentState = "current_state"
    }
  }

  public func overview() throws -> Overview {
    let gate = try ConsentGate(paths: app.paths)
    let current = gate.networks.current()
    let records = try gate.log.records()
    var seen: [String] = []
    for record in records.reversed() where record.scope == .network {
      if let id = record.network, !seen.contains(id) { seen.append(id) }
    }
    let decided = seen.reversed().compactMap { id -> Decided? in
      guard let last = records.last(where: { $0.scope == .network && $0.network == id }) else { return nil }
      return Decided(
        id: id, name: (last.networkName ?? "?").terminalSafe,
        state: last.decision == .granted ? "allowed" : last.decision.rawValue, method: last.method.rawValue,
        at: TimeText.iso(last.time), current: id == current?.id)
    }
    // No network decided yet: the local-network consent, when given, covers this one (it
    // is recorded at the next use); without it, nothing is allowed anywhere.
    let covered = ConsentState.of(.localNetwork, in: records).isGranted ? "allowed" : "undetermined"
    let stateName = current.map { _ in
      NetworkRule.state(of: current, in: records).map { $0.isGranted ? "allowed" : $0.name } ?? covered
    }
    return Overview(current: current, currentState: stateName, networks: decided)
  }

  /// The network this device is on now, as the page shows it: its state and the question a
  /// decision records (what `network allow` records as shown). Nil: on no network.
  public struct Current: Sendable, Encodable, Equatable {
    public let id: String
    public let name: String
    /// As `overview()`'s `current_state`.
    public let state: String
    /// False while the network cannot be told apart (its gateway has not answered): nothing
    /// can be decided for it yet.
    public let identified: Bool
    /// The question a person answers, recorded with the decision (the network's name in it
    /// escaped as on a terminal).
    public let question: String
  }

  public func current() throws -> Current? {
    let gate = try ConsentGate(paths: app.paths)
    let overview = try overview()
    guard let place = overview.current else { return nil }
    return Current(
      id: place.id, name: place.name.terminalSafe, state: overview.currentState ?? "undetermined",
      identified: place.isIdentified,
      question: ConsentGate.networkQuestion(place, manifest: gate.manifest))
  }

  /// Records `decision` for the network `id` names (nil: the one this device is on now);
  /// the record, with the network.
  public func decide(_ decision: ConsentDecision, network id: String?, method: ConsentMethod, note: String?) throws
    -> ConsentRecord
  {
    let gate = try ConsentGate(paths: app.paths)
    let network: NetworkPlace
    if let id {
      guard id != NetworkPlace.unidentifiedID else {
        throw MemoPeerError(
          .usage, "\(id) is not a network: it stands for one not told apart yet",
          hint: "give an id the list of networks shows")
      }
      let records = try gate.log.records()
      guard let known = records.last(where: { $0.scope == .network && $0.network == id }) else {
        if let current = gate.networks.current(), current.id == id {
          return try gate.record(decision, network: current, method: method, note: note, now: app.now)
        }
        throw MemoPeerError(
          .notFound, "no network \(id.terminalSafe) is on record",
          hint: "give an id the list of networks shows, or none for the network this device is on")
      }
      network = NetworkPlace(id: id, name: known.networkName ?? "?")
    } else {
      guard let current = gate.networks.current() else {
        throw MemoPeerError(
          .notFound, "this device is on no network (no interface but loopback has an address)",
          hint: "connect to the network first, then decide")
      }
      guard current.isIdentified else {
        throw MemoPeerError(
          .notFound, "this network cannot be told apart yet: its gateway has not answered",
          hint: "use the network a moment (any connection through it), then decide")
      }
      network = current
    }
    return try gate.record(decision, network: network, method: method, note: note, now: app.now)
  }
}
