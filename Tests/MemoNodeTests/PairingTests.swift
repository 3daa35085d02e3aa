import Foundation
import MemoCore
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The pairing exchange, both sides against each other over an in-memory channel: the code
/// each person sees, what each side stores, and that nothing is stored unless both people
/// confirmed.
final class PairingTests: XCTestCase {
  struct Outcome {
    var host: Result<TrustedPeer, any Error>
    var guest: Result<TrustedPeer, any Error>
    var codes: [String]
  }

  /// `host` (pair --accept, named `hostName`) and `guest` (pair, named `guestName`) run the
  /// exchange; `hostSays` and `guestSays` are each person's answer.
  func pair(
    _ host: TestNode, _ guest: TestNode, hostName: String = "desk", guestName: String = "laptop",
    hostSays: Bool = true, guestSays: Bool = true, exporters: ([UInt8], [UInt8])? = nil,
    guestSide: (@Sendable (InMemoryChannel) throws -> TrustedPeer)? = nil
  ) -> Outcome {
    let codes = Recorder<String>()
    let (guestResult, hostResult) = InMemorySession.run(
      firstID: guest.id, secondID: host.id, exporters: exporters,
      first: { channel in
        if let guestSide { return try guestSide(channel) }
        return try PairingExchange.run(
          channel, identity: guest.identity, displayName: guestName, peerName: hostName, trust: guest.trust,
          now: testClock,
          confirm: { offer in
            codes.append(offer.code)
            XCTAssertEqual(offer.ownID, guest.id)
            XCTAssertEqual(offer.peerID, host.id)
            XCTAssertEqual(offer.peerName, hostName)
            return guestSays
          })
      },
      second: { channel in
        try PairingExchange.run(
          channel, identity: host.identity, displayName: hostName, peerName: nil, trust: host.trust, now: testClock,
          confirm: { offer in
            codes.append(offer.code)
            return hostSays
          })
      })
    return Outcome(host: hostResult, guest: guestResult, codes: codes.all)
  }

  func testBothConfirmingTheSameCodeMakesEachTrustTheOther() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = pair(host, guest)
    XCTAssertEqual(outcome.codes.count, 2)
    XCTAssertEqual(Set(outcome.codes).count, 1, "both screens show the same code")
    XCTAssertEqual(outcome.codes.first?.count, 6)
    let stored = try outcome.guest.get()
    XCTAssertEqual(stored.name, "desk")
    XCTAssertEqual(stored.discoveryKey, host.identity.discoveryKeyBase64)
    XCTAssertEqual(stored.source, .pairing)
    XCTAssertEqual(try host.peer("laptop").id, guest.id)
    XCTAssertEqual(try guest.peer("desk").id, host.id)
  }

  func testARefusalOnEitherSideStoresNothingOnEither() throws {
    for (hostSays, guestSays) in [(false, true), (true, false), (false, false)] {
      let host = try TestNode()
      let guest = try TestNode()
      let outcome = pair(host, guest, hostSays: hostSays, guestSays: guestSays)
      XCTAssertThrowsError(try outcome.host.get())
      XCTAssertThrowsError(try outcome.guest.get())
      for side in [outcome.host, outcome.guest] {
        if case .failure(let error) = side { XCTAssertEqual((error as? MemoPeerError)?.code, .cancelled, "\(error)") }
      }
      XCTAssertEqual(try host.trust.load().peers, [])
      XCTAssertEqual(try guest.trust.load().peers, [])
    }
  }

  func testAManInTheMiddleShowsTwoDifferentCodes() throws {
    let host = try TestNode()
    let guest = try TestNode()
    // Two TLS sessions, one with each side: their exporters differ.
    let outcome = pair(
      host, guest, hostSays: false, guestSays: false, exporters: (Array("to guest".utf8), Array("to host".utf8)))
    XCTAssertEqual(outcome.codes.count, 2)
    XCTAssertNotEqual(outcome.codes[0], outcome.codes[1])
    XCTAssertEqual(try host.trust.load().peers, [])
  }

  func testAPeerThatLeavesWithoutConfirmingStoresNothing() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = pair(host, guest, guestSide: { _ in throw MemoPeerError(.cancelled, "the person walked away") })
    XCTAssertEqual((outcome.host.failure as? MemoPeerError)?.code, .cancelled)
    XCTAssertEqual(
      (outcome.host.failure as? MemoPeerError)?.message,
      "the other device closed the pairing without confirming; nothing was stored")
    XCTAssertEqual(try host.trust.load().peers, [])
  }

  func testAMalformedConfirmationStoresNothing() throws {
    let host = try TestNode()
    let guest = try TestNode()
    let outcome = pair(
      host, guest,
      guestSide: { channel in
        try channel.send(Frame(.pairConfirm, payload: Array("{\"name\": 7}".utf8)))
        _ = try channel.receive()
        throw MemoPeerError(.cancelled, "done")
      })
    XCTAssertEqual((outcome.host.failure as? MemoPeerError)?.code, .connection)
    XCTAssertEqual(try host.trust.load().peers, [])
  }

  func testAnUnusableOfferedNameBecomesANameOfItsOwn() throws {
    let host = try TestNode()
    let guest = try TestNode()
    try host.trusts(try TestNode(), as: "laptop")  // the offered name is taken here
    _ = try pair(host, guest, guestName: "laptop").host.get()
    let names = try host.trust.load().peers.map(\.name)
    XCTAssertEqual(names.count, 2)
    XCTAssertEqual(Set(names).count, 2, "no two devices share a name: \(names)")
    let unnamed = try TestNode()
    let other = try TestNode()
    let stored = try pair(other, unnamed, guestName: String(repeating: "x", count: 200)).host.get()
    XCTAssertEqual(stored.name, "device-\(unnamed.id.short)")
  }
}

extension Result {
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
