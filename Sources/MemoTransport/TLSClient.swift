import MemoCore

/// Opens connections to peers: TCP with a deadline, then the TLS handshake, accepting only
/// the keys `accepts` allows (one pinned device, or anyone while pairing).
public struct TLSClient: Sendable {
  public let context: TLSContext
  public let limits: ConnectionLimits

  public init(context: TLSContext, limits: ConnectionLimits = ConnectionLimits()) {
    self.context = context
    self.limits = limits
  }

  public func connect(
    host: String, port: UInt16, interfaceIndex: UInt32 = 0, accepts: @escaping @Sendable (DeviceID) -> Bool
  ) throws(TransportError) -> TLSConnection {
    let deadline = Deadline.after(seconds: limits.handshakeSeconds)
    let fd = try Sockets.connect(host: host, port: port, interfaceIndex: interfaceIndex, deadline: deadline)
    let connection = try TLSConnection(
      fd: fd, context: context, limits: limits, remoteAddress: host, accepts: accepts)
    try connection.handshake(deadline: deadline)
    return connection
  }
}
