import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoTransport

/// Two or more identities and a loopback server, for transport tests in the root
/// namespace (127.0.0.1 only: nothing reaches the real network).
enum Fixture {
  static func identity() throws -> DeviceIdentity { try DeviceIdentity(seed: SecureBytes.random(count: 32)) }

  /// A server that trusts `trusted` and echoes pings; every event and handler error is recorded.
  static func echoServer(
    identity: DeviceIdentity, trusted: Set<DeviceID>, limits: ConnectionLimits = ConnectionLimits(),
    maximumConnections: Int = 8
  ) throws -> (TLSServer, Recorder<String>) {
    let recorder = Recorder<String>()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: identity, role: .server), limits: limits,
      maximumConnections: maximumConnections, accepts: { trusted.contains($0) },
      events: { event in
        switch event {
        case .accepted(let id, _): recorder.append("accepted \(id.short)")
        case .refused(let error, _): recorder.append("refused \(error.kind.rawValue)")
        }
      },
      handler: { connection in
        do throws(TransportError) {
          while let frame = try connection.receive() {
            if frame.kind == .ping { try connection.send(Frame(.pong, payload: frame.payload)) }
          }
          recorder.append("ended cleanly")
        } catch {
          recorder.append("handler \(error.kind.rawValue)")
        }
      })
    return (server, recorder)
  }

  static func client(_ identity: DeviceIdentity, limits: ConnectionLimits = ConnectionLimits()) throws -> TLSClient {
    TLSClient(context: try TLSContext(identity: identity, role: .client), limits: limits)
  }

  /// Connects a raw TCP socket (no TLS) to the loopback server.
  static func rawSocket(port: UInt16) throws -> Int32 {
    try Sockets.connect(host: "127.0.0.1", port: port, interfaceIndex: 0, deadline: .after(seconds: 5))
  }
}
