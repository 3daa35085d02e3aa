import MemoCore
import MemoNode
import MemoStore
import XCTest

@testable import MemoApp

/// Trust, pairing and the network use cases up to the point where they would touch the
/// network.
final class TrustAndPairingUseCaseTests: XCTestCase {
  func testTrustByIDChecksTheIDAndTheNotebooksBeforeTrustingAnyone() throws {
    let node = try AppFixture()
    let id = SyncUseCaseTests.desk.deviceID.description
    XCTAssertThrowsError(try node.app().trust.add("not-an-id", name: "desk")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
    }
    XCTAssertThrowsError(try node.app().trust.add(id, name: "desk", sharing: ["no such notebook"])) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    XCTAssertTrue(try node.app().trust.list().peers.isEmpty, "a typo trusts nobody")
    let added = try node.app().trust.add(id, name: "desk")
    XCTAssertEqual(added.source, .command)
    XCTAssertEqual(try node.app().trust.rename("desk", to: "nas").name, "nas")
    XCTAssertEqual(try node.app().trust.setPolicy(.accept, for: "nas").receive, .accept)
    XCTAssertEqual(TrustListJSON(try node.app().trust.list()).peers.map(\.receive), ["accept"])
    let removal = try node.app().trust.remove("nas")
    XCTAssertEqual(removal.peer.deviceID, added.deviceID)
    XCTAssertEqual(removal.revocation?.note.revoked, added.deviceID, "trust remove signs a revocation")
    XCTAssertEqual(try node.app().trust.revocations().map(\.state), [.applied])
    XCTAssertEqual(
      TrustListJSON(try node.app().trust.list(), revocations: try node.app().trust.revocations())
        .revocations.map(\.revoked), [added.deviceID.description])
    // Trusted again by a person: the revocation stops counting here.
    _ = try node.app().trust.add(id, name: "nas")
    XCTAssertEqual(try node.app().trust.revocations().map(\.state), [.overridden])
    XCTAssertNil(try node.app().trust.remove("nas", hereOnly: true).revocation, "--here-only signs nothing")
    XCTAssertThrowsError(
      try node.app().network.ping("nas", count: 1, interval: 0.1, timeout: 1, prompt: NobodyToAsk())
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound) }
  }

  func testABrowseWithNobodyToAskSendsNothingWithoutAConsent() throws {
    let node = try AppFixture()
    XCTAssertThrowsError(
      try node.app().network.browse(timeout: 1, prompt: NobodyToAsk()) { _ in XCTFail("nothing seen") }
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .consentRequired) }
    XCTAssertTrue(try node.app().consent.overview().records.isEmpty, "nothing recorded")
  }

  func testPairingNeedsAValidNameKnownNotebooksAndAPerson() throws {
    let node = try AppFixture()
    XCTAssertEqual(PairingUseCases.displayName(forHost: "desk"), "desk")
    XCTAssertEqual(PairingUseCases.displayName(forHost: String(repeating: "a", count: 80)).utf8.count, 63)
    XCTAssertEqual(PairingUseCases.displayName(forHost: "bad\u{1B}name"), "memo-peer device")
    XCTAssertEqual(PairingUseCases.displayName(forHost: nil), "memo-peer device")
    let pairing = node.app().pairing
    XCTAssertThrowsError(
      try pairing.prepare(displayName: "desk", sharing: ["nope"], prompt: ScriptedPrompt(answers: []))
    ) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound, "a notebook typo, before anything is asked")
    }
    XCTAssertThrowsError(try pairing.prepare(displayName: "desk", sharing: [], prompt: NobodyToAsk())) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .usage)
      XCTAssertTrue(($0 as? MemoPeerError)?.hint?.contains("trust add") ?? false)
    }
    XCTAssertEqual(try node.app().pairing.offerableNotebooks().count, 1, "the default notebook")
  }

  func testTheDeviceToPairWithIsTheOneNamedTheOnlyOneOrThePersonsPick() throws {
    func window(_ name: String) -> PeerSighting {
      PeerSighting(
        event: .added, instance: "mp-" + name, type: "_memo-peer._tcp", interface: "eth0", addresses: ["fe80::1"],
        port: 1, own: false, pairingName: name)
    }
    let never: ([PeerSighting]) throws -> PeerSighting = { _ in
      XCTFail("not asked")
      return window("x")
    }
    XCTAssertEqual(try PairingUseCases.choose(among: [window("Desk")], wanted: nil, pick: never).pairingName, "Desk")
    XCTAssertEqual(
      try PairingUseCases.choose(among: [window("a"), window("Desk")], wanted: "desk", pick: never).pairingName, "Desk")
    XCTAssertThrowsError(try PairingUseCases.choose(among: [window("a")], wanted: "desk", pick: never)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.hint, "run `memo-peer pair --accept` on it first; devices seen: a")
    }
    XCTAssertThrowsError(try PairingUseCases.choose(among: [], wanted: nil, pick: never)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    var offered: [String?] = []
    let picked = try PairingUseCases.choose(among: [window("a"), window("b")], wanted: nil) {
      offered = $0.map(\.pairingName)
      return $0[1]
    }
    XCTAssertEqual(offered, ["a", "b"])
    XCTAssertEqual(picked.pairingName, "b")
  }
}
