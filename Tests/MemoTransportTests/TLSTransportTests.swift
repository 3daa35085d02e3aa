import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoTransport

final class TLSTransportTests: XCTestCase {
  func testDeviceIDIsTheHashOfThePublicKeyAndStableForASeed() throws {
    let seed = try SecureBytes.random(count: 32)
    let first = try DeviceIdentity(seed: seed)
    let again = try DeviceIdentity(seed: seed)
    let other = try Fixture.identity()
    XCTAssertEqual(first.deviceID, again.deviceID)
    XCTAssertNotEqual(first.deviceID, other.deviceID)
    XCTAssertEqual(first.deviceID.bytes, try SHA256.hash(first.publicKey))
    XCTAssertTrue(try first.certificatePEM().hasPrefix("-----BEGIN CERTIFICATE-----"))
  }

  /// The key TLS presents is the signing key (one copy of the secret): its signatures
  /// verify under the key in the certificate, and an identity made from the key object is
  /// the same device.
  func testTheTLSKeyIsTheSigningKey() throws {
    let identity = try DeviceIdentity(seed: try SecureBytes.random(count: 32))
    XCTAssertEqual(identity.signingKey.publicKey, identity.publicKey)
    XCTAssertEqual(try DeviceIdentity.deviceID(ofCertificate: identity.certificate), identity.deviceID)
    let message = Array("memo-peer/3 replica\0binding".utf8)
    let signature = try identity.signingKey.signature(for: message)
    XCTAssertTrue(Ed25519.verify(signature, message: message, publicKey: identity.publicKey))
    XCTAssertEqual(try DeviceIdentity(signingKey: identity.signingKey).deviceID, identity.deviceID)
  }

