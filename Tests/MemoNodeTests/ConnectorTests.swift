import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import Synchronization
import XCTest

@testable import MemoNode

/// The real `PeerConnector` and `PeerSync`, browsing and dialling an in-memory network:
/// recognising a peer by its rotating tag, waiting for consent, refusing an impostor,
/// learning a key, being refused, and peers that never answer.
final class ConnectorTests: XCTestCase {
  /// `a`'s connector over `network`, with consent unless told otherwise.
  func connector(_ a: TestNode, _ network: InMemoryNetwork, consent: Bool = true) throws -> PeerConnector {
    if consent { try a.grantConsent() }
    return network.connector(gate: try a.gate, identity: a.identity, trust: a.trust, clock: { wallNow() })
  }

  func attach(_ node: TestNode, to network: InMemoryNetwork, stalled: Bool = false) {
    let responder = node.responder()
    let trust = node.trust
    network.attach(
      node.identity, accepts: { (try? trust.load().deviceIDs.contains($0)) ?? false }, stalled: stalled,
      handler: { responder.serve($0) })
  }

  func testAPeerIsFoundByItsTagAndReadyAfterTheHellos() throws {
    let (a, b) = try trustingPair()
    let network = InMemoryNetwork()
    attach(try TestNode(), to: network)  // someone else on the network
    attach(b, to: network)
    let states = Recorder<ConnectionState>()
    let connector = try connector(a, network)
    let link = try runAsync {
      try await connector.connect(to: try a.peer("bee"), timeout: 10) { states.append($0) }
    }
    XCTAssertEqual(link.channel.peer, b.id)
    XCTAssertEqual(states.all, [.setup, .waiting(.peerNotFound), .preparing, .ready])
    XCTAssertEqual(network.dials, 1, "only the advertisement with bee's tag was dialled")
    try link.channel.send(Frame(.ping, payload: [1]))
    XCTAssertEqual(try link.channel.receive(), Frame(.pong, payload: [1]))
    link.channel.close()
  }

