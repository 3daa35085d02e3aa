import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoTransport
import MemoVault
import Synchronization
import XCTest

@testable import MemoNode

/// The pairing driver over real TLS on loopback, in process: two honest sides pair; a device
/// in the middle (relaying, or lying about its reveal) gets nothing stored on either side.
final class PairingExchangeTests: XCTestCase {
  var homes: [String] = []

  override func tearDown() {
    for home in homes { try? FileManager.default.removeItem(atPath: home) }
    super.tearDown()
  }

  func node() throws -> (NodeIdentity, TrustStore) {
    let home = try PrivateFiles.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "memo-peer-pairing")
    homes.append(home)
    let paths = NodePaths(
      dataDirectory: home + "/data", keyDirectory: home + "/keys", stateDirectory: home + "/state",
      configDirectory: home + "/config")
    return (try NodeIdentity.load(paths: paths), TrustStore(paths: paths))
  }

  /// Codes each side's person was shown, and the outcome of each side.
  final class Record: Sendable {
    let codes = Mutex<[String]>([])
    let outcome = Mutex<PairingExchange.Outcome?>(nil)
    let done = DispatchSemaphore(value: 0)

    func confirm(_ offer: PairingOffer) -> Bool {
      codes.withLock { $0.append(offer.code) }
      return true
    }

    func finish(_ value: PairingExchange.Outcome) {
      outcome.withLock { $0 = value }
      done.signal()
    }

    func wait() -> PairingExchange.Outcome? {
      guard done.wait(timeout: .now() + 20) == .success else { return nil }
      return outcome.withLock { $0 }
    }
  }

  func hostServer(_ identity: NodeIdentity, _ trust: TrustStore, _ record: Record) throws -> TLSServer {
    try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: identity.device, role: .server, purpose: .pairing),
      limits: PairingExchange.limits, accepts: { _ in true }, events: { _ in },
      handler: { connection in
        record.finish(
          PairingExchange.run(
            connection, role: .host, identity: identity, displayName: "ay", peerName: nil, trust: trust,
            now: { 1 }, confirm: record.confirm))
      })
  }

  func guest(_ identity: NodeIdentity, _ trust: TrustStore, port: UInt16, _ record: Record) throws
    -> PairingExchange.Outcome
  {
    let client = TLSClient(
      context: try TLSContext(identity: identity.device, role: .client, purpose: .pairing),
      limits: PairingExchange.limits)
    let connection = try client.connect(host: "127.0.0.1", port: port, accepts: { _ in true })
    return PairingExchange.run(
      connection, role: .guest, identity: identity, displayName: "bee", peerName: "ay", trust: trust, now: { 1 },
      confirm: record.confirm)
  }

  /// A stranger that connects to a pairing window and says nothing holds its one connection
  /// only until the before-code deadline (here 0.2 s), not the minutes people get to compare
  /// codes (300 s of idle here); it counts as no attempt. The bound below is generous: it
  /// only tells the two apart.
  func testASilentGuestIsDroppedBeforeAnyCodeIsShown() throws {
    let (identity, trust) = try node()
    var limits = PairingExchange.limits
    limits.idleSeconds = 300
    let started = Date()
    let outcome = InMemorySession.run(
      limits: limits,
      first: { channel in
        PairingExchange.run(
          channel: channel, role: .host, identity: identity, displayName: "ay", peerName: nil, trust: trust,
          now: { 1 }, beforeCode: 0.2, confirm: { _ in true })
      },
      second: { channel in _ = try? channel.receive(before: .after(seconds: 30)) }
    ).first
    let result = try outcome.get()
    XCTAssertNil(try? result.result.get(), "nothing paired")
    XCTAssertFalse(result.counts, "a connection that never got to a code is no attempt")
    XCTAssertLessThan(Date().timeIntervalSince(started), 20, "dropped long before the 300 s people get")
    XCTAssertEqual(try trust.load().peers, [])
  }

  func testTwoHonestSidesSeeOneCodeAndTrustEachOther() throws {
    let (hostIdentity, hostTrust) = try node()
    let (guestIdentity, guestTrust) = try node()
    let hostRecord = Record()
    let guestRecord = Record()
    let server = try hostServer(hostIdentity, hostTrust, hostRecord)
    defer { server.stop() }
    let guestOutcome = try guest(guestIdentity, guestTrust, port: server.port, guestRecord)
    let hostOutcome = try XCTUnwrap(hostRecord.wait())
    XCTAssertEqual(hostRecord.codes.withLock { $0 }.count, 1)
    XCTAssertEqual(hostRecord.codes.withLock { $0 }, guestRecord.codes.withLock { $0 })
    XCTAssertEqual(try guestOutcome.result.get().name, "ay")
    XCTAssertEqual(try hostOutcome.result.get().name, "bee")
    XCTAssertEqual(
      try hostTrust.load().peer(for: guestIdentity.deviceID)?.discoveryKey, guestIdentity.discoveryKeyBase64)
    XCTAssertEqual(
      try guestTrust.load().peer(for: hostIdentity.deviceID)?.discoveryKey, hostIdentity.discoveryKeyBase64)
  }

  /// A device in the middle holds a TLS session with each side and relays the frames
  /// between them. Returns both sides' outcomes.
  func manInTheMiddle() throws -> (
    host: PairingExchange.Outcome, guest: PairingExchange.Outcome, hostTrust: TrustStore, guestTrust: TrustStore,
    codes: (host: [String], guest: [String])
  ) {
    let (hostIdentity, hostTrust) = try node()
    let (guestIdentity, guestTrust) = try node()
    let (middle, _) = try node()
    let hostRecord = Record()
    let guestRecord = Record()
    let server = try hostServer(hostIdentity, hostTrust, hostRecord)
    defer { server.stop() }
    let relay = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: middle.device, role: .server, purpose: .pairing),
      limits: PairingExchange.limits, accepts: { _ in true }, events: { _ in },
      handler: { toGuest in
        guard
          let toHost = try? TLSClient(
            context: TLSContext(identity: middle.device, role: .client, purpose: .pairing),
            limits: PairingExchange.limits
          ).connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
        else { return }
        // commit (host → guest), nonce (guest → host), reveal (host → guest), answer (guest → host)
        for (from, to) in [(toHost, toGuest), (toGuest, toHost), (toHost, toGuest), (toGuest, toHost)] {
          guard let frame = try? from.receive() else { break }
          try? to.send(frame)
        }
        toHost.shutdown()
      })
    defer { relay.stop() }
    let guestOutcome = try guest(guestIdentity, guestTrust, port: relay.port, guestRecord)
    let hostOutcome = try XCTUnwrap(hostRecord.wait())
    return (
      hostOutcome, guestOutcome, hostTrust, guestTrust,
      (hostRecord.codes.withLock { $0 }, guestRecord.codes.withLock { $0 })
    )
  }

  func testARelayingMiddleIsCaughtByTheCommitmentAndNothingIsStored() throws {
    let run = try manInTheMiddle()
    XCTAssertEqual(run.guest.result.failureCode, .untrustedPeer, "the guest saw the commitment fail")
    XCTAssertTrue(run.guest.counts)
    XCTAssertTrue(run.codes.guest.isEmpty, "the guest was never shown a code")
    XCTAssertEqual(run.host.result.failureCode, .cancelled, "the host was told the other side refused")
    XCTAssertEqual(try run.hostTrust.load().peers, [])
    XCTAssertEqual(try run.guestTrust.load().peers, [])
  }

  /// A host that commits properly on its own session, then reveals another nonce than the
  /// one it committed to (`lie`), or the right one (the control).
  func lyingHost(lie: Bool) throws -> (outcome: PairingExchange.Outcome, codes: [String], trust: TrustStore) {
    let (hostIdentity, _) = try node()
    let (guestIdentity, guestTrust) = try node()
    let server = try TLSServer(
      port: 0, loopbackOnly: true, context: TLSContext(identity: hostIdentity.device, role: .server, purpose: .pairing),
      limits: PairingExchange.limits, accepts: { _ in true }, events: { _ in },
      handler: { connection in
        guard let peer = connection.peer,
          let exporter = try? connection.exportKeyingMaterial(
            label: PairingProtocol.exporterLabel, length: PairingProtocol.exporterLength)
        else { return }
        let committed = [UInt8](repeating: 1, count: 32)
        guard
          let commitment = try? PairingCode.commitment(
            hostNonce: committed, exporter: exporter, host: hostIdentity.deviceID, guest: peer,
            crypto: OpenSSLPairingCryptography())
        else { return }
        try? connection.send(
          Frame(
            .pairCommit,
            payload: PeerMessage.encode(PeerMessage.PairCommit(commitment: Data(commitment).base64EncodedString()))))
        _ = try? connection.receive()  // the guest's nonce
        let revealed = lie ? [UInt8](repeating: 2, count: 32) : committed
        try? connection.send(
          Frame(
            .pairReveal, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: Data(revealed).base64EncodedString()))
          ))
        // An honest reveal is followed by the guest's confirmation; then this host disappears.
        _ = try? connection.receive()
      })
    defer { server.stop() }
    let record = Record()
    let outcome = try guest(guestIdentity, guestTrust, port: server.port, record)
    return (outcome, record.codes.withLock { $0 }, guestTrust)
  }

  func testAWrongRevealIsRefusedAndStoresNothing() throws {
    let control = try lyingHost(lie: false)
    XCTAssertEqual(control.codes.count, 1, "an honest reveal shows a code")
    XCTAssertEqual(control.outcome.result.failureCode, .connection, "that host then left without confirming")
    let lied = try lyingHost(lie: true)
    XCTAssertEqual(lied.outcome.result.failureCode, .untrustedPeer)
    XCTAssertTrue(lied.codes.isEmpty, "no code is shown after a wrong reveal")
    XCTAssertTrue(lied.outcome.counts, "a wrong reveal counts towards the attempts limit")
    XCTAssertEqual(try lied.trust.load().peers, [])
  }

  func testAnOlderGuestIsToldToUpdateAndCountsNoAttempt() throws {
    let (hostIdentity, hostTrust) = try node()
    let (guestIdentity, _) = try node()
    let hostRecord = Record()
    let server = try hostServer(hostIdentity, hostTrust, hostRecord)
    defer { server.stop() }
    // Version 1 offered only `memo-peer/1`.
    let old = TLSClient(context: try TLSContext(identity: guestIdentity.device, role: .client))
    let connection = try old.connect(host: "127.0.0.1", port: server.port, accepts: { _ in true })
    let outcome = try XCTUnwrap(hostRecord.wait())
    XCTAssertEqual(outcome.result.failureCode, .connection)
    XCTAssertFalse(outcome.counts)
    XCTAssertTrue(hostRecord.codes.withLock { $0 }.isEmpty)
    XCTAssertNil(try? connection.receive(), "the host closed the connection")
  }
}

extension Result where Failure == MemoPeerError {
  var failureCode: MemoPeerError.Code? {
    if case .failure(let error) = self { return error.code }
    return nil
  }
}