  func testTrustedPeersConnectBothWaysAuthenticatedAndAgreeOnTheExporter() throws {
    let serverIdentity = try Fixture.identity()
    let clientIdentity = try Fixture.identity()
    let exported = Recorder<[UInt8]>()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: serverIdentity, role: .server),
      accepts: { $0 == clientIdentity.deviceID }, events: { _ in },
      handler: { connection in
        if let bytes = try? connection.exportKeyingMaterial(label: PairingProtocol.exporterLabel, length: 32) {
          exported.append(bytes)
        }
        while let frame = try? connection.receive() {
          try? connection.send(Frame(.pong, payload: frame.payload))
        }
      })
    defer { server.stop() }
    let connection = try Fixture.client(clientIdentity).connect(
      host: "127.0.0.1", port: server.port, accepts: { $0 == serverIdentity.deviceID })
    XCTAssertEqual(connection.peer, serverIdentity.deviceID)
    try connection.send(Frame(.ping, payload: Array("hello".utf8)))
    XCTAssertEqual(try connection.receive(), Frame(.pong, payload: Array("hello".utf8)))
    let mine = try connection.exportKeyingMaterial(label: PairingProtocol.exporterLabel, length: 32)
    XCTAssertTrue(exported.wait { !$0.isEmpty })
    XCTAssertEqual(exported.all.first, mine)
    XCTAssertNotEqual(mine, [UInt8](repeating: 0, count: 32))
  }

  /// Pairing connections agree on `memo-peer-pair/2`; a side still on pairing version 1 (which
  /// speaks only `memo-peer/1`) completes the handshake with `memo-peer/1`, so the new side can
  /// tell it to update.
  func testPairingContextsNegotiateTheirOwnProtocolAndRecogniseAnOlderPeer() throws {
    let hostIdentity = try Fixture.identity()
    let guestIdentity = try Fixture.identity()
    for (serverPurpose, clientPurpose, expected) in [
      (TLSContext.Purpose.pairing, TLSContext.Purpose.pairing, PairingProtocol.alpn),
      (.pairing, .trusted, TLSContext.alpn), (.trusted, .pairing, TLSContext.alpn),
      (.trusted, .trusted, TLSContext.alpn),
    ] {
      let seen = Recorder<String>()
      let server = try TLSServer(
        port: 0, loopbackOnly: true, context: TLSContext(identity: hostIdentity, role: .server, purpose: serverPurpose),
        accepts: { _ in true }, events: { _ in },
        handler: { connection in seen.append(connection.negotiatedProtocol ?? "none") })
      defer { server.stop() }
      let client = TLSClient(context: try TLSContext(identity: guestIdentity, role: .client, purpose: clientPurpose))
      let connection = try client.connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
      XCTAssertEqual(connection.negotiatedProtocol, expected, "\(serverPurpose) server, \(clientPurpose) client")
      XCTAssertTrue(seen.wait { $0 == [expected] }, "\(seen.all)")
    }
  }

  func testAnUntrustedClientFailsTheHandshakeAndTheServerKeepsServing() throws {
    let serverIdentity = try Fixture.identity()
    let trusted = try Fixture.identity()
    let stranger = try Fixture.identity()
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [trusted.deviceID])
    defer { server.stop() }
    // In TLS 1.3 the client's side of the handshake ends before the server has checked its
    // certificate; the refusal arrives as an alert on its first read.
    let refused = try? Fixture.client(stranger).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try? refused?.send(Frame(.ping))
    XCTAssertNil(try? refused?.receive(), "a stranger gets no answer")
    XCTAssertTrue(events.wait { $0.contains("refused untrusted-peer") }, "\(events.all)")
    let good = try Fixture.client(trusted).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try good.send(Frame(.ping))
    XCTAssertEqual(try good.receive()?.kind, .pong)
  }

  func testAClientRefusesAServerWhoseKeyIsNotTheOnePinned() throws {
    let impostor = try Fixture.identity()
    let client = try Fixture.identity()
    let expected = try Fixture.identity()
    let (server, _) = try Fixture.echoServer(identity: impostor, trusted: [client.deviceID])
    defer { server.stop() }
    let tls = try Fixture.client(client)
    do throws(TransportError) {
      _ = try tls.connect(host: "127.0.0.1", port: server.port, accepts: { $0 == expected.deviceID })
      XCTFail("connected to an impostor")
    } catch {
      XCTAssertEqual(error.kind, .untrustedPeer)
      XCTAssertEqual(error.presented, impostor.deviceID, "the error names the key that was presented")
    }
    // Dialling a device's addresses stops at the wrong key: its other addresses are it too.
    do throws(TransportError) {
      _ = try tls.connect(
        toFirstOf: ["127.0.0.1", "127.0.0.1"], port: server.port, accepts: { $0 == expected.deviceID })
      XCTFail("connected to an impostor")
    } catch {
      XCTAssertEqual(error.kind, .untrustedPeer)
      XCTAssertEqual(error.presented, impostor.deviceID)
    }
  }

  func testGarbageBytesCloseOnlyThatConnection() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    let raw = try Fixture.rawSocket(port: server.port)
    defer { close(raw) }
    let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8) + [UInt8](repeating: 0xFF, count: 64)
    _ = garbage.withUnsafeBufferPointer { write(raw, $0.baseAddress, $0.count) }
    XCTAssertTrue(events.wait { $0.contains("refused handshake-failed") }, "\(events.all)")
    let good = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try good.send(Frame(.ping))
    XCTAssertEqual(try good.receive()?.kind, .pong)
  }

  /// Out of descriptors, accept(2) fails while the connection waits in the backlog and
  /// poll reports it again at once: the loop waits a tenth of a second per try instead of
  /// spinning a core (it did, hundreds of thousands of tries a second), says so once, and
  /// serves again once a descriptor is free.
  func testNoFreeDescriptorMakesTheAcceptLoopWaitNotSpin() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    let waiting = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    XCTAssertGreaterThanOrEqual(waiting, 0)
    defer { close(waiting) }
    var saved = rlimit()
    XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
    // The soft limit at the lowest descriptor still free: nothing new opens in this process.
    let free = open("/dev/null", O_RDONLY)
    XCTAssertGreaterThanOrEqual(free, 0)
    close(free)
    var exhausted = saved
    exhausted.rlim_cur = rlim_t(free)
    XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &exhausted), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = server.port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(waiting, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    Thread.sleep(forTimeInterval: 1)
    let waits = server.shortageWaits
    XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
    XCTAssertEqual(connected, 0, "the kernel completes the handshake into the backlog")
    XCTAssertGreaterThanOrEqual(waits, 1, "accept failed for want of a descriptor")
    XCTAssertLessThanOrEqual(waits, 30, "a wait per try, not a spin: \(waits) tries in a second")
    XCTAssertTrue(events.wait { $0.contains("refused too-many-connections") }, "said once: \(events.all)")
    let good = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try good.send(Frame(.ping))
    XCTAssertEqual(try good.receive()?.kind, .pong, "served again once descriptors are free")
  }

  func testASlowClientTimesOutInItsHandshakeWhileOthersAreServed() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    var limits = ConnectionLimits()
    limits.handshakeSeconds = 0.5
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID], limits: limits)
    defer { server.stop() }
    let silent = try Fixture.rawSocket(port: server.port)
    defer { close(silent) }
    let good = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try good.send(Frame(.ping))
    XCTAssertEqual(try good.receive()?.kind, .pong, "served while the slow client hangs")
    XCTAssertTrue(events.wait { $0.contains("refused handshake-timeout") }, "\(events.all)")
  }

  func testOversizedUnknownAndTruncatedFramesCloseTheConnection() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    var limits = ConnectionLimits()
    limits.maximumPayload = 1024
    limits.frameSeconds = 1
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID], limits: limits)
    defer { server.stop() }
    let cases: [(bytes: [UInt8], closeAfter: Bool)] = [
      ([1, Frame.Kind.ping.rawValue, 0, 0, 0x10, 0], false),  // 4096 bytes announced, maximum 1024
      ([1, 99, 0, 0, 0, 0], false),  // unknown type
      ([2, Frame.Kind.ping.rawValue, 0, 0, 0, 0], false),  // unknown version
      ([1, Frame.Kind.ping.rawValue, 0, 0, 0, 100] + [UInt8](repeating: 7, count: 10), true),  // truncated
    ]
    for (index, item) in cases.enumerated() {
      let connection = try Fixture.client(client).connect(
        host: "127.0.0.1", port: server.port, accepts: { _ in true })
      try connection.sendRaw(item.bytes)
      if item.closeAfter { connection.shutdown() }
      XCTAssertTrue(
        events.wait { $0.filter { $0 == "handler protocol-violation" }.count == index + 1 },
        "case \(index): \(events.all)")
    }
    let good = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try good.send(Frame(.ping))
    XCTAssertEqual(try good.receive()?.kind, .pong)
  }

  /// Authenticated connections over the cap are closed once their key is verified (never an
  /// established one): the first keeps working.
  func testAuthenticatedConnectionsOverTheCapAreClosed() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, events) = try Fixture.echoServer(
      identity: serverIdentity, trusted: [client.deviceID], maximumConnections: 1)
    defer { server.stop() }
    let first = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try first.send(Frame(.ping))
    XCTAssertEqual(try first.receive()?.kind, .pong)
    // In TLS 1.3 the client's handshake may end before the server closes it.
    let second = try? Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    if let second {
      let answer = try? { () throws -> Frame? in
        try second.send(Frame(.ping))
        return try second.receive()
      }()
      XCTAssertNil(answer ?? nil, "the second gets no answer")
    }
    XCTAssertTrue(events.wait { $0.contains("refused too-many-connections") }, "\(events.all)")
    try first.send(Frame(.ping))
    XCTAssertEqual(try first.receive()?.kind, .pong)
  }

  /// Strangers that open TCP connections and never speak TLS take only their own budget:
  /// 4 from one address (the oldest dropped for a newer one), closed after the pre-auth
  /// deadline; a trusted device connecting meanwhile gets in and is answered.
  func testIdleStrangersCannotTakeTheSlotsOfTrustedDevices() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let recorder = Recorder<String>()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: serverIdentity, role: .server),
      maximumConnections: 2, budget: ConnectionBudget.Limits(perSource: 4, unauthenticated: 8), preAuthSeconds: 1,
      accepts: { $0 == client.deviceID },
      events: { event in
        if case .refused(let error, _) = event { recorder.append(error.kind.rawValue) }
      },
      handler: { connection in
        while let frame = try? connection.receive() { try? connection.send(Frame(.pong, payload: frame.payload)) }
      })
    defer { server.stop() }
    var strangers: [Int32] = []
    defer { for fd in strangers { close(fd) } }
    for _ in 0..<20 { strangers.append(try Fixture.rawSocket(port: server.port)) }
    XCTAssertTrue(recorder.wait { $0.filter { $0 == "too-many-connections" }.count >= 16 }, "\(recorder.all)")
    XCTAssertLessThanOrEqual(server.connectionCounts.unauthenticated, 4)
    let trusted = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try trusted.send(Frame(.ping, payload: [1]))
    XCTAssertEqual(try trusted.receive(), Frame(.pong, payload: [1]))
    XCTAssertEqual(server.connectionCounts.authenticated, 1)
    // The strangers still connected are closed when their deadline passes.
    XCTAssertTrue(recorder.wait { $0.contains("handshake-timeout") }, "\(recorder.all)")
    XCTAssertTrue(AuditScenario.waitUntil(seconds: 5) { server.connectionCounts.unauthenticated == 0 })
    try trusted.send(Frame(.ping, payload: [2]))
    XCTAssertEqual(try trusted.receive(), Frame(.pong, payload: [2]), "the trusted connection is never dropped")
  }

  /// A peer that closes TCP without TLS close_notify: between frames that is the end of the
  /// stream (not a TLS failure); inside a frame, a protocol violation.
  func testAPeerClosingWithoutCloseNotifyIsReportedAsWhatItIs() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    for halfAFrame in [false, true] {
      let server = try TLSServer(
        port: 0, loopbackOnly: true, context: TLSContext(identity: serverIdentity, role: .server),
        accepts: { _ in true }, events: { _ in },
        handler: { connection in
          _ = try? connection.receive()
          if halfAFrame { try? connection.sendRaw([1, UInt8(Frame.Kind.pong.rawValue), 0, 0, 0, 10, 1, 2]) }
          // No SSL_shutdown: the TCP connection just ends.
          _ = Glibc.shutdown(connection.fd, Int32(SHUT_RDWR))
        })
      defer { server.stop() }
      let connection = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
      try connection.send(Frame(.ping))
      if halfAFrame {
        XCTAssertThrowsError(try connection.receive()) { error in
          XCTAssertEqual((error as? TransportError)?.kind, .protocolViolation, "\(error)")
        }
      } else {
        XCTAssertNil(try connection.receive(), "a close between frames")
      }
    }
  }

  func testClosingAPeersConnectionsEndsTheLiveOneAtOnce() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    let (server, events) = try Fixture.echoServer(identity: serverIdentity, trusted: [client.deviceID])
    defer { server.stop() }
    let connection = try Fixture.client(client).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    try connection.send(Frame(.ping))
    XCTAssertEqual(try connection.receive()?.kind, .pong)
    server.closeConnections { $0 == client.deviceID }
    XCTAssertTrue(events.wait { $0.contains("handler interrupted") }, "\(events.all)")
    XCTAssertNil(try? connection.receive(), "the client sees its connection end")
  }
}

