import Foundation
import MemoCore
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The real `PeerConnector` on a network that filters multicast DNS (an in-memory one whose
/// browses find nothing): a peer is dialled where it was reached, and a stranger at an old
/// address is one refused handshake, never trust.
final class KnownAddressConnectorTests: XCTestCase {
  func attach(_ node: TestNode, to network: InMemoryNetwork) -> UInt16 {
    let responder = node.responder()
    let trust = node.trust
    return network.attach(
      node.identity, accepts: { (try? trust.load().deviceIDs.contains($0)) ?? false },
      handler: { responder.serve($0) })
  }

  /// Remembered on the network this machine is on, as a connection here would be.
  func remember(_ text: String, of peer: TestNode, on node: TestNode) throws {
    let network = try node.gate.networks.current()?.id
    let address = try PeerAddress.parse(text)
    XCTAssertTrue(try node.trust.update { $0.remember(address, network: network, at: 1000, for: peer.id) })
  }

  func testAPeerDNSSDDoesNotShowIsDialledWhereItWasReached() throws {
    let (a, b) = try trustingPair()
    let network = InMemoryNetwork()
    let port = attach(b, to: network)
    try remember("127.0.0.1:\(port)", of: b, on: a)
    network.filterMulticast(true)
    try a.grantConsent()
    let connector = network.connector(gate: try a.gate, identity: a.identity, trust: a.trust, clock: { wallNow() })
    let states = Recorder<ConnectionState>()
    let link = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) { states.append($0) } }
    XCTAssertEqual(link.channel.peer, b.id)
    XCTAssertEqual(network.dials, 1)
    XCTAssertEqual(states.all, [.setup, .waiting(.peerNotFound), .preparing, .ready])
    link.channel.close()
  }

  /// Reached without DNS-SD once, on this network: the next connect dials the address
  /// before it browses at all (a browse there would only cost its window); reached through
  /// DNS-SD, it browses first again.
  func testAPeerLastReachedWithoutDNSSDIsDialledBeforeAnyBrowse() throws {
    let (a, b) = try trustingPair()
    let network = InMemoryNetwork()
    let port = attach(b, to: network)
    try remember("127.0.0.1:\(port)", of: b, on: a)
    network.filterMulticast(true)
    try a.grantConsent()
    let browses = Recorder<Int>()
    let browse = network.browse(clock: { wallNow() })
    let connector = PeerConnector(
      gate: try a.gate, identity: a.identity, trust: a.trust, limits: network.limits, addressBackoff: AddressBackoffs(),
      clock: { wallNow() },
      sightings: {
        browses.append(1)
        return try browse()
      }, dial: network.dial(from: a.id))
    let first = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) }
    first.channel.close()
    XCTAssertEqual(browses.all.count, 1, "the first connect browsed, then dialled")
    XCTAssertEqual(first.dialledAt, "127.0.0.1:\(port)")
    let reached = try XCTUnwrap(try a.trust.load().peer(for: b.id)?.reached?.first)
    XCTAssertEqual(reached.withoutDNSSD, true)
    let second = try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 10) }
    second.channel.close()
    XCTAssertEqual(browses.all.count, 1, "the second dialled the address before any browse")
    XCTAssertEqual(network.dials, 2)
  }

  func testAStrangerAtAnOldAddressIsOneRefusedHandshakeAndNoTrust() throws {
    let (a, b) = try trustingPair()
    let network = InMemoryNetwork()
    let strangersPort = attach(try TestNode(), to: network)
    try remember("127.0.0.1:\(strangersPort)", of: b, on: a)
    network.filterMulticast(true)
    try a.grantConsent()
    let backoff = AddressBackoffs()
    let connector = PeerConnector(
      gate: try a.gate, identity: a.identity, trust: a.trust, limits: network.limits, addressBackoff: backoff,
      clock: { wallNow() }, sightings: network.browse(clock: { wallNow() }), dial: network.dial(from: a.id))
    XCTAssertThrowsError(try runAsync { try await connector.connect(to: try a.peer("bee"), timeout: 1.2) }) { error in
      // Not "someone is impersonating": whoever has an old address is no claim to be bee.
      XCTAssertEqual((error as? MemoPeerError)?.code, .connection, "\(error)")
    }
    // The first dial comes after a browse of 0.5 s, the next not before 1 s after it:
    // past the 1.2 s the connect had.
    XCTAssertEqual(network.dials, 1, "one handshake, then the address waits its back-off")
    let address = try PeerAddress.parse("127.0.0.1:\(strangersPort)")
    XCTAssertEqual(backoff.failureCount(address), 1, "one failure on record: the next dial waits its step")
    XCTAssertEqual(try a.trust.load().peer(for: b.id)?.reached?.first?.address, address, "nothing learned from it")
    XCTAssertEqual(try a.trust.load().deviceIDs, [b.id], "and nobody new is trusted")
  }
}
