import MemoCore
import MemoProtocol

/// Opens connections to peers: TCP with a deadline, then the TLS handshake, accepting only
/// the keys `accepts` allows (one pinned device, or anyone while pairing).
///
/// Blocking: every call waits in poll(2) until the connection is up or the deadline passes.
/// Callers in async code run it on a thread of its own (MemoNode's `BlockingIO`), never on
/// Swift's cooperative pool.
public struct TLSClient: Sendable {
  public let context: TLSContext
  public let limits: ConnectionLimits

  public init(context: TLSContext, limits: ConnectionLimits = ConnectionLimits()) {
    self.context = context
    self.limits = limits
  }

  /// Connects to one numeric address. The TCP connect and the whole handshake end by
  /// `deadline` or the handshake limit, whichever comes first.
  public func connect(
    host: String, port: UInt16, interfaceIndex: UInt32 = 0, deadline: Deadline? = nil,
    accepts: @escaping @Sendable (DeviceID) -> Bool
  ) throws(TransportError) -> TLSConnection {
    let deadline = effectiveDeadline(deadline)
    let fd = try Sockets.connect(host: host, port: port, interfaceIndex: interfaceIndex, deadline: deadline)
    let connection = try TLSConnection(
      fd: fd, context: context, limits: limits, remoteAddress: host, accepts: accepts)
    try connection.handshake(deadline: deadline)
    return connection
  }

  /// Connects to the first of a device's addresses that answers, IPv4 before IPv6 (the
  /// one way every caller dials a device it saw advertised). A device that presents a key
  /// `accepts` refuses ends the attempt at once (its other addresses are the same device);
  /// otherwise the last address's error is thrown.
  public func connect(
    toFirstOf addresses: [String], port: UInt16, interfaceIndex: UInt32 = 0, deadline: Deadline? = nil,
    accepts: @escaping @Sendable (DeviceID) -> Bool
  ) throws(TransportError) -> TLSConnection {
    let deadline = effectiveDeadline(deadline)
    var lastError = TransportError(.connectFailed, "the device advertised no address")
    for address in Self.dialOrder(addresses) {
      do throws(TransportError) {
        return try connect(
          host: address, port: port, interfaceIndex: interfaceIndex, deadline: deadline, accepts: accepts)
      } catch {
        if error.kind == .untrustedPeer { throw error }
        lastError = error
        if deadline.hasPassed { break }
      }
    }
    throw lastError
  }

  /// The numeric addresses a DNS name a person gave stands for, in dial order. Blocking,
  /// as long as the system resolver takes.
  public static func addresses(of name: String) throws(TransportError) -> [String] {
    try Sockets.resolve(name: name)
  }

  /// IPv4 addresses first (link-local IPv6 needs its scope and is tried last), each family
  /// in the order advertised.
  public static func dialOrder(_ addresses: [String]) -> [String] {
    addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") }
  }

  private func effectiveDeadline(_ deadline: Deadline?) -> Deadline {
    let limit = Deadline.after(seconds: limits.handshakeSeconds)
    return deadline.map { Swift.min($0, limit) } ?? limit
  }
}