  func testWithoutConsentItWaitsAndThenSaysSo() throws {
    let (a, b) = try trustingPair()
    let network = InMemoryNetwork()
    attach(b, to: network)
    let states = Recorder<ConnectionState>()
    let connector = try connector(a, network, consent: false)
    XCTAssertThrowsError(
      try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 1) { states.append($0) } }
    ) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .connection)
      XCTAssertEqual(
        (error as? MemoPeerError)?.message, "could not reach bee within 1 s (still waiting: local-network consent)")
      XCTAssertEqual((error as? MemoPeerError)?.remedy, .grantConsent(nil))
    }
    XCTAssertEqual(states.all.prefix(2), [.setup, .waiting(.localNetworkConsent)])
    XCTAssertEqual(network.dials, 0, "nothing touched the network")
  }

  func testADeviceAdvertisingAsThePeerWithAnotherKeyIsRefused() throws {
    let (a, b) = try trustingPair()
    let impostor = try TestNode()
    // It knows bee's discovery key (so it can make bee's tags), but not bee's device key.
    let network = InMemoryNetwork()
    let disguise = NodeIdentity(
      device: impostor.identity.device, advertisement: b.identity.advertisement,
      discoveryKeyBase64: b.identity.discoveryKeyBase64)
    let responder = impostor.responder()
    network.attach(disguise, handler: { responder.serve($0) })
    let connector = try connector(a, network)
    XCTAssertThrowsError(try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 5) }) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .untrustedPeer)
      XCTAssertTrue(
        (error as? MemoPeerError)?.message.hasPrefix(
          "refused the device advertising as bee: its key (device ID \(impostor.id.short)…)")
          == true, "\(error)")
    }
  }

  func testAPeerAddedByIDIsFoundAmongOthersByItsKeyAndItsDiscoveryKeyIsLearned() throws {
    let a = try TestNode()
    let b = try TestNode()
    try a.trusts(b, as: "bee", withKey: false)
    try b.trusts(a, as: "ay")
    let network = InMemoryNetwork()
    attach(try TestNode(), to: network)
    attach(b, to: network)
    let connector = try connector(a, network)
    let link = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) }
    XCTAssertEqual(link.channel.peer, b.id)
    XCTAssertEqual(network.dials, 2, "the stranger was tried first and skipped by its key")
    XCTAssertEqual(try a.peer("bee").discoveryKey, b.identity.discoveryKeyBase64, "learned from b's hello")
    XCTAssertEqual(link.peer.discoveryKey, b.identity.discoveryKeyBase64)
    link.channel.close()
  }

  /// b rotated its discovery key (after a revocation a has not heard of): a's tag-only
  /// browse does not find it, so a tries the advertisements no trusted device's key
  /// recognises, finds b by its pinned key, and learns its new discovery key from its hello.
  func testAPeerThatRotatedItsDiscoveryKeyIsStillFoundAndItsNewKeyLearned() throws {
    let a = try TestNode()
    let b = try TestNode()
    let old = Data(repeating: 9, count: 32).base64EncodedString()
    try a.trust.update {
      try $0.trust(
        TrustedPeer(deviceID: b.id, name: "bee", discoveryKey: old, rotationSeconds: 900, source: .command, added: 1))
    }
    try b.trusts(a, as: "ay")
    let network = InMemoryNetwork()
    attach(try TestNode(), to: network)
    attach(b, to: network)
    let connector = try connector(a, network)
    let link = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) }
    XCTAssertEqual(link.channel.peer, b.id)
    XCTAssertEqual(try a.peer("bee").discoveryKey, b.identity.discoveryKeyBase64, "the new key, from b's hello")
    link.channel.close()
  }

  /// After a revocation was applied here every trusted device's key may be old: the first
  /// browse already tries what it does not recognise, skipping what another trusted device's
  /// key recognises; the hello clears the mark.
  func testAfterARevocationUnrecognisedAdvertisementsAreTriedAndOtherTrustedDevicesSkipped() throws {
    let (a, b) = try trustingPair()
    let c = try TestNode()
    try a.trusts(c, as: "sea")
    XCTAssertTrue(try a.trust.update { $0.markDiscoveryKeysStale() })
    XCTAssertEqual(try a.peer("bee").discoveryKeyStale, true)
    let network = InMemoryNetwork()
    attach(c, to: network)  // recognised as sea: never dialled for bee
    attach(b, to: network)
    let connector = try connector(a, network)
    let link = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) }
    XCTAssertEqual(link.channel.peer, b.id)
    XCTAssertEqual(network.dials, 1, "sea's advertisement, recognised as sea's, was not tried for bee")
    XCTAssertNil(try a.peer("bee").discoveryKeyStale, "bee's hello gave its current key")
    XCTAssertEqual(try a.peer("sea").discoveryKeyStale, true, "sea's is still to be learned")
    link.channel.close()
  }

  func testAPeerThatNoLongerTrustsUsIsReportedAsARefusal() throws {
    let (a, b) = try trustingPair()
    _ = try b.trust.update { try $0.remove("ay") }
    let network = InMemoryNetwork()
    attach(b, to: network)
    let connector = try connector(a, network)
    XCTAssertThrowsError(try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 5) }) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .untrustedPeer)
      XCTAssertEqual(
        (error as? MemoPeerError)?.message, "bee refused this device: it does not trust this device (any more)")
    }
  }

  /// Two peers accept the connection and never answer (as a TCP listener that never speaks
  /// TLS); a third answers. Each connection attempt holds a thread until its deadline — not
  /// one of Swift's cooperative pool, which has one thread per core: were the attempts on
  /// the pool, three stalled peers would hold it all on a machine of up to three cores and
  /// the live one could not even start before its own timeout. The live one syncs, the
  /// stalled ones fail with their timeout, nothing waits longer than its own deadline.
  func testStalledPeersCostTheirOwnTimeoutOnlyAndALivePeerStillSyncs() throws {
    let a = try TestNode()
    let live = try TestNode()
    let stalled = try (0..<3).map { _ in try TestNode() }
    for (index, node) in stalled.enumerated() {
      try a.trusts(node, as: "stalled\(index)")
      try node.trusts(a, as: "ay")
    }
    try a.trusts(live, as: "live")
    try live.trusts(a, as: "ay")
    let liveStore = try live.open()
    try shareNotebook(try liveStore.defaultNotebook().id, among: [(liveStore, live.id), (try a.open(), a.id)])
    _ = try liveStore.create(MemoDraft(title: "t", body: "from the live peer"), now: 1)
    let network = InMemoryNetwork()
    for node in stalled { attach(node, to: network, stalled: true) }
    attach(live, to: network)
    let runner = a.syncer(try connector(a, network))
    let peers = try a.trust.load().peers
    XCTAssertEqual(peers.map(\.name), ["stalled0", "stalled1", "stalled2", "live"])
    let results = try runAsync { await runner.syncAll(peers, timeout: 2, deleteGuard: MassDeleteGuard()) }
    XCTAssertEqual(results.map(\.peer.name), ["stalled0", "stalled1", "stalled2", "live"], "in the order asked")
    XCTAssertEqual(results.last?.report?.received.applied, 1, "\(String(describing: results.last?.error))")
    for result in results.prefix(3) {
      XCTAssertEqual(result.error?.code, .connection)
      XCTAssertEqual(
        result.error?.message, "could not reach \(result.peer.name) within 2 s (still waiting: peer not reachable)")
    }
    XCTAssertEqual(try a.bodies(), ["from the live peer"])
  }

  func testSyncAllRunsAtMostFourPeersAtOnce() throws {
    let a = try TestNode()
    let peers = try (0..<7).map { index -> TrustedPeer in try a.trusts(try TestNode(), as: "p\(index)") }
    let gauge = ConcurrencyGauge()
    let runner = a.syncer(GaugedDialer(gauge: gauge, expected: 7))
    let results = try runAsync { await runner.syncAll(peers, timeout: 5, deleteGuard: nil) }
    XCTAssertEqual(results.map(\.peer.name), peers.map(\.name))
    XCTAssertTrue(results.allSatisfy { $0.error?.message == "unreachable by design" })
    XCTAssertEqual(gauge.peak, PeerSync.concurrency)
    XCTAssertEqual(gauge.total, 7)
  }
}

func wallNow() -> Timestamp { Timestamp((Date().timeIntervalSince1970 * 1000).rounded()) }

/// Counts dials in progress at once.
final class ConcurrencyGauge: Sendable {
  private let state = Mutex((now: 0, peak: 0, total: 0))
  func enter() { state.withLock { $0 = ($0.now + 1, max($0.peak, $0.now + 1), $0.total + 1) } }
  func leave() { state.withLock { $0.now -= 1 } }
  var now: Int { state.withLock { $0.now } }
  var peak: Int { state.withLock { $0.peak } }
  var total: Int { state.withLock { $0.total } }
}

/// A dialler that never connects, and holds each dial until four are under way (or every
/// dial has begun): if syncAll ran fewer at once the dials would wait for each other until
/// their deadline, if it ran more, more would be seen at once.
struct GaugedDialer: PeerDialer {
  let gauge: ConcurrencyGauge
  let expected: Int
  func connect(to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void)
    async throws -> PeerLink
  {
    gauge.enter()
    defer { gauge.leave() }
    while gauge.now < PeerSync.concurrency && gauge.total < expected && !deadline.hasPassed {
      await Task.yield()
    }
    throw MemoPeerError(.connection, "unreachable by design")
  }
}
