import Foundation
import MemoCore
import MemoCrypto
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// Notebooks in the store: the `personal` notebook of new and migrated stores, names,
/// moves, deletes, membership, and keys sealed under the device key.
final class NotebookStoreTests: XCTestCase {
  func testANewStoreHasAPersonalNotebookOfItsOwnWithAKey() throws {
    let first = try TemporaryNode()
    let second = try TemporaryNode()
    let a = try first.open().defaultNotebook()
    let b = try second.open().defaultNotebook()
    XCTAssertEqual(a.name, "personal")
    XCTAssertEqual(a.role, .member)
    XCTAssertTrue(a.isDefault)
    // Two people's new stores never share a notebook by accident.
    XCTAssertNotEqual(a.id, b.id)
    XCTAssertNotEqual(a.id, .migrated)
    let ring = try first.open().keyring(a.id)
    XCTAssertEqual(ring.keys.count, 1)
    XCTAssertEqual(ring.current?.generation, 1)
    XCTAssertEqual(try first.open().members(of: a.id), [])
  }

  /// Schema 4 → 5 → 6 and 5 → 6: every memo (tombstones and all) goes to `personal`, under
  /// the id every migrated store shares, shared as a member with each device trusted at the
  /// migration; the old knowledge and cursors become the notebook's, so the next sync goes
  /// on where the last one stopped.
  func testTheSchema4FixtureMigratesIntoPersonalSharedWithEveryTrustedDevice() throws {
    try assertMigratesIntoPersonal(fromVersion: 4)
  }

  func testTheSchema5FixtureMigratesIntoPersonalSharedWithEveryTrustedDevice() throws {
    try assertMigratesIntoPersonal(fromVersion: 5)
  }

