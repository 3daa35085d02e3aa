import FoundationEssentials
import MemoCore
import Synchronization

/// DNS-SD behind the consent policy: every browse, resolve and registration asks
/// `authorize` first, so no code path reaches the network without a recorded decision. The
/// policy is injected (the CLI passes one built on the consent log and the manifest);
/// tests pass their own.
///
/// Browsing and resolving go through one `AvahiSession` (avahi-daemon's D-Bus API, one
/// connection for the whole pipeline), opened at the first use the policy allows;
/// registering goes through the dns_sd wrapper.
public struct GatedDiscovery: Sendable {
  /// Throws NoAuth, PolicyDenied or consent-required when a use is not allowed.
  public let authorize: @Sendable (LocalNetworkUse) throws -> Void
  private let avahi: AvahiSessionSlot

  public init(busAddress: String? = nil, authorize: @escaping @Sendable (LocalNetworkUse) throws -> Void) {
    self.authorize = authorize
    avahi = AvahiSessionSlot(busAddress: busAddress)
  }

  public func browse(type: String, interfaceIndex: UInt32 = 0) throws -> AsyncThrowingStream<BrowseEvent, any Error> {
    try authorize(type == LocalNetworkManifest.allTypesQuery ? .browseAllTypes : .browse(serviceType: type))
    return try avahi.session().browse(type: type, interfaceIndex: interfaceIndex)
  }

  public func register(
    name: String, type: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32 = 0
  ) async throws -> DNSServiceRegistration {
    try authorize(.advertise(serviceType: type))
    return try await DNSSD.register(name: name, type: type, port: port, txt: txt, interfaceIndex: interfaceIndex)
  }

  /// Resolving answers instances that a gated browse returned; it is still checked, so a
  /// stale instance cannot be resolved after consent is withdrawn. The answer includes the
  /// instance's addresses.
  public func resolve(_ instance: ServiceInstance) async throws -> ResolvedService {
    try authorize(.browse(serviceType: Self.bareType(instance.type)))
    return try await avahi.session().resolve(instance)
  }

  /// `_memo-peer._tcp.` (as browsing reports it) to `_memo-peer._tcp` (as declared).
  static func bareType(_ type: String) -> String { type.hasSuffix(".") ? String(type.dropLast()) : type }
}

/// The session a `GatedDiscovery` shares between its browse and its resolves, opened on
/// first use (never before `authorize` has allowed one) and retried if opening failed.
final class AvahiSessionSlot: Sendable {
  private let busAddress: String?
  private let opened = Mutex<AvahiSession?>(nil)

  init(busAddress: String?) { self.busAddress = busAddress }

  func session() throws -> AvahiSession {
    try opened.withLock { opened in
      if let opened { return opened }
      let session = try AvahiSession(busAddress: busAddress)
      opened = session
      return session
    }
  }
}
