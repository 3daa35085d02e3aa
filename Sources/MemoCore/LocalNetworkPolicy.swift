/// The declarations a node must make before it may use the local network, like an app's
/// Info.plist: the reason shown to the user, and every DNS-SD service type it uses.
public struct LocalNetworkManifest: Sendable, Equatable {
  /// Shown verbatim in the consent prompt and stored with every decision.
  public var usageDescription: String
  /// Declared DNS-SD service types, e.g. `_memo-peer._tcp`.
  public var serviceTypes: [String]

  public static let memoPeerServiceType = "_memo-peer._tcp"
  /// The meta-query for every service type (RFC 6763, section 9).
  public static let allTypesQuery = "_services._dns-sd._udp"

  /// What memo-peer itself declares.
  public static let builtIn = LocalNetworkManifest(
    usageDescription:
      "to find your other devices running memo-peer and exchange memos with the ones you have paired",
    serviceTypes: [memoPeerServiceType])

  public init(usageDescription: String, serviceTypes: [String]) {
    self.usageDescription = usageDescription
    self.serviceTypes = serviceTypes
  }

  /// The built-in manifest plus types a deployment declares in its config.
  public func adding(serviceTypes extra: [String]) -> LocalNetworkManifest {
    var result = self
    for type in extra where !result.serviceTypes.contains(type) { result.serviceTypes.append(type) }
    return result
  }

  /// The prompt a person sees before the first local-network use.
  public var promptText: String {
    "memo-peer would like to find and connect to devices on your local network: \(usageDescription)."
  }

  /// A DNS-SD service type is `_name._tcp` or `_name._udp`, name 1–15 characters.
  public static func isWellFormed(serviceType: String) -> Bool {
    let parts = serviceType.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2, parts[1] == "_tcp" || parts[1] == "_udp", parts[0].hasPrefix("_") else { return false }
    let name = parts[0].dropFirst()
    return (1...15).contains(name.count)
      && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
  }
}

/// One use of the local network that needs a decision.
public enum LocalNetworkUse: Sendable, Equatable {
  case browse(serviceType: String)
  case advertise(serviceType: String)
  case browseAllTypes

  var scope: ConsentScope { self == .browseAllTypes ? .allServiceTypes : .localNetwork }
  var serviceType: String? {
    switch self {
    case .browse(let type), .advertise(let type): type
    case .browseAllTypes: nil
    }
  }
}

/// What the policy says about a use.
public enum LocalNetworkVerdict: Sendable, Equatable {
  case allowed
  /// No decision yet: a person must be asked (or, unattended, the node waits).
  case needsConsent(ConsentScope)
  /// Refused; the error says why and what to do.
  case refused(MemoPeerError)
}

/// The consent policy, injected wherever the network is touched. Pure: it decides from the
/// manifest and the consent log, and never does I/O.
public enum LocalNetworkPolicy {
  /// dns_sd's kDNSServiceErr_NoAuth: the service type is not declared.
  public static let noAuthCode: Int32 = -65555
  /// Apple's kDNSServiceErr_PolicyDenied: the user denied local-network access.
  public static let policyDeniedCode: Int32 = -65570

  /// `network`: the network this device is on now (nil: none, or not told): a use the
  /// scopes allow is allowed only on a network a person allowed (`NetworkRule`).
  public static func evaluate(
    _ use: LocalNetworkUse, manifest: LocalNetworkManifest, consent records: [ConsentRecord],
    network: NetworkPlace? = nil
  ) -> LocalNetworkVerdict {
    if let type = use.serviceType, !manifest.serviceTypes.contains(type) {
      return .refused(
        MemoPeerError(
          .noAuth, "NoAuth (\(noAuthCode)): the service type \(type) is not declared",
          hint: "declare it in \"service_types\" of the node's config.json (memo-peer declares "
            + manifest.serviceTypes.joined(separator: ", ") + ")",
          dnsServiceCode: noAuthCode))
    }
    if use.scope == .allServiceTypes {
      // Enumerating every type also needs local-network access itself.
      if case .refused(let error) = evaluate(
        .browse(serviceType: LocalNetworkManifest.memoPeerServiceType), manifest: manifest, consent: records)
      {
        return .refused(error)
      }
    }
    switch ConsentState.of(use.scope, in: records) {
    case .granted: return evaluate(network: network, consent: records)
    case .undetermined:
      if use.scope == .allServiceTypes {
        return .refused(
          MemoPeerError(
            .consentRequired, "browsing all service types needs the all-service-types consent scope",
            remedy: .grantConsent(.allServiceTypes)))
      }
      return .needsConsent(use.scope)
    case .denied(let record):
      return .refused(
        MemoPeerError(
          .policyDenied,
          "PolicyDenied (\(policyDeniedCode)): \(use.scope.rawValue) access was \(record.decision.rawValue)",
          remedy: .grantConsent(use.scope),
          dnsServiceCode: policyDeniedCode))
    }
  }

  /// A use the scopes allow, on `network`: allowed where a person allowed it; asked (or
  /// waited for) on one nobody decided; refused on one a person denied.
  static func evaluate(network: NetworkPlace?, consent records: [ConsentRecord]) -> LocalNetworkVerdict {
    switch NetworkRule.state(of: network, in: records) {
    case nil, .granted?: return .allowed
    case .undetermined?: return .needsConsent(.network)
    case .denied(let record)?:
      return .refused(
        MemoPeerError(
          .policyDenied,
          "PolicyDenied (\(policyDeniedCode)): memo-peer was \(record.decision.rawValue) on this network (\(network?.name.terminalSafe ?? "?"))",
          remedy: .grantConsent(.network), dnsServiceCode: policyDeniedCode))
    }
  }
}
