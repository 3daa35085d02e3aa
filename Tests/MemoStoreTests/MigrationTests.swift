import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// Every older schema has a committed fixture; migrating it must keep every row readable,
/// including undelivered outbox entries.
final class MigrationTests: XCTestCase {
  /// The memos every fixture was made with (see `makeFixtureNode`).
  static let fixtureMemos: [MemoDraft] = [
    MemoDraft(title: "Groceries", body: "milk\neggs\n", tags: ["home"]),
    MemoDraft(title: "", body: "Router admin password is in the safe", tags: ["lab", "network"], isPrivate: true),
    MemoDraft(title: "Ünïcode ✓", body: "héllo wörld 🌍"),
    MemoDraft(title: "to be deleted", body: "gone"),
  ]
  /// The queues' rows as written, peers and all (the fixtures name no real device).
  static let fixtureOutbox = [
    QueueRow(
      id: "entry-1", peer: "device-b", payload: Array("pending memo one".utf8),
      time: 1_700_000_000_000),
    QueueRow(
      id: "entry-2", peer: "device-c", payload: Array("pending memo two".utf8),
      time: 1_700_000_000_001),
  ]
  static let fixtureInbox = [
    QueueRow(
      id: "in-1", peer: "device-b", payload: Array("received, not accepted".utf8),
      time: 1_700_000_000_002)
  ]

  /// A node at schema `version` holding the fixture memos and queues, written by this
  /// build's code. Only meaningful while `version` is the current schema (the committed
  /// fixtures of older versions were written by the code of their time).
  static func makeFixtureNode(version: Int) throws -> TemporaryNode {
    let node = try TemporaryNode()
    let store = try MemoStore.openForFixture(
      paths: node.paths, secrets: VaultStoreSecrets(paths: node.paths), schemaVersion: version)
    let memos = try store.createMany(fixtureMemos, now: 1_700_000_000_000)
    try store.update(memos[0].id, MemoChange(body: "milk\neggs\nbread\n"), now: 1_700_000_000_500)
    try store.delete(memos[3].id, now: 1_700_000_000_600)
    for entry in fixtureOutbox { try store.enqueue(entry, in: .outbox) }
    for entry in fixtureInbox { try store.enqueue(entry, in: .inbox) }
    if version >= 2 { try node.tamper("UPDATE memos SET pinned = 1 WHERE id = '\(memos[2].id.rawValue)'") }
    return node
  }

  func testVersion1FixtureMigratesKeepingEveryRow() throws {
    try assertFixtureMigrates(version: 1)
  }

  func testVersion2FixtureMigratesKeepingEveryRow() throws {
    try assertFixtureMigrates(version: 2)
  }

  func testVersion3FixtureOpensKeepingEveryRow() throws {
    try assertFixtureMigrates(version: 3)
  }

  func testVersion4FixtureOpensKeepingEveryRow() throws {
    try assertFixtureMigrates(version: 4)
  }

  func testVersion6FixtureOpensKeepingEveryRow() throws {
    try assertFixtureMigrates(version: 6)
  }

