import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Purges between real stores, through the production session: a memo purged on one member
/// leaves the relay (its raw files checked) and a member that meets only the relay; a purge
/// signed by a relay, a stranger or a revoked member is refused; a replay does nothing.
final class PurgeSyncTests: XCTestCase {
  typealias Device = HouseholdDevice

  func household() throws -> (b: Device, c: Device, x: Device, d: Device, s: Device, notebook: NotebookID) {
    try Household.make().devices
  }

  @discardableResult
  func sync(_ asker: Device, with answerer: Device) throws -> SyncSession.Report {
    try syncDevices(asker, with: answerer)
  }

  func purge(of memo: MemoID, in notebook: NotebookID, signedBy device: Device) throws -> Purge {
    let signer = try device.store.signer()
    var purge = Purge(authorKey: signer.publicKey, notebook: notebook, memo: memo, made: 20, signature: [])
    purge.signature = try signer.signature(for: purge.signedMessage)
    return purge
  }

  func testAPurgeOnOneMemberLeavesTheRelayAndTheMembersItReachesThroughIt() throws {
    let (b, c, _, d, s, notebook) = try household()
    let memo = try XCTUnwrap(b.store.allHeadRows().first { $0.title == "before" })
    _ = try b.store.update(memo.id, MemoChange(body: "a second revision"), now: 3)
    for device in [c, s] { try sync(device, with: b) }
    let sealed = try b.node.column("record", of: memo.id)
    XCTAssertFalse(sealed.isEmpty)
    XCTAssertTrue(try s.node.rawDataBytes().contains(bytes: sealed), "the relay holds the sealed record")
    XCTAssertFalse(try c.store.history(of: memo.id).isEmpty, "c kept the superseded revision")

    XCTAssertEqual(try c.store.purge(memo.id, now: 4), notebook)
    XCTAssertNil(try c.store.loadRow(memo.id))
    XCTAssertEqual(try sync(s, with: c).received.applied, 0)
    XCTAssertFalse(try s.relays(memo.id), "the relay dropped its records")
    XCTAssertFalse(try s.node.rawDataBytes().contains(bytes: sealed), "no sealed record of it in the relay's files")

    // b meets only the relay; d comes back later and meets b.
    try sync(b, with: s)
    XCTAssertNil(try b.store.loadRow(memo.id))
    XCTAssertThrowsError(try b.store.history(of: memo.id), "no history of it either")
    XCTAssertFalse(try b.node.rawDataBytes().contains(bytes: sealed))
    try sync(d, with: b)
    XCTAssertNil(try d.store.loadRow(memo.id))
    // Nothing else went: the notebook goes on syncing.
    let later = try b.store.create(MemoDraft(title: "later", body: "after the purge"), now: 5)
    try sync(s, with: b)
    XCTAssertTrue(try s.relays(later.id))
  }

  func testAPurgeByARelayAStrangerOrARevokedMemberIsRefusedAndAReplayDoesNothing() throws {
    let (b, c, x, _, s, notebook) = try household()
    let memo = try XCTUnwrap(b.store.allHeadRows().first { $0.title == "before" })
    let stranger = try Device("stranger")
    for (signer, reason) in [
      (s, "a purge signed by a device that is not a member of that notebook here"),
      (stranger, "a purge signed by a device that is not a member of that notebook here"),
    ] {
      let purge = try purge(of: memo.id, in: notebook, signedBy: signer)
      XCTAssertEqual(try b.store.batch { try b.store.takePurges([purge], from: s.id, now: 6) }, 0)
      XCTAssertTrue(try b.store.quarantined().contains { $0.reason == reason })
    }
    var forged = try purge(of: memo.id, in: notebook, signedBy: c)
    forged.signature[5] ^= 1
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([forged], from: s.id, now: 6) }, 0)
    XCTAssertTrue(try b.store.quarantined().contains { $0.reason == "a purge whose signature does not verify" })

    _ = try b.store.revoke(x.id, name: "x", now: 7)
    let byRevoked = try purge(of: memo.id, in: notebook, signedBy: x)
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([byRevoked], from: s.id, now: 8) }, 0)
    XCTAssertNotNil(try b.store.loadRow(memo.id), "nothing was purged")

    let real = try purge(of: memo.id, in: notebook, signedBy: c)
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([real], from: c.id, now: 9) }, 1)
    XCTAssertNil(try b.store.loadRow(memo.id))
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([real], from: c.id, now: 10) }, 0, "a replay")
  }
}
