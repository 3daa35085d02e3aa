import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The pairing exchange (the `PairingMachine` driver), both sides against each other over an
/// in-memory channel: the code each person sees, what each side stores, and that nothing is
/// stored unless both people confirmed. (PairingExchangeTests run it over loopback TLS.)
final class PairingTests: XCTestCase {
  struct Outcome {
    var host: PairingExchange.Outcome
    var guest: Result<PairingExchange.Outcome, any Error>
    var codes: [String]
  }

  /// `host` (pair --accept, named `hostName`) and `guest` (pair, named `guestName`) run the
  /// exchange; `hostSays` and `guestSays` are each person's answer. `guestSide` replaces the
  /// guest by a device that does something else.
  func pair(
    _ host: TestNode, _ guest: TestNode, hostName: String = "desk", guestName: String = "laptop",
    hostSays: Bool = true, guestSays: Bool = true, exporters: ([UInt8], [UInt8])? = nil,
    guestSide: (@Sendable (InMemoryChannel) throws -> PairingExchange.Outcome)? = nil
  ) throws -> Outcome {
    let codes = Recorder<String>()
    let (guestResult, hostResult) = InMemorySession.run(
      firstID: guest.id, secondID: host.id, exporters: exporters,
      first: { channel in
        if let guestSide { return try guestSide(channel) }
        return PairingExchange.run(
          channel: channel, role: .guest, identity: guest.identity, displayName: guestName, peerName: hostName,
          trust: guest.trust, now: testClock,
          confirm: { offer in
            codes.append(offer.code)
            XCTAssertEqual(offer.ownID, guest.id)
            XCTAssertEqual(offer.peerID, host.id)
            XCTAssertEqual(offer.peerName, hostName)
            return guestSays
          })
      },
      second: { channel in
        PairingExchange.run(
          channel: channel, role: .host, identity: host.identity, displayName: hostName, peerName: nil,
          trust: host.trust, now: testClock,
          confirm: { offer in
            codes.append(offer.code)
            return hostSays
          })
      })
    return Outcome(host: try hostResult.get(), guest: guestResult, codes: codes.all)
  }

  func testBothConfirmingTheSameCodeMakesEachTrustTheOther() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = try pair(host, guest)
    XCTAssertEqual(outcome.codes.count, 2)
    XCTAssertEqual(Set(outcome.codes).count, 1, "both screens show the same code")
    XCTAssertEqual(outcome.codes.first?.count, 6)
    let stored = try outcome.guest.get().result.get()
    XCTAssertEqual(stored.name, "desk")
    XCTAssertEqual(stored.discoveryKey, host.identity.discoveryKeyBase64)
    XCTAssertEqual(stored.source, .pairing)
    XCTAssertEqual(try outcome.host.result.get().deviceID, guest.id)
    XCTAssertEqual(try host.peer("laptop").deviceID, guest.id)
    XCTAssertEqual(try guest.peer("desk").deviceID, host.id)
  }

  func testARefusalOnEitherSideStoresNothingOnEither() throws {
    for (hostSays, guestSays) in [(false, true), (true, false), (false, false)] {
      let host = try TestNode()
      let guest = try TestNode()
      let outcome = try pair(host, guest, hostSays: hostSays, guestSays: guestSays)
      XCTAssertThrowsError(try outcome.host.result.get())
      XCTAssertThrowsError(try outcome.guest.get().result.get())
      XCTAssertEqual((outcome.host.result.failure)?.code, .cancelled)
      XCTAssertEqual(try host.trust.load().peers, [])
      XCTAssertEqual(try guest.trust.load().peers, [])
    }
  }

  func testTwoSessionsWithADeviceInTheMiddleStoreNothing() throws {
    let host = try TestNode()
    let guest = try TestNode()
    // Two TLS sessions, one with each side: their exporters differ, and the host's
    // commitment does not hold for the guest's.
    let outcome = try pair(host, guest, exporters: (Array("to guest".utf8), Array("to host".utf8)))
    XCTAssertThrowsError(try outcome.host.result.get())
    XCTAssertEqual(try outcome.guest.get().result.failure?.code, .untrustedPeer)
    XCTAssertTrue(try outcome.guest.get().counts, "a failed commitment counts towards the attempts limit")
    XCTAssertEqual(try host.trust.load().peers, [])
    XCTAssertEqual(try guest.trust.load().peers, [])
  }

  func testAPeerThatLeavesBeforeTheEndStoresNothing() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = try pair(host, guest, guestSide: { _ in throw MemoPeerError(.cancelled, "the person walked away") })
    XCTAssertEqual(outcome.host.result.failure?.message, PairingFailure.closed.error.message)
    XCTAssertFalse(outcome.host.counts, "no code was shown: nothing counts")
    XCTAssertEqual(try host.trust.load().peers, [])
  }

  func testAMalformedFrameStoresNothing() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = try pair(
      host, guest,
      guestSide: { channel in
        _ = try channel.receive()
        try channel.send(Frame(.pairNonce, payload: Array("not a nonce".utf8)))
        _ = try? channel.receive()
        throw MemoPeerError(.cancelled, "done")
      })
    XCTAssertEqual(outcome.host.result.failure?.code, .connection)
    XCTAssertEqual(try host.trust.load().peers, [])
  }

  func testAnOfferedNameThatIsTakenGetsANumber() throws {
    let host = try TestNode()
    let guest = try TestNode()
    try host.trusts(try TestNode(), as: "laptop")
    _ = try pair(host, guest, guestName: "laptop").host.result.get()
    let names = try host.trust.load().peers.map(\.name)
    XCTAssertEqual(names.count, 2)
    XCTAssertEqual(Set(names).count, 2, "no two devices share a name: \(names)")
  }
}

extension Result {
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
