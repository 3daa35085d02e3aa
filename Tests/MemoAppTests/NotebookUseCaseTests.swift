import MemoApp
import MemoCore
import MemoNode
import MemoStore
import MemoTestSupport
import XCTest

/// The notebook use cases: which memos go where, and to whom.
final class NotebookUseCaseTests: XCTestCase {
  func testANewDefaultNotebookTakesNewMemosAndADeleteMovesThemFirst() throws {
    let node = try AppFixture()
    let work = try node.app().notebooks.create("work")
    XCTAssertEqual(try node.app().notebooks.makeDefault("work").id, work.id)
    let memo = try node.memo("in work now")
    XCTAssertEqual(memo.notebook, work.id)
    XCTAssertEqual(try node.app().notebooks.summary(of: work).memos, 1)
    let home = try node.app().notebooks.create("home")
    XCTAssertThrowsError(try node.app().notebooks.delete("work", moveTo: nil), "it has a memo") { _ in }
    _ = try node.app().notebooks.makeDefault("home")
    let deleted = try node.app().notebooks.delete("work", moveTo: "home")
    XCTAssertEqual(deleted.moved, 1)
    XCTAssertEqual(try node.app().memos.show(memo.id.rawValue).notebook, home.id)
    XCTAssertThrowsError(try node.app().notebooks.summary(of: work)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
  }

  func testSharingNeedsATrustedDeviceAndUnsharingNamesAMember() throws {
    let node = try AppFixture()
    _ = try node.app().notebooks.create("family")
    XCTAssertThrowsError(try node.app().notebooks.share("family", with: "desk", as: .member)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound, "nobody is trusted yet")
    }
    let desk = TrustedPeer(
      deviceID: try XCTUnwrap(DeviceID(String(repeating: "A", count: 52))), name: "desk", discoveryKey: nil,
      source: .command, added: 1)
    try node.app().trustStore.update { try $0.trust(desk) }
    let shared = try node.app().notebooks.share("family", with: "desk", as: .relay)
    XCTAssertEqual(shared.peer.deviceID, desk.deviceID)
    XCTAssertEqual(try node.app().notebooks.summary(of: shared.notebook).members.map(\.role), [.relay])
    XCTAssertThrowsError(try node.app().notebooks.unshare("family", from: "laptop")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    let unshared = try node.app().notebooks.unshare("family", from: "desk")
    XCTAssertEqual(unshared.device, desk.deviceID)
    XCTAssertEqual(unshared.result.role, .relay)
    XCTAssertFalse(unshared.result.rotated, "a relay never had the key")
  }
}

/// Invitations (sync version 3): a notebook a peer's log puts this device in waits for a
/// person, who accepts or declines it; a declined one comes back only when shared anew; one
/// device leaves at most 16 waiting.
final class InvitationUseCaseTests: XCTestCase {
  /// `asker` syncs with `answerer` through the production session in memory.
  func sync(_ asker: AppFixture, with answerer: AppFixture) throws -> SyncSession.Report {
    let store = try asker.app().store()
    let answering = try answerer.app().store()
    return try runSync(
      store, as: try store.deviceID(), with: SyncAnswerSide(paths: answerer.paths, device: try answering.deviceID())
    ).report()
  }

  func trust(_ node: AppFixture, _ other: AppFixture, as name: String) throws {
    let device = try other.app().store().deviceID()
    try node.app().trustStore.update {
      try $0.trust(TrustedPeer(deviceID: device, name: name, discoveryKey: nil, source: .command, added: 1))
    }
  }

  func testANotebookSharedWithThisDeviceWaitsForAPersonWhoAcceptsOrDeclinesIt() throws {
    let laptop = try AppFixture()
    let desk = try AppFixture()
    try trust(laptop, desk, as: "desk")
    try trust(desk, laptop, as: "laptop")
    let family = try desk.app().notebooks.create("family")
    let recipes = try desk.app().notebooks.create("recipes")
    for name in ["family", "recipes"] { _ = try desk.app().notebooks.share(name, with: "laptop", as: .member) }
    // The first sync teaches desk the laptop's key: the keys are sealed to it in the log.
    let first = try sync(laptop, with: desk)
    XCTAssertEqual(Set(first.ops.invited), [family.id, recipes.id])
    let waiting = try laptop.app().notebooks.invitations()
    XCTAssertEqual(Set(waiting.map(\.name)), ["family", "recipes"], "the names open with the keys sealed to it")
    let deskID = try desk.app().store().deviceID()
    XCTAssertTrue(waiting.allSatisfy { $0.role == .member && $0.inviter == deskID && $0.peer == deskID })
    XCTAssertFalse(try laptop.app().notebooks.list().contains { $0.notebook.id == family.id }, "nothing joined")

    let accepted = try laptop.app().notebooks.accept("family")
    XCTAssertEqual(accepted.id, family.id)
    XCTAssertEqual(accepted.name, "family")
    let declined = try laptop.app().notebooks.decline("recipes")
    XCTAssertEqual(declined.state, .declined)
    XCTAssertEqual(try laptop.app().notebooks.invitations(), [])
    XCTAssertEqual(try laptop.app().notebooks.invitations(includingDeclined: true).map(\.notebook), [recipes.id])

    // The accepted notebook's memos arrive; the declined one's do not, and it is not
    // offered again at the next sync.
    _ = try desk.memo("for the family", in: "family")
    _ = try desk.memo("a recipe", in: "recipes")
    let second = try sync(laptop, with: desk)
    XCTAssertEqual(second.ops.invited, [])
    XCTAssertEqual(try laptop.app().memos.list().memos.map(\.title), ["for the family"])
    XCTAssertEqual(try laptop.app().notebooks.invitations(), [])

    // Shared anew (a new share op), the declined one is an invitation again.
    _ = try desk.app().notebooks.unshare("recipes", from: "laptop")
    _ = try desk.app().notebooks.share("recipes", with: "laptop", as: .member)
    XCTAssertEqual(try sync(laptop, with: desk).ops.invited, [recipes.id])
    XCTAssertThrowsError(try laptop.app().notebooks.accept("nothing-like-it")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
  }

  func testOneDeviceLeavesAtMost16InvitationsWaiting() throws {
    let laptop = try AppFixture()
    let desk = try AppFixture()
    try trust(desk, laptop, as: "laptop")
    for index in 0..<(MemoStore.maximumPendingInvitations + 2) {
      _ = try desk.app().notebooks.create("n\(index)")
      _ = try desk.app().notebooks.share("n\(index)", with: "laptop", as: .relay)
    }
    let report = try sync(laptop, with: desk)
    XCTAssertEqual(report.ops.invited.count, MemoStore.maximumPendingInvitations)
    XCTAssertEqual(report.ops.overQuota, 2, "the rest are not kept")
    XCTAssertEqual(try laptop.app().notebooks.invitations().count, MemoStore.maximumPendingInvitations)
    XCTAssertEqual(try laptop.app().notebooks.list().count, 1, "nothing joined but its own notebook")
    // Once a person answers some, the rest come at the next sync.
    for invitation in try laptop.app().notebooks.invitations().prefix(2) {
      _ = try laptop.app().notebooks.decline(invitation.notebook.rawValue)
    }
    XCTAssertEqual(try sync(laptop, with: desk).ops.invited.count, 2)
  }
}
