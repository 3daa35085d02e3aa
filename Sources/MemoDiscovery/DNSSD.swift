internal import CDNSSD
import Dispatch
import FoundationEssentials
import MemoCore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// One advertised service instance, as browsing reports it. The interface index is kept:
/// IPv6 link-local addresses are meaningless without it.
public struct ServiceInstance: Hashable, Sendable {
  public let name: String
  public let type: String
  public let domain: String
  public let interfaceIndex: UInt32

  public init(name: String, type: String, domain: String, interfaceIndex: UInt32) {
    self.name = name
    self.type = type
    self.domain = domain
    self.interfaceIndex = interfaceIndex
  }
}

/// An instance appearing or leaving.
public enum BrowseEvent: Sendable, Equatable {
  case added(ServiceInstance)
  case removed(ServiceInstance)
}

/// What resolving an instance gives (`AvahiSession.resolve`): where it runs, its TXT record
/// and its addresses.
public struct ResolvedService: Sendable, Equatable {
  public let instance: ServiceInstance
  public let hostTarget: String
  public let port: UInt16
  public let txt: [String: String]
  /// One address per IP family that answered, IPv4 first.
  public var addresses: [String] = []
}

/// Registration over dns_sd.h (Avahi's compatibility library): the only use of dns_sd left.
/// Browsing and resolving go through `AvahiSession` (one D-Bus connection instead of one
/// per DNSServiceRef; see there for the measurements). Nothing here checks consent — use
/// `GatedDiscovery`.
public enum DNSSD {
  /// Avahi's compatibility library warns on stderr and syslog at its first call unless
  /// AVAHI_COMPAT_NOWARN is set: the one place that sets it, before the first call.
  private static let quietCompatibilityWarning: Void = { setenv("AVAHI_COMPAT_NOWARN", "1", 1) }()

  /// Registers a service; returns once the daemon confirms, with the name actually used.
  public static func register(
    name: String, type: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32 = 0,
    timeout: Duration = .seconds(5)
  ) async throws -> DNSServiceRegistration {
    // Avahi's dns_sd is loaded by the first registration (CLazyLibraries), not at every start.
    do { try LazyLibrary.dnsSD.load() } catch { throw MemoPeerError(.io, error.message, hint: error.hint) }
    quietCompatibilityWarning
    let owner = ServiceRefOwner(label: "register")
    let record = try TXTRecordBytes.encode(txt)
    let health = RegistrationHealth()
    let registeredName: String = try await withCheckedThrowingContinuation { continuation in
      let once = OnceBox<String> { continuation.resume(with: $0) }
      let context = RegisterContext(once: once, health: health)
      do {
        let failed: @Sendable (DNSServiceError) -> Void = { failure in
          health.failed(after: once)
          once.finish(.failure(failure.memoPeerError))
        }
        try owner.start(context: context, onFailure: failed) { ref in
          record.withUnsafeBytes { bytes in
            DNSServiceRegister(
              ref, 0, interfaceIndex, name, type, nil, nil, port.bigEndian, UInt16(bytes.count), bytes.baseAddress,
              registerReply, Unmanaged.passUnretained(context).toOpaque())
          }
        }
      } catch {
        once.finish(.failure(error.memoPeerError))
      }
      owner.queue.asyncAfter(deadline: .now() + timeout.seconds) {
        once.finish(.failure(MemoPeerError(.discovery, "the mDNS daemon did not confirm the registration in time")))
      }
    }
    return DNSServiceRegistration(
      name: registeredName, type: type, interfaceIndex: interfaceIndex, owner: owner, health: health)
  }

}

/// A live registration. The advertisement stays until `cancel()` (or deinit).
public final class DNSServiceRegistration: Sendable {
  public let name: String
  public let type: String
  public let interfaceIndex: UInt32
  private let owner: ServiceRefOwner
  private let health: RegistrationHealth

  init(name: String, type: String, interfaceIndex: UInt32, owner: ServiceRefOwner, health: RegistrationHealth) {
    self.name = name
    self.type = type
    self.interfaceIndex = interfaceIndex
    self.owner = owner
    self.health = health
  }

  /// True once the mDNS daemon dropped the advertisement after confirming it (it stopped or
  /// restarted): nobody can see it any more, and it must be registered again.
  public var isLost: Bool { health.isLost }

  /// Withdraws the advertisement (the daemon sends goodbye packets) and returns once the
  /// daemon has been told (at most 2 s): the caller is suspended, no thread is blocked.
  public func withdraw() async { await owner.cancelAndWait(timeout: 2) }
}

extension Duration {
  var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension Error {
  /// dns_sd failures as user-facing errors; others unchanged.
  var memoPeerError: any Error {
    guard let error = self as? DNSServiceError else { return self }
    return error.memoPeerError
  }
}

extension DNSServiceError {
  /// Avahi's compatibility library reports a missing daemon as Unknown or ServiceNotRunning
  /// when a call starts; both get the message that says how to start it.
  public var memoPeerError: MemoPeerError {
    if code == Int32(kDNSServiceErr_Unknown) || code == Self.serviceNotRunningCode {
      return DaemonUnavailable.error(diagnostics: description, dnsServiceCode: code)
    }
    return MemoPeerError(
      .discovery, "DNS-SD failed: \(description)", remedy: .runDoctor(device: nil), dnsServiceCode: code)
  }
}
