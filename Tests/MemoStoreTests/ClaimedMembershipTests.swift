import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Issue 23's first attack by a trusted device speaking the real offers: the relay that
/// offers the notebook back as a member with a key of its own choosing. The member takes no
/// key from it (keys come only from a device it has as a member), so the relay reads nothing
/// new. (A device that claims a notebook by its id alone is still recorded: PROTOCOL.md's
/// threat table marks it open.)
final class ClaimedMembershipTests: XCTestCase {
  /// `sender`'s offer of `notebook` to `receiver`, rewritten to claim membership with `key`.
  func claim(
    _ notebook: NotebookID, from sender: HouseholdDevice, to receiver: HouseholdDevice,
    key: NotebookOffer.KeyMaterial
  ) throws -> [CheckedOffer] {
    var offer =
      try sender.store.offers(for: receiver.id).first { $0.id == notebook.rawValue }
      ?? NotebookOffer(id: notebook, role: .member, given: .member, knowledge: VersionVector(), cursor: nil)
    offer.role = NotebookRole.member.rawValue
    offer.given = NotebookRole.member.rawValue
    offer.name = "claimed"
    offer.keys = [key]
    return try NotebookOffers.check([offer])
  }

  func key(generation: Int64) -> NotebookOffer.KeyMaterial {
    NotebookOffer.KeyMaterial(
      id: String(repeating: "5", count: 32), generation: generation,
      key: Data(repeating: 0x42, count: 32).base64EncodedString())
  }

  func testARelayOfferingTheNotebookBackAsAMemberWithItsOwnKeyGivesNone() throws {
    let (b, _, _, _, s, notebook) = try Household.make().devices
    let newest = try b.store.keyring(notebook).newestGeneration
    let made = key(generation: newest + 1)
    let plan = try b.store.plan(
      with: s.id, offers: try claim(notebook, from: s, to: b, key: made), restrictSending: false, now: 5)
    XCTAssertNil(try b.store.keyring(notebook)[made.id], "the relay's key is not taken")
    XCTAssertEqual(try b.store.keyring(notebook).newestGeneration, newest)
    XCTAssertEqual(plan.receiving[notebook], .member, "b goes on syncing the notebook with its relay")
    let offers = try b.store.offers(for: s.id).filter { $0.id == notebook.rawValue }
    XCTAssertEqual(offers.map(\.given), ["relay"], "and gives it no key")
    XCTAssertEqual(offers.first?.keys, nil)
  }
}
