import Dispatch
import FoundationEssentials
import MemoCore
import MemoDBus

/// Browsing and resolving through avahi-daemon's own D-Bus API, over ONE connection.
///
/// Why not the dns_sd wrapper (`DNSSD`), which registration still uses: Avahi's
/// compatibility library opens a new D-Bus connection (and a thread) for every
/// DNSServiceRef, so browse → resolve → A/AAAA paid three connection set-ups in a row, and
/// its browsers and record queries are made with the calls that avahi-daemon 0.8 holds
/// back by about 10 ms each. Why not avahi-client: it makes browsers the same held-back
/// way. Here: one connection, a browser made with `Server2.…Prepare` + `Start` (results
/// from the cache at once), and `ResolveService` for IPv4 and IPv6 together (host, port,
/// TXT and an address each, in one round trip). Measured in bench/README.md.
///
/// Like `DNSSD`, nothing here checks consent — use `GatedDiscovery`. Opening the session
/// talks to the daemon over D-Bus only; the network is touched when browsing starts.
public final class AvahiSession: Sendable {
  private let bus: DispatchedBusConnection

  /// Connects to avahi-daemon's bus (the system bus; `busAddress` for tests). Throws
  /// `daemonUnavailable` when the bus cannot be reached.
  public init(busAddress: String? = nil) throws {
    do {
      bus = try DispatchedBusConnection(busAddress.map { .address($0) } ?? .system)
    } catch {
      throw error.memoPeerError
    }
  }

  /// Browses for `type` (`_services._dns-sd._udp`: for the service types present). Each
  /// instance is reported once per interface, when the first IP transport sees it and when
  /// the last one loses it. The stream ends when the caller stops iterating or on failure
  /// (`daemonUnavailable` when no avahi-daemon owns its name on the bus).
  public func browse(type: String, interfaceIndex: UInt32 = 0) -> AsyncThrowingStream<BrowseEvent, any Error> {
    let kind: AvahiAPI.Browser =
      type == LocalNetworkManifest.allTypesQuery ? .serviceTypes : .services(type: AvahiNames.bare(type))
    let browser = AvahiBrowser(bus: bus, browser: kind, interfaceIndex: interfaceIndex)
    return AsyncThrowingStream { continuation in
      browser.start(
        onEvent: { continuation.yield($0) },
        onFailure: { continuation.finish(throwing: $0.memoPeerError) })
      // The stream keeps the session (and so the connection) open until it ends.
      continuation.onTermination = { _ in withExtendedLifetime(self) { browser.stop() } }
    }
  }

  /// Resolves an instance to host, port, TXT record and its addresses (one per IP family
  /// the daemon answers for; IPv6 link-local ones scoped to the interface).
  public func resolve(
    _ instance: ServiceInstance, timeout: Duration = .seconds(5), window: Duration = .milliseconds(150)
  ) async throws -> ResolvedService {
    let bus = bus
    return try await withCheckedThrowingContinuation { continuation in
      let once = OnceBox<ResolvedService> { continuation.resume(with: $0) }
      AvahiResolve(instance: instance, once: once, window: window, queue: bus.queue).start(on: bus)
      bus.queue.asyncAfter(deadline: .now() + timeout.seconds) {
        once.finish(.failure(MemoPeerError(.discovery, "no answer from the network within \(timeout.seconds) s")))
      }
    }
  }

  deinit { bus.close() }
}
