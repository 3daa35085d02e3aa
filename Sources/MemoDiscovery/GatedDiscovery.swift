import MemoCore

/// DNS-SD behind the consent policy: every browse and registration asks `authorize` first,
/// so no code path reaches the network without a recorded decision. The policy is injected
/// (the CLI passes one built on the consent log and the manifest); tests pass their own.
public struct GatedDiscovery: Sendable {
  /// Throws NoAuth, PolicyDenied or consent-required when a use is not allowed.
  public let authorize: @Sendable (LocalNetworkUse) throws -> Void

  public init(authorize: @escaping @Sendable (LocalNetworkUse) throws -> Void) {
    self.authorize = authorize
  }

  public func browse(type: String, interfaceIndex: UInt32 = 0) throws -> AsyncThrowingStream<BrowseEvent, any Error> {
    try authorize(type == LocalNetworkManifest.allTypesQuery ? .browseAllTypes : .browse(serviceType: type))
    return DNSSD.browse(type: type, interfaceIndex: interfaceIndex)
  }

  public func register(
    name: String, type: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32 = 0
  ) async throws -> DNSServiceRegistration {
    try authorize(.advertise(serviceType: type))
    return try await DNSSD.register(name: name, type: type, port: port, txt: txt, interfaceIndex: interfaceIndex)
  }

  /// Resolving and address lookups answer instances that a gated browse returned; they are
  /// still checked, so a stale instance cannot be resolved after consent is withdrawn.
  public func resolve(_ instance: ServiceInstance) async throws -> ResolvedService {
    try authorize(.browse(serviceType: Self.bareType(instance.type)))
    return try await DNSSD.resolve(instance)
  }

  public func addresses(of service: ResolvedService) async throws -> [String] {
    try authorize(.browse(serviceType: Self.bareType(service.instance.type)))
    return try await DNSSD.addresses(host: service.hostTarget, interfaceIndex: service.instance.interfaceIndex)
  }

  /// `_memo-peer._tcp.` (as browsing reports it) to `_memo-peer._tcp` (as declared).
  static func bareType(_ type: String) -> String { type.hasSuffix(".") ? String(type.dropLast()) : type }
}
