import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoSystem
import MemoVault

#if canImport(Glibc)
  import Glibc
#endif

/// The node's consent policy as an injectable value: the manifest in force and the consent
/// log, evaluated afresh on every use so a change is followed at once.
public struct ConsentGate: Sendable {
  public let manifest: LocalNetworkManifest
  public let log: ConsentLog

  public init(paths: NodePaths) throws {
    manifest = try NodeConfig.load(paths: paths).manifest
    log = ConsentLog(paths: paths)
  }

  public func verdict(for use: LocalNetworkUse) throws -> LocalNetworkVerdict {
    LocalNetworkPolicy.evaluate(use, manifest: manifest, consent: try log.records())
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
    try log.append(record)
    return record
  }

  public static func consentRequired(_ scope: ConsentScope, manifest: LocalNetworkManifest) -> MemoPeerError {
    MemoPeerError(
      .consentRequired,
      "memo-peer needs your consent before it uses the local network (\(scope.rawValue)); nothing was sent",
      remedy: .askOrGrantConsent(scope))
  }

  static func userName() -> String {
    guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "uid \(geteuid())" }
    return String(cString: name)
  }
}
