internal import CDNSSD
import Foundation
import MemoCore

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

/// What resolving an instance gives: where it runs, its TXT record and, from
/// `AvahiSession`, its addresses.
public struct ResolvedService: Sendable, Equatable {
  public let instance: ServiceInstance
  public let hostTarget: String
  public let port: UInt16
  public let txt: [String: String]
  /// One address per IP family that answered, IPv4 first (`AvahiSession.resolve`). Empty
  /// from `DNSSD.resolve`, whose callers look addresses up with `DNSSD.addresses`.
  public var addresses: [String] = []
}

/// Async Swift over dns_sd.h (Avahi's compatibility library). Every operation owns and
/// frees its DNSServiceRef; none of them checks consent — use `GatedDiscovery`, which
/// registers through here but browses and resolves through `AvahiSession` (one D-Bus
/// connection instead of one per DNSServiceRef; see there for the measurements).
public enum DNSSD {
  /// Avahi's compatibility library warns on stderr and syslog at its first call unless
  /// AVAHI_COMPAT_NOWARN is set; every entry point makes sure it is.
  private static let quietCompatibilityWarning: Void = { setenv("AVAHI_COMPAT_NOWARN", "1", 1) }()

  /// Browses for `type`; the stream ends when the caller stops iterating or on failure.
  public static func browse(type: String, interfaceIndex: UInt32 = 0) -> AsyncThrowingStream<BrowseEvent, any Error> {
    quietCompatibilityWarning
    return AsyncThrowingStream { continuation in
      let owner = ServiceRefOwner(label: "browse")
      let context = BrowseContext { continuation.yield($0) }
      do {
        try owner.start(context: context, onFailure: { continuation.finish(throwing: $0.memoPeerError) }) { ref in
          DNSServiceBrowse(
            ref, 0, interfaceIndex, type, nil, browseReply, Unmanaged.passUnretained(context).toOpaque())
        }
      } catch {
        continuation.finish(throwing: error.memoPeerError)
        return
      }
      continuation.onTermination = { _ in owner.cancel() }
    }
  }

  /// Resolves an instance to host, port and TXT record.
  public static func resolve(_ instance: ServiceInstance, timeout: Duration = .seconds(5)) async throws
    -> ResolvedService
  {
    try await oneShot(label: "resolve", timeout: timeout) { owner, once in
      let context = ResolveContext(instance: instance, once: once)
      try owner.start(context: context, onFailure: { once.finish(.failure($0.memoPeerError)) }) { ref in
        DNSServiceResolve(
          ref, 0, instance.interfaceIndex, instance.name, instance.type, instance.domain, resolveReply,
          Unmanaged.passUnretained(context).toOpaque())
      }
    }
  }

  /// The host's IPv4 and IPv6 addresses through DNSServiceQueryRecord (A and AAAA; Avahi has
  /// no DNSServiceGetAddrInfo). Collects answers for `window` after the first one.
  public static func addresses(
    host: String, interfaceIndex: UInt32, timeout: Duration = .seconds(3), window: Duration = .milliseconds(150)
  ) async throws -> [String] {
    let second = ServiceRefOwner(label: "query-aaaa")
    defer { second.cancel() }
    return try await oneShot(label: "query", timeout: timeout) { first, once in
      let collector = AddressCollector(interfaceIndex: interfaceIndex, once: once, window: window, queue: first.queue)
      collector.keepAlive(first)
      collector.keepAlive(second)
      for (owner, type) in [(first, kDNSServiceType_A), (second, kDNSServiceType_AAAA)] {
        try owner.start(context: collector, onFailure: { once.finish(.failure($0.memoPeerError)) }) { ref in
          DNSServiceQueryRecord(
            ref, 0, interfaceIndex, host, UInt16(type), UInt16(kDNSServiceClass_IN), queryReply,
            Unmanaged.passUnretained(collector).toOpaque())
        }
      }
    }
  }

  /// Registers a service; returns once the daemon confirms, with the name actually used.
  public static func register(
    name: String, type: String, port: UInt16, txt: [String: String], interfaceIndex: UInt32 = 0,
    timeout: Duration = .seconds(5)
  ) async throws -> DNSServiceRegistration {
    quietCompatibilityWarning
    let owner = ServiceRefOwner(label: "register")
    let record = try TXTRecordBytes.encode(txt)
    let registeredName: String = try await withCheckedThrowingContinuation { continuation in
      let once = OnceBox<String> { continuation.resume(with: $0) }
      let context = RegisterContext(once: once)
      do {
        try owner.start(context: context, onFailure: { once.finish(.failure($0.memoPeerError)) }) { ref in
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
    return DNSServiceRegistration(name: registeredName, type: type, interfaceIndex: interfaceIndex, owner: owner)
  }

  /// Starts a one-shot operation and waits for its single result or the timeout; the
  /// operation is cancelled either way.
  private static func oneShot<T: Sendable>(
    label: String, timeout: Duration, _ start: (ServiceRefOwner, OnceBox<T>) throws -> Void
  ) async throws -> T {
    quietCompatibilityWarning
    let owner = ServiceRefOwner(label: label)
    defer { owner.cancel() }
    return try await withCheckedThrowingContinuation { continuation in
      let once = OnceBox<T> { continuation.resume(with: $0) }
      do { try start(owner, once) } catch { once.finish(.failure(error.memoPeerError)) }
      owner.queue.asyncAfter(deadline: .now() + timeout.seconds) {
        once.finish(.failure(MemoPeerError(.discovery, "no answer from the network within \(timeout.seconds) s")))
      }
    }
  }
}

/// A live registration. The advertisement stays until `cancel()` (or deinit).
public final class DNSServiceRegistration: Sendable {
  public let name: String
  public let type: String
  public let interfaceIndex: UInt32
  private let owner: ServiceRefOwner

  init(name: String, type: String, interfaceIndex: UInt32, owner: ServiceRefOwner) {
    self.name = name
    self.type = type
    self.interfaceIndex = interfaceIndex
    self.owner = owner
  }

  /// Withdraws the advertisement (the daemon sends goodbye packets) and waits until the
  /// daemon has been told.
  public func withdraw() { owner.cancelAndWait(timeout: 2) }
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
      .discovery, "DNS-SD failed: \(description)", hint: "run `memo-peer doctor`", dnsServiceCode: code)
  }
}
