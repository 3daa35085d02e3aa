internal import CDNSSD

/// A dns_sd.h error code, typed. The discovery issue builds register/browse/resolve on it;
/// it exists now so every later layer shares one mapping and one set of names.
public struct DNSServiceError: Error, Equatable, Sendable, CustomStringConvertible {
  public let code: Int32

  public init(code: Int32) { self.code = code }

  /// Apple's kDNSServiceErr_PolicyDenied. Avahi's header predates it, so it is defined
  /// here: a use of the local network that the user has denied.
  public static let policyDeniedCode: Int32 = -65570
  /// Apple's kDNSServiceErr_ServiceNotRunning, also missing from Avahi's header: no daemon.
  public static let serviceNotRunningCode: Int32 = -65563

  public static let noAuth = DNSServiceError(code: Int32(kDNSServiceErr_NoAuth))
  public static let policyDenied = DNSServiceError(code: policyDeniedCode)
  public static let serviceNotRunning = DNSServiceError(code: serviceNotRunningCode)
  public static let unsupported = DNSServiceError(code: Int32(kDNSServiceErr_Unsupported))

  private static let names: [Int32: String] = [
    Int32(kDNSServiceErr_NoError): "NoError", Int32(kDNSServiceErr_Unknown): "Unknown",
    Int32(kDNSServiceErr_NoSuchName): "NoSuchName", Int32(kDNSServiceErr_NoMemory): "NoMemory",
    Int32(kDNSServiceErr_BadParam): "BadParam", Int32(kDNSServiceErr_BadReference): "BadReference",
    Int32(kDNSServiceErr_BadState): "BadState", Int32(kDNSServiceErr_BadFlags): "BadFlags",
    Int32(kDNSServiceErr_Unsupported): "Unsupported", Int32(kDNSServiceErr_NotInitialized): "NotInitialized",
    Int32(kDNSServiceErr_AlreadyRegistered): "AlreadyRegistered",
    Int32(kDNSServiceErr_NameConflict): "NameConflict", Int32(kDNSServiceErr_Invalid): "Invalid",
    Int32(kDNSServiceErr_Incompatible): "Incompatible",
    Int32(kDNSServiceErr_BadInterfaceIndex): "BadInterfaceIndex", Int32(kDNSServiceErr_Refused): "Refused",
    Int32(kDNSServiceErr_NoSuchRecord): "NoSuchRecord", Int32(kDNSServiceErr_NoAuth): "NoAuth",
    Int32(kDNSServiceErr_NoSuchKey): "NoSuchKey", serviceNotRunningCode: "ServiceNotRunning",
    policyDeniedCode: "PolicyDenied",
  ]

  /// The symbolic name from dns_sd.h, for logs and messages.
  public var name: String { Self.names[code] ?? "Error(\(code))" }

  public var description: String { "\(name) (\(code))" }
}