  private func assertMigratesIntoPersonal(fromVersion version: Int) throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: version, into: node)
    let laptop = TestDevices.id(named: "laptop")
    let desk = TestDevices.id(named: "desk")
    try TrustStore(paths: node.paths).update { list in
      for (id, name) in [(laptop, "laptop"), (desk, "desk")] {
        try list.trust(TrustedPeer(deviceID: id, name: name, discoveryKey: nil, source: .command, added: 1))
      }
    }
    try node.tamper(
      "INSERT INTO sync_peers (device, replica, cursor, acked, knowledge) VALUES ('\(laptop.compact)', "
        + "'0123456789abcdef0123456789abcdef', 17, 3, X'00000000'); "
        + "INSERT INTO knowledge (origin, seq) VALUES ('0123456789abcdef0123456789abcdef', 17)")
    let store = try node.open()
    let personal = try store.defaultNotebook()
    XCTAssertEqual(personal.id, .migrated)
    XCTAssertEqual(personal.name, "personal")
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(
      try db.scalarInt("SELECT count(*) FROM memos WHERE notebook IS NOT '\(NotebookID.migrated.rawValue)'"), 0)
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM memos"), 4)
    XCTAssertEqual(
      Set(try store.members(of: personal.id).map(\.device)), [laptop, desk])
    XCTAssertTrue(try store.members(of: personal.id).allSatisfy { $0.role == .member })
    XCTAssertEqual(try store.keyring(personal.id).keys.count, 1)
    XCTAssertEqual(try store.knowledge(of: personal.id)["0123456789abcdef0123456789abcdef"], 17)
    XCTAssertEqual(
      try store.syncCursor(for: laptop, in: personal.id),
      FeedPosition(replica: "0123456789abcdef0123456789abcdef", position: 17))
    // Memos read as before and new ones land in personal.
    XCTAssertEqual(try store.summaries().count, 3)
    XCTAssertEqual(try store.create(MemoDraft(title: "t", body: "after"), now: 5).notebook, .migrated)
    XCTAssertEqual(try store.notebookSummaries().map(\.memos), [4])
    if version == 4 {
      // Schema 5's horizon, filled from the old knowledge, bounds what peers may claim.
      XCTAssertEqual(try store.horizon()["0123456789abcdef0123456789abcdef"], 17)
    }
  }

  func testNamesAreUniqueRegardlessOfCaseAndValidated() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let family = try store.createNotebook(named: "Family", now: 1)
    assertMemoError(.invalidInput, try store.createNotebook(named: "family", now: 2))
    assertMemoError(.invalidInput, try store.createNotebook(named: " padded", now: 2))
    assertMemoError(.invalidInput, try store.createNotebook(named: "-x", now: 2))
    assertMemoError(.invalidInput, try store.createNotebook(named: "bell\u{7}", now: 2))
    assertMemoError(.invalidInput, try store.renameNotebook("family", to: "PERSONAL", now: 2))
    XCTAssertEqual(try store.findNotebook("FAMILY").id, family.id)
    XCTAssertEqual(try store.findNotebook(String(family.id.rawValue.prefix(6))).id, family.id)
    XCTAssertEqual(try store.renameNotebook("family", to: "kin", now: 2).name, "kin")
    assertMemoError(.notFound, try store.findNotebook("family"))
  }

  func testMemosGoWhereTheyAreToldAndMoveAsANewRevision() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let family = try store.createNotebook(named: "family", now: 1)
    let mine = try store.create(MemoDraft(title: "mine", body: "a"), now: 2)
    let ours = try store.create(MemoDraft(title: "ours", body: "b"), now: 3, in: family.id)
    XCTAssertEqual(try store.listing(notebook: family.id).map(\.id), [ours.id])
    XCTAssertEqual(try store.search("a", notebook: family.id).map(\.id), [])
    XCTAssertEqual(try store.search("a").map(\.id), [mine.id])
    let moved = try store.move(mine.id, to: family.id, now: 4)
    XCTAssertEqual(moved.revision, 2)
    XCTAssertEqual(moved.notebook, family.id)
    XCTAssertTrue(try XCTUnwrap(moved.clock).covers(try XCTUnwrap(mine.clock)))
    XCTAssertEqual(Set(try store.listing(notebook: family.id).map(\.id)), [mine.id, ours.id])
    // Moving where it already is changes nothing.
    XCTAssertEqual(try store.move(mine.id, to: family.id, now: 5).revision, 2)
  }

  func testDeleteRefusesMemosAndTheDefaultUnlessMoved() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let family = try store.createNotebook(named: "family", now: 1)
    let memo = try store.create(MemoDraft(title: "x", body: "y"), now: 2, in: family.id)
    assertMemoError(.invalidInput, try store.deleteNotebook("family", moveTo: nil, now: 3))
    assertMemoError(.invalidInput, try store.deleteNotebook("personal", moveTo: nil, now: 3))
    let (deleted, moved) = try store.deleteNotebook("family", moveTo: "personal", now: 3)
    XCTAssertEqual(deleted.id, family.id)
    XCTAssertEqual(moved, 1)
    XCTAssertEqual(try store.memo(memo.id).notebook, try store.defaultNotebook().id)
    XCTAssertEqual(try store.notebooks().map(\.name), ["personal"])
    XCTAssertTrue(try XCTUnwrap(store.notebook(family.id)).isDeleted)
    XCTAssertEqual(try store.keyring(family.id).keys.count, 0)
  }

  /// Unsharing a member rotates the key (a new generation, the newest); unsharing a relay
  /// does not (it never had the key).
  func testUnshareRotatesTheKeyOnlyForAMember() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let family = try store.createNotebook(named: "family", now: 1)
    let d = TestDevices.id(named: "d")
    let s = TestDevices.id(named: "s")
    XCTAssertTrue(try store.share(family.id, with: d, as: .member, now: 2))
    XCTAssertFalse(try store.share(family.id, with: d, as: .member, now: 2))
    try store.share(family.id, with: s, as: .relay, now: 2)
    let before = try XCTUnwrap(store.keyring(family.id).current)
    XCTAssertEqual(try store.unshare(family.id, from: s, now: 3), UnshareResult(role: .relay, rotated: false))
    XCTAssertEqual(try store.keyring(family.id).current?.id, before.id)
    XCTAssertEqual(try store.unshare(family.id, from: d, now: 4), UnshareResult(role: .member, rotated: true))
    let after = try XCTUnwrap(store.keyring(family.id).current)
    XCTAssertEqual(after.generation, 2)
    XCTAssertNotEqual(after.id, before.id)
    XCTAssertEqual(try store.keyring(family.id).keys.count, 2)
    XCTAssertEqual(try store.members(of: family.id), [])
    XCTAssertEqual(try store.members(of: family.id, includingRemoved: true).map(\.role), [.removed, .removed])
    assertMemoError(.notFound, try store.unshare(family.id, from: d, now: 5))
  }

  /// Notebook keys are sealed under the device key: the raw bytes are nowhere in the data
  /// directory, a key row moved to another notebook fails to open, and a locked node
  /// cannot read them.
  func testNotebookKeysAreSealedUnderTheDeviceKey() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let family = try store.createNotebook(named: "family", now: 1)
    let key = try XCTUnwrap(store.keyring(family.id).current)
    let raw = key.material.withUnsafeBytes { Array($0) }
    XCTAssertFalse(try node.rawDataBytes().contains(bytes: raw))
    let personal = try store.defaultNotebook().id
    try node.tamper(
      "UPDATE notebook_keys SET key = (SELECT key FROM notebook_keys WHERE notebook = '\(family.id.rawValue)') "
        + "WHERE notebook = '\(personal.rawValue)'")
    assertMemoError(.integrity, try node.open().keyring(personal))
  }

  func testARelayedNotebookTakesNoMemosAndNoMemberShare() throws {
    let storeNode = try TemporaryNode()
    let store = try storeNode.open()
    let relayed = try XCTUnwrap(NotebookID("00112233445566778899aabbccddeeff"))
    try store.insertNotebook(relayed, name: nil, role: .relay, now: 1)
    assertMemoError(.invalidInput, try store.create(MemoDraft(title: "x", body: "y"), now: 2, in: relayed))
    // Only a member changes who is in a notebook (an op it signs): a relay gives it to nobody.
    for role in [NotebookRole.member, .relay] {
      assertMemoError(.invalidInput, try store.share(relayed, with: TestDevices.id(named: "c"), as: role, now: 2))
    }
    XCTAssertEqual(try store.findNotebook("00112233").displayName, "notebook 00112233…")
  }
}