  /// Schema 11 adds the last refusal of each peer: a peer synced before has none, and the
  /// store records one, which replaces the one before.
  func testVersion10FixtureOpensWithNoRefusalAndRecordsOne() throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: 10, into: node)
    let peer = TestDevices.id(named: "laptop")
    try node.tamper("INSERT INTO sync_peers (device, acked, last_synced) VALUES ('\(peer.compact)', 3, 7)")
    let store = try node.open()
    let before = try XCTUnwrap(try store.syncPeerRecords().first { $0.device == peer })
    XCTAssertEqual(before.lastSynced, 7)
    XCTAssertNil(before.lastRefusal)
    try store.recordRefusal(of: peer, SyncViolation(.malformed, "first"), now: 10)
    try store.recordRefusal(
      of: peer, SyncViolation(.ownOrigin, String(repeating: "x", count: 5000)), now: 11)
    let after = try XCTUnwrap(try store.syncPeerRecords().first { $0.device == peer })
    XCTAssertEqual(after.lastRefusal?.reason, "own-origin")
    XCTAssertEqual(after.lastRefusal?.at, 11)
    XCTAssertEqual(after.lastRefusal?.detail.utf8.count, SyncRefusalRecord.maximumDetailBytes, "bounded")
    XCTAssertEqual(after.lastSynced, 7, "the rest of the row stays")
  }

  /// Schema 12 keeps a body once, in its record. A store written by the code of schema 11
  /// (every body sealed in its row too) is moved in batches: every memo reads as before
  /// (show, search, history, export), every row's column is emptied but the one whose
  /// record no longer opens, which keeps its own copy.
  func testSchema12MovesEveryBodyIntoItsRecordAndReadsThemAsBefore() throws {
    let node = try TemporaryNode()
    let old = try MemoStore.openForFixture(
      paths: node.paths, secrets: VaultStoreSecrets(paths: node.paths), schemaVersion: 11)
    let count = MemoStore.bodyMigrationBatch * 2 + 17
    let drafts = (0..<count).map { index in
      MemoDraft(
        title: "memo \(index)", body: "body \(index) " + String(repeating: "lorem ipsum ", count: 80),
        tags: index % 3 == 0 ? ["three"] : [], isPrivate: index % 7 == 0)
    }
    let made = try old.createMany(drafts, now: 1_700_000_000_000)
    try old.update(made[1].id, MemoChange(body: "second revision of one"), now: 1_700_000_000_100)
    try old.delete(made[2].id, now: 1_700_000_000_200)
    let stray = made[5].id
    XCTAssertGreaterThan(try node.column("body", of: stray).count, 900, "schema 11 seals the body in the row")
    // A record that no longer opens: its row must keep the copy it has.
    var record = try node.column("record", of: stray)
    record[record.count - 1] ^= 0x01
    try node.setColumn("record", of: stray, to: record)

    let store = try node.open()
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try db.scalarInt("PRAGMA user_version"), 12)
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM meta WHERE key = 'body_copies'"), 0, "finished")
    XCTAssertEqual(
      try db.scalarInt("SELECT count(*) FROM memos WHERE length(body) > 0 AND deleted = 0"), 1,
      "only the row whose record does not open keeps its copy")
    XCTAssertEqual(try store.memo(stray).body, drafts[5].body)
    XCTAssertEqual(try store.memo(made[1].id).body, "second revision of one")
    var exported = 0
    try store.forEachMemo { memo in
      exported += 1
      if let index = made.firstIndex(where: { $0.id == memo.id }), index != 1 {
        XCTAssertEqual(memo.body, drafts[index].body)
      }
    }
    XCTAssertEqual(exported, count - 1)
    XCTAssertEqual(try store.search("body 1999 ").map(\.id), [made[1999].id], "bodies are searched in records")
    XCTAssertEqual(
      try store.history(of: made[1].id).map(\.memo.body), [drafts[1].body, "second revision of one"])
    // Edited after the move: the revision it supersedes is kept as history, readable.
    try store.update(made[3].id, MemoChange(body: "after the move"), now: 1_700_000_000_300)
    XCTAssertEqual(try store.history(of: made[3].id).map(\.memo.body), [drafts[3].body, "after the move"])
  }

  /// Opening goes on with the move wherever it stopped: rows already moved, rows not yet,
  /// and the marker still there, as a kill between two batches leaves them.
  func testAnInterruptedMoveOfBodiesGoesOnAtTheNextOpening() throws {
    let node = try TemporaryNode()
    let old = try MemoStore.openForFixture(
      paths: node.paths, secrets: VaultStoreSecrets(paths: node.paths), schemaVersion: 11)
    let made = try old.createMany((0..<40).map { MemoDraft(title: "t\($0)", body: "body \($0)") }, now: 1)
    let store = try node.open()
    XCTAssertEqual(try store.memo(made[0].id).body, "body 0")
    // Half the rows back as schema 11 wrote them, and the marker back.
    let half = made.prefix(20).map { "'\($0.id.rawValue)'" }.joined(separator: ",")
    let sealed = try made.prefix(20).map { memo in (memo.id, try store.sealedFields(of: try store.memo(memo.id)).body) }
    for (id, body) in sealed { try node.setColumn("body", of: id, to: body) }
    try node.tamper("INSERT INTO meta (key, value) VALUES ('body_copies', X'31')")
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM memos WHERE length(body) > 0 AND id IN (\(half))"), 20)
    let reopened = try node.open()
    for (index, memo) in made.enumerated() { XCTAssertEqual(try reopened.memo(memo.id).body, "body \(index)") }
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM memos WHERE length(body) > 0"), 0)
    XCTAssertEqual(try db.scalarInt("SELECT count(*) FROM meta WHERE key = 'body_copies'"), 0)
  }

  /// Schema 7 fills each notebook's horizon from the dots already there (a row another
  /// replica made, a record relayed for another notebook), each in its own notebook only.
  func testSchema7FillsEachNotebooksHorizonFromItsOwnRows() throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: 6, into: node)
    let other = ReplicaID(String(repeating: "a", count: 32))!
    let relayedNotebook = String(repeating: "b", count: 32)
    try node.tamper(
      "UPDATE memos SET dot_origin = '\(other)', dot_seq = 77 WHERE id = (SELECT min(id) FROM memos); "
        + "INSERT INTO relayed (memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, feed_seq, received) "
        + "VALUES ('\(MemoID().rawValue)', '\(other)', 90, '\(relayedNotebook)', X'00', 'k', X'00', 1, 1)")
    let store = try node.open()
    let personal = try store.defaultNotebook().id
    XCTAssertEqual(try store.horizon(of: personal)[other], 77)
    XCTAssertEqual(try store.horizon(of: XCTUnwrap(NotebookID(relayedNotebook)))[other], 90)
  }

  /// Schema 3's listing copies are made for every live memo not marked private, so after
  /// the upgrade a locked node still lists them.
  func testMigratedTitlesAreListableWhileLocked() throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: 2, into: node)
    let keyring = FakeKeyring()
    let keys = DeviceKeys(paths: node.paths, keyring: keyring, kdfParameters: ProtectionStoreTests.fastKDF)
    _ = try MemoStore.open(paths: node.paths, keys: keys)
    let passphrase = SecureBytes(copying: Array("fixture passphrase".utf8))
    _ = try keys.protect(
      .afterFirstUnlock, idleTimeout: nil, changePassphrase: false, currentPassphrase: { passphrase },
      newPassphrase: { passphrase })
    try keys.lock()
    let listing = try MemoStore.open(paths: node.paths, keys: keys).listing()
    XCTAssertEqual(Set(listing.compactMap(\.title)), ["Groceries", "Ünïcode ✓"])
    XCTAssertEqual(listing.filter { $0.title == nil }.map(\.isPrivate), [true])
  }

  private func assertFixtureMigrates(version: Int, file: StaticString = #filePath, line: UInt = #line) throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: version, into: node)
    let before = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try before.scalarInt("PRAGMA user_version"), Int64(version), file: file, line: line)
    let rowsBefore = try ["memos", "outbox", "inbox"].map { try before.scalarInt("SELECT count(*) FROM \($0)") }

    let store = try node.open()
    XCTAssertEqual(store.schemaVersion, Schema.currentVersion, file: file, line: line)
    let after = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try after.scalarInt("PRAGMA user_version"), Int64(Schema.currentVersion), file: file, line: line)
    let rowsAfter = try ["memos", "outbox", "inbox"].map { try after.scalarInt("SELECT count(*) FROM \($0)") }
    XCTAssertEqual(rowsBefore, rowsAfter, file: file, line: line)
    XCTAssertEqual(rowsBefore, [4, 2, 1], file: file, line: line)

    let summaries = try store.summaries()
    XCTAssertEqual(
      Set(summaries.map(\.title)), ["Groceries", "Router admin password is in the safe", "Ünïcode ✓"], file: file,
      line: line)
    let groceries = try store.memo(try XCTUnwrap(summaries.first { $0.title == "Groceries" }).id)
    XCTAssertEqual(groceries.body, "milk\neggs\nbread\n", file: file, line: line)
    XCTAssertEqual(groceries.revision, 2, file: file, line: line)
    XCTAssertTrue(try XCTUnwrap(summaries.first { $0.tags == ["lab", "network"] }).isPrivate, file: file, line: line)
    XCTAssertEqual(try store.rows(in: .outbox), Self.fixtureOutbox, file: file, line: line)
    XCTAssertEqual(try store.rows(in: .inbox), Self.fixtureInbox, file: file, line: line)
    if version >= 2 {
      XCTAssertEqual(try after.scalarInt("SELECT count(*) FROM memos WHERE pinned = 1"), 1, file: file, line: line)
    }
    XCTAssertEqual(
      try after.scalarInt("SELECT count(*) FROM memos WHERE listing_title IS NOT NULL"), 2, file: file, line: line)
    // Schema 4: every row is a head with a dot, a clock and a feed position, counted in
    // the replica's knowledge, so the memos replicate like any made later.
    XCTAssertEqual(
      try after.scalarInt(
        "SELECT count(*) FROM memos WHERE dot_origin IS NULL OR dot_seq IS NULL OR clock IS NULL OR feed_seq IS NULL"),
      0, file: file, line: line)
    // Schema 8: the replica made those revisions is kept as the legacy one (its knowledge
    // stays), and the store goes on under a replica id derived from its device.
    let legacy = try XCTUnwrap(try store.legacyReplicaID(), file: file, line: line)
    XCTAssertNotEqual(legacy, store.replicaID, file: file, line: line)
    XCTAssertEqual(
      try store.knowledge()[legacy], UInt64(try after.scalarInt("SELECT max(dot_seq) FROM memos")), file: file,
      line: line)
    XCTAssertEqual(
      try store.knowledge()[store.replicaID], 0, "the derived replica starts afresh", file: file, line: line)
    // Schema 5: the horizon covers the dot of every row held before it, so a peer's
    // knowledge of them can be adopted (later, this replica's own dots are bounded by its
    // sequence instead).
    if version < 5 {
      let horizon = try store.horizon()
      XCTAssertTrue(
        try store.allHeadRows().allSatisfy { $0.dot.map(horizon.contains) ?? false }, file: file, line: line)
    }
    // Schema 7: so does the horizon of each row's notebook (this replica's own dots are
    // bounded by its sequence instead).
    XCTAssertTrue(
      try store.allHeadRows().allSatisfy { row in
        guard let dot = row.dot, let notebook = row.notebook else { return false }
        return try dot.origin == store.replicaID || store.horizon(of: notebook).contains(dot)
      }, file: file, line: line)
    // The migrated store keeps working: new memos use the new schema.
    try store.create(MemoDraft(title: "after", body: "migration"), now: 1_800_000_000_000)
    XCTAssertEqual(try store.count(), 4, file: file, line: line)
  }

  /// Each committed fixture has exactly the schema (tables, columns, indexes) that the
  /// migrations build for its version. Set MEMO_PEER_WRITE_FIXTURES=1 to write the fixture of
  /// the *current* version, once, when it is released and before the next migration exists;
  /// never to paper over a change to an older one.
  func testEveryFixtureMatchesTheSchemaOfItsVersion() throws {
    if ProcessInfo.processInfo.environment["MEMO_PEER_WRITE_FIXTURES"] == "1" {
      let node = try Self.makeFixtureNode(version: Schema.currentVersion)
      let target =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/schema-v\(Schema.currentVersion)"
      try SchemaFixture.dump(node, to: target)
    }
    func schemaLines(_ path: String) throws -> [String] {
      try String(contentsOfFile: path + "/memos.sql", encoding: .utf8).split(separator: "\n")
        .filter { !$0.hasPrefix("INSERT") }.map(String.init)
    }
    for version in 1...Schema.currentVersion {
      let fixture = try SchemaFixture.directory(version: version)
      guard FileManager.default.fileExists(atPath: fixture) else {
        XCTFail("schema \(version) has no fixture under Fixtures/schema-v\(version)")
        continue
      }
      let node = try TemporaryNode()
      _ = try MemoStore.openForFixture(
        paths: node.paths, secrets: VaultStoreSecrets(paths: node.paths), schemaVersion: version)
      let scratch = node.root + "/dump"
      try SchemaFixture.dump(node, to: scratch)
      XCTAssertEqual(try schemaLines(scratch), try schemaLines(fixture), "schema \(version)")
    }
  }
}
