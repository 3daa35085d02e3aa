import MemoCore
import MemoNode

/// Each consent scope's state and last record, with the manifest the prompts show.
public struct ConsentOverview: Sendable {
  public var manifest: LocalNetworkManifest
  public var records: [ConsentRecord]

  public func state(_ scope: ConsentScope) -> ConsentState { ConsentState.of(scope, in: records) }
  public func last(_ scope: ConsentScope) -> ConsentRecord? { records.last { $0.scope == scope } }
}

/// What a consent decision did.
public enum ConsentChange: Sendable {
  case recorded(ConsentRecord)
  /// A revoke of a scope that is not granted: nothing recorded.
  case notGranted(ConsentScope)
}

/// Local-network consent: what is on record, a person's decisions, and asking for one
/// before a network use (docs/CLI.md, `consent`).
public struct ConsentUseCases {
  let app: App

  /// The node's consent policy now (its manifest and log).
  public func gate() throws -> ConsentGate { try ConsentGate(paths: app.paths) }

  /// The log and the manifest. `ignoringUnreadableLog`: a log that cannot be read shows as
  /// empty (`consent status`) rather than failing (the page).
  public func overview(ignoringUnreadableLog: Bool = false) throws -> ConsentOverview {
    let gate = try gate()
    let records = ignoringUnreadableLog ? (try? gate.log.records()) ?? [] : try gate.log.records()
    return ConsentOverview(manifest: gate.manifest, records: records)
  }

  /// Records a decision for `scope` (`grant`, `deny`, `revoke`, the page's buttons), with the
  /// usage text that applies. Revoking what is not granted records nothing.
  public func decide(
    _ decision: ConsentDecision, scope: ConsentScope, method: ConsentMethod, note: String? = nil
  ) throws -> ConsentChange {
    let gate = try gate()
    if decision == .revoked, try !gate.state(scope).isGranted { return .notGranted(scope) }
    return .recorded(try gate.record(decision, scope: scope, method: method, note: note, now: app.now))
  }

  /// Asks through `prompt`, showing the usage description, when no decision for `use` is on
  /// record, and records the answer; refuses when consent was denied, or when nobody can be
  /// asked (`consent-required`, nothing sent).
  public func obtain(for use: LocalNetworkUse, prompt: any Prompt) throws {
    try Self.obtain(for: use, gate: try gate(), prompt: prompt, now: app.now)
  }

  /// Refuses unless `use` is allowed by a decision on record; `hint` says how to give one
  /// (the page asks on a click before it calls).
  public func require(for use: LocalNetworkUse, hint: String) throws {
    let gate = try gate()
    switch try gate.verdict(for: use) {
    case .allowed: return
    case .refused(let error): throw error
    case .needsConsent(let scope):
      let error = ConsentGate.consentRequired(scope, manifest: gate.manifest)
      throw MemoPeerError(error.code, error.message, hint: hint)
    }
  }

  /// After a sync a person ran on a terminal: asks, once, whether `serve` may keep this
  /// device in sync in the background (live sync, `--sync-every`), with what that means and
  /// the usage description, and records the answer. Never asks when nobody can answer or
  /// when any decision about background sync is on record (granted, denied or revoked: a
  /// person who said no is not asked again). nil when it did not ask.
  public func offerBackgroundSync(prompt: any Prompt) throws -> ConsentRecord? {
    let gate = try gate()
    guard prompt.canAsk, case .undetermined = try gate.state(.backgroundSync) else { return nil }
    let question = Self.backgroundSyncQuestion(gate.manifest)
    let answer = try prompt.ask(question + "\nAllow / Don't Allow? ")
    let allowed = Self.allows(answer)
    return try gate.record(
      allowed ? .granted : .denied, scope: .backgroundSync, method: .prompt, note: nil, now: app.now, shown: question)
  }

  /// What the offer shows: what the daemon would do, and the manifest's usage description.
  public static func backgroundSyncQuestion(_ manifest: LocalNetworkManifest) -> String {
    "Keep this device in sync in the background? While `memo-peer serve` runs (its user unit), every change"
      + " is synced with your trusted devices as soon as it is made, with nobody at the keyboard. "
      + manifest.promptText
  }

  static func allows(_ answer: String) -> Bool {
    ["allow", "a", "y", "yes"].contains(answer.trimmingWhitespace.lowercased())
  }

  static func obtain(for use: LocalNetworkUse, gate: ConsentGate, prompt: any Prompt, now: Timestamp) throws {
    switch try gate.verdict(for: use) {
    case .allowed: return
    case .refused(let error): throw error
    case .needsConsent(let scope):
      guard prompt.canAsk else { throw ConsentGate.consentRequired(scope, manifest: gate.manifest) }
      // A network nobody decided: the person is asked about this one, by its name.
      if scope == .network, let network = gate.networks.current(), network.isIdentified {
        let answer = try prompt.ask(
          "\(ConsentGate.networkQuestion(network, manifest: gate.manifest))\nAllow / Don't Allow? ")
        try gate.record(allows(answer) ? .granted : .denied, network: network, method: .prompt, note: nil, now: now)
      } else if scope == .network {
        throw ConsentGate.consentRequired(scope, manifest: gate.manifest)
      } else {
        let answer = try prompt.ask("\(gate.manifest.promptText)\nAllow / Don't Allow? ")
        try gate.record(allows(answer) ? .granted : .denied, scope: scope, method: .prompt, note: nil, now: now)
      }
      switch try gate.verdict(for: use) {
      case .allowed: return
      case .refused(let error): throw error
      // Granted here, then moved to a network nobody decided: asked about that one too.
      case .needsConsent(let next) where next == .network && scope != .network:
        try obtain(for: use, gate: gate, prompt: prompt, now: now)
      case .needsConsent(let next): throw ConsentGate.consentRequired(next, manifest: gate.manifest)
      }
    }
  }
}

/// The network use of finding and reaching trusted devices (`sync`, `send`, `ping`).
extension LocalNetworkUse {
  static var memoPeerBrowse: LocalNetworkUse { .browse(serviceType: LocalNetworkManifest.memoPeerServiceType) }
}
