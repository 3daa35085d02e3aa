import MemoCore
import XCTest

@testable import MemoStore

/// The marks `serve`'s live links read after a wake (`SyncMarks`): the feed moves with a
/// revision; the membership mark moves with what this device may read (an accepted
/// invitation, a share or unshare, a new key generation, made here or arriving); a sync
/// that brought nothing (cursors, `last_synced`) moves neither.
final class SyncMarksTests: XCTestCase {
  func testAnAcceptAShareAndAnUnshareMoveTheMembershipMarkAndProgressNothing() throws {
    let b = try HouseholdDevice("b")
    let c = try HouseholdDevice("c")
    let notebook = try b.store.createNotebook(named: "garden", now: 1).id
    let beforeShare = try b.store.syncMarks()
    try b.store.share(notebook, with: c.id, as: .member, now: 1)
    let shared = try b.store.syncMarks()
    XCTAssertEqual(shared.feed, beforeShare.feed, "a share stores no revision")
    XCTAssertNotEqual(shared.membership, beforeShare.membership, "a share made here")
    _ = try b.store.create(MemoDraft(title: "t", body: "in the garden"), now: 2, in: notebook)

    let beforeInvite = try c.store.syncMarks()
    try syncDevices(c, with: b)
    XCTAssertEqual(try c.store.invitations().map(\.notebook), [notebook])
    let invited = try c.store.syncMarks()
    XCTAssertNotEqual(invited.membership, beforeInvite.membership, "the share arrived")
    try syncDevices(c, with: b)
    XCTAssertEqual(try c.store.syncMarks(), invited, "a sync that brought nothing moves no mark")

    _ = try c.store.acceptInvitation(notebook.rawValue, now: 3)
    let accepted = try c.store.syncMarks()
    XCTAssertEqual(accepted.feed, invited.feed, "an accept stores no revision")
    XCTAssertNotEqual(accepted.membership, invited.membership, "an accept moves the membership mark")

    let beforeUnshare = try b.store.syncMarks()
    _ = try b.store.unshare(notebook, from: c.id, now: 4)
    let unshared = try b.store.syncMarks()
    XCTAssertEqual(unshared.feed, beforeUnshare.feed)
    XCTAssertNotEqual(unshared.membership, beforeUnshare.membership, "an unshare and its new key generation")
  }
}