/// Production's reader against the machines' one: the same byte stream, written over a real
/// TLS connection in records of every size, read by `TLSConnection.receive`, must give the
/// frames and the error that `FrameDecoder.push` (what every machine test feeds) gives.
final class TLSFramingAgreementTests: XCTestCase {
  static let maximum = 64

  enum Read: Equatable {
    case frame(Frame)
    case error(String)
    case end
  }

  /// The machine tests' reading of `bytes`: frames, then the error or the clean end.
  static func machineReading(_ bytes: [UInt8]) -> [Read] {
    var decoder = FrameDecoder(maximumPayload: maximum)
    var reads: [Read] = []
    do {
      try decoder.push(bytes) { reads.append(.frame($0)) }
      guard let truncated = decoder.truncation else { return reads + [.end] }
      return reads + [.error(TransportError.frame(truncated).description)]
    } catch {
      return reads + [.error(TransportError.frame(error).description)]
    }
  }

  func testTheConnectionFramesAStreamAsTheMachineTestsDo() throws {
    let serverIdentity = try Fixture.identity()
    let client = try Fixture.identity()
    var limits = ConnectionLimits()
    limits.maximumPayload = Self.maximum
    let ping = Frame(.ping, payload: [1, 2, 3]).encoded()
    let full = Frame(.syncBatch, payload: [UInt8](repeating: 9, count: Self.maximum)).encoded()
    let streams: [[UInt8]] = [
      ping + Frame(.pong).encoded() + full,
      ping + Array(full.prefix(20)),
      ping + Array(full.prefix(3)),
      ping + [1, Frame.Kind.ping.rawValue, 0, 0, 0, UInt8(Self.maximum + 1)],
      ping + [1, 0xEE, 0, 0, 0, 0],
      [2, Frame.Kind.ping.rawValue, 0, 0, 0, 0],
    ]
    let plan = Recorder<(bytes: [UInt8], piece: Int)>()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: serverIdentity, role: .server), limits: limits,
      accepts: { _ in true }, events: { _ in },
      handler: { connection in
        // The client's ping says which stream: then it goes out in records of `piece` bytes.
        guard let asked = try? connection.receive(), let index = asked.payload.first else { return }
        let (bytes, piece) = plan.all[Int(index)]
        var offset = 0
        while offset < bytes.count {
          let end = min(offset + piece, bytes.count)
          try? connection.sendRaw(Array(bytes[offset..<end]))
          offset = end
        }
        connection.shutdown()
      })
    defer { server.stop() }
    for bytes in streams {
      for piece in [1, 2, 5, 6, 7, 13, bytes.count] {
        plan.append((bytes, piece))
        let connection = try Fixture.client(client, limits: limits).connect(
          host: "127.0.0.1", port: server.port, accepts: { _ in true })
        try connection.send(Frame(.ping, payload: [UInt8(plan.all.count - 1)]))
        var reads: [Read] = []
        while true {
          do {
            guard let frame = try connection.receive() else {
              reads.append(.end)
              break
            }
            reads.append(.frame(frame))
          } catch {
            reads.append(.error(error.description))
            break
          }
        }
        XCTAssertEqual(reads, Self.machineReading(bytes), "\(bytes.count) bytes in records of \(piece)")
      }
    }
  }
}
