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

  /// A member of one notebook, or a relay of it that is a member of another, names its own
  /// notebook and the id of a memo in a notebook it has no share of (ids travel in clear to
  /// relays): the memo, its history and its trash entry stay, the purge is kept aside naming
  /// the peer, and is never passed on.
  func testAPurgeNamingAnotherNotebookLeavesTheMemoAndItsHistoryWhole() throws {
    let (b, c, _, _, s, notebook) = try household()
    // b's diary, shared with nobody, with a memo of two revisions (one in history).
    let diary = try b.store.createNotebook(named: "diary", now: 3)
    let secret = try b.store.create(MemoDraft(title: "diary entry", body: "first"), now: 3, in: diary.id)
    _ = try b.store.update(secret.id, MemoChange(body: "second"), now: 4)
    XCTAssertEqual(try b.store.history(of: secret.id).count, 2)

    let byMember = try purge(of: secret.id, in: notebook, signedBy: c)
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([byMember], from: c.id, now: 5) }, 0)
    XCTAssertEqual(try b.store.loadRow(secret.id)?.body, "second")
    XCTAssertEqual(try b.store.history(of: secret.id).count, 2, "its history stays")
    XCTAssertTrue(
      try b.store.quarantined().contains {
        $0.peer == c.id && $0.reason.hasPrefix("a purge naming notebook \(notebook.short) of a memo that is in another")
      })

    // The relay of `notebook` is a member of a second notebook b shares with it, and names
    // that one with the id of a memo of `notebook`, which it relays.
    let shared = try b.store.createNotebook(named: "shared with s", now: 6)
    try shareNotebook(shared.id, among: [(b.store, b.id), (s.store, s.id)])
    let before = try XCTUnwrap(b.store.allHeadRows().first { $0.title == "before" })
    XCTAssertTrue(try s.relays(before.id))
    let byRelay = try purge(of: before.id, in: shared.id, signedBy: s)
    XCTAssertEqual(try b.store.batch { try b.store.takePurges([byRelay], from: s.id, now: 7) }, 0)
    XCTAssertNotNil(try b.store.loadRow(before.id))
    // Taken by the relay itself, its own purge does not touch what it relays either.
    XCTAssertEqual(try s.store.batch { try s.store.takePurges([byRelay], from: b.id, now: 7) }, 0)
    XCTAssertTrue(try s.relays(before.id))
    // Neither is passed on: a member that syncs later gets the memo as before.
    XCTAssertTrue(try b.store.purgesToSend(for: c.id).isEmpty)
    try sync(c, with: b)
    XCTAssertNotNil(try c.store.loadRow(before.id))
  }
}
