import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoTransport

/// The caller's deadline reaches the connect and the handshake; one dial routine tries a
/// device's addresses IPv4 first; a stopped server refuses at once; TLSConnection keeps the
/// FrameChannel contract. Loopback only.
final class DeadlineAndDialTests: XCTestCase {
  func testTheCallersDeadlineBoundsTheConnectAndTheHandshake() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, _) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    let tls = try Fixture.client(client)
    // A live server answers within milliseconds: only a deadline that reaches the
    // handshake can make this fail.
    XCTAssertThrowsError(
      try tls.connect(host: "127.0.0.1", port: server.port, deadline: .now(), accepts: { _ in true })
    ) { error in
      XCTAssertTrue(
        [.handshakeTimeout, .connectFailed].contains((error as? TransportError)?.kind), "\(error)")
    }
    let connection = try tls.connect(
      host: "127.0.0.1", port: server.port, deadline: .after(seconds: 10), accepts: { _ in true })
    try connection.send(Frame(.ping))
    XCTAssertEqual(try connection.receive()?.kind, .pong)
  }

  func testAddressesAreDialledIPv4FirstUntilOneAnswers() throws {
    XCTAssertEqual(
      TLSClient.dialOrder(["fe80::1%lab0", "169.254.1.2", "2001:db8::1", "10.0.0.1"]),
      ["169.254.1.2", "10.0.0.1", "fe80::1%lab0", "2001:db8::1"])
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, _) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    // Nothing listens on 127.0.0.2 (the server is bound to 127.0.0.1) nor on ::1.
    let connection = try Fixture.client(client).connect(
      toFirstOf: ["::1", "127.0.0.2", "127.0.0.1"], port: server.port, accepts: { $0 == serverIdentity.deviceID })
    XCTAssertEqual(connection.peer, serverIdentity.deviceID)
    XCTAssertThrowsError(try Fixture.client(client).connect(toFirstOf: [], port: server.port, accepts: { _ in true }))
  }

  func testAStoppedServerRefusesNewConnectionsAtOnce() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, _) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    let port = server.port
    let live = try Fixture.client(client).connect(host: "127.0.0.1", port: port, accepts: { _ in true })
    server.stop()
    XCTAssertThrowsError(try Fixture.rawSocket(port: port)) { error in
      XCTAssertEqual((error as? TransportError)?.kind, .connectFailed, "\(error)")
    }
    XCTAssertNil(try? live.receive(), "and its live connections are closed")
  }

  func testATLSConnectionKeepsTheFrameChannelContract() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, _) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    let channel: any FrameChannel = try Fixture.client(client).connect(
      host: "127.0.0.1", port: server.port, accepts: { _ in true })
    XCTAssertEqual(channel.peer, serverIdentity.deviceID)
    assertTransportErrorKind(.idleTimeout, try channel.receive(before: .after(seconds: 0.05)))
    try channel.send(Frame(.ping, payload: [5]))
    XCTAssertEqual(try channel.receive(before: .after(seconds: 10)), Frame(.pong, payload: [5]))
    let counted = channel.wireBytes
    XCTAssertGreaterThan(counted.sent, 0)
    XCTAssertGreaterThan(counted.received, 0)
    channel.close()
  }
}

func assertTransportErrorKind<T>(
  _ kind: TransportError.Kind, _ expression: @autoclosure () throws -> T, file: StaticString = #filePath,
  line: UInt = #line
) {
  XCTAssertThrowsError(try expression(), file: file, line: line) { error in
    XCTAssertEqual((error as? TransportError)?.kind, kind, "\(error)", file: file, line: line)
  }
}
