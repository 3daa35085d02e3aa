import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Issue 23's attacks by a trusted device that speaks the real protocol (sync version 3):
/// what it claims about a notebook counts for nothing; only ops signed by a member do.
final class ClaimedMembershipTests: XCTestCase {
  /// An op signed by `device` on top of `store`'s log of `notebook` (whatever it says).
  func forged(
    _ body: NotebookOp.Body, in notebook: NotebookID, by device: HouseholdDevice, on store: MemoStore
  ) throws -> NotebookOp {
    let log = try XCTUnwrap(try store.membershipLog(notebook))
    var op = NotebookOp(notebook: notebook, author: try device.store.signer().publicKey, parents: log.heads, body: body)
    op.signature = try device.store.signer().signature(for: op.signedMessage)
    return op
  }

  func testARelaySigningItselfAMemberWithAKeyOfItsOwnGivesItNone() throws {
    let (b, _, _, _, s, notebook) = try Household.make().devices
    let before = try b.store.keyring(notebook).keys.keys.sorted()
    let share = try forged(.share(device: s.id, role: .member), in: notebook, by: s, on: b.store)
    let key = try forged(
      .key(generation: 99, keyID: Array(repeating: 5, count: 16), sealed: []), in: notebook, by: s, on: b.store)
    let intake = try b.store.batch {
      try b.store.takeOps([SyncOps.Notebook(id: notebook, ops: [share.encoded, key.encoded])], from: s.id, now: 5)
    }
    XCTAssertEqual(intake.added, 0)
    XCTAssertEqual(intake.refused, 2, "both kept aside, naming the relay")
    XCTAssertEqual(try b.store.keyring(notebook).keys.keys.sorted(), before, "no key taken")
    XCTAssertEqual(try b.store.membershipState(notebook)?.members[s.id], .relay, "s is still only a relay")
    XCTAssertTrue(try b.store.quarantined().contains { $0.peer == s.id && $0.reason.hasPrefix("membership:") })
  }
}
