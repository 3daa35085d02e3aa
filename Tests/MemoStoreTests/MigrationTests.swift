import Foundation
import MemoCore
import XCTest

@testable import MemoStore

/// Every older schema has a committed fixture; migrating it must keep every row readable,
/// including undelivered outbox entries.
final class MigrationTests: XCTestCase {
  /// The memos the version-1 fixture was made with (see `makeVersion1Node`).
  static let fixtureMemos: [MemoDraft] = [
    MemoDraft(title: "Groceries", body: "milk\neggs\n", tags: ["home"]),
    MemoDraft(title: "", body: "Router admin password is in the safe", tags: ["lab", "network"], isPrivate: true),
    MemoDraft(title: "Ünïcode ✓", body: "héllo wörld 🌍"),
    MemoDraft(title: "to be deleted", body: "gone"),
  ]
  static let fixtureOutbox = [
    QueuedPayload(id: "entry-1", peer: "device-b", payload: Array("pending memo one".utf8), time: 1_700_000_000_000),
    QueuedPayload(id: "entry-2", peer: "device-c", payload: Array("pending memo two".utf8), time: 1_700_000_000_001),
  ]
  static let fixtureInbox = [
    QueuedPayload(id: "in-1", peer: "device-b", payload: Array("received, not accepted".utf8), time: 1_700_000_000_002)
  ]

  static func makeVersion1Node() throws -> TemporaryNode {
    let node = try TemporaryNode()
    let store = try MemoStore.openForFixture(paths: node.paths, schemaVersion: 1)
    let memos = try store.createMany(fixtureMemos, now: 1_700_000_000_000)
    try store.update(memos[0].id, MemoChange(body: "milk\neggs\nbread\n"), now: 1_700_000_000_500)
    try store.delete(memos[3].id, now: 1_700_000_000_600)
    for entry in fixtureOutbox { try store.enqueue(entry, in: .outbox) }
    for entry in fixtureInbox { try store.enqueue(entry, in: .inbox) }
    return node
  }

  func testVersion1FixtureMigratesKeepingEveryRow() throws {
    let node = try TemporaryNode()
    try SchemaFixture.load(version: 1, into: node)
    let before = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try before.scalarInt("PRAGMA user_version"), 1)
    let rowsBefore = try ["memos", "outbox", "inbox", "meta"].map { try before.scalarInt("SELECT count(*) FROM \($0)") }

    let store = try node.open()
    XCTAssertEqual(store.schemaVersion, Schema.currentVersion)
    let after = try SQLiteConnection(path: node.paths.databasePath, create: false)
    XCTAssertEqual(try after.scalarInt("PRAGMA user_version"), Int64(Schema.currentVersion))
    let rowsAfter = try ["memos", "outbox", "inbox", "meta"].map { try after.scalarInt("SELECT count(*) FROM \($0)") }
    XCTAssertEqual(rowsBefore, rowsAfter)
    XCTAssertEqual(rowsBefore, [4, 2, 1, 2])

    let summaries = try store.summaries()
    XCTAssertEqual(Set(summaries.map(\.title)), ["Groceries", "Router admin password is in the safe", "Ünïcode ✓"])
    let groceries = try store.memo(try XCTUnwrap(summaries.first { $0.title == "Groceries" }).id)
    XCTAssertEqual(groceries.body, "milk\neggs\nbread\n")
    XCTAssertEqual(groceries.revision, 2)
    XCTAssertTrue(try XCTUnwrap(summaries.first { $0.tags == ["lab", "network"] }).isPrivate)
    XCTAssertEqual(try store.entries(in: .outbox), Self.fixtureOutbox)
    XCTAssertEqual(try store.entries(in: .inbox), Self.fixtureInbox)
    // The migrated store keeps working: new memos use the new schema.
    try store.create(MemoDraft(title: "after", body: "migration"), now: 1_800_000_000_000)
    XCTAssertEqual(try store.count(), 4)
  }

  /// The committed fixture is what version 1 of the code writes. Set MEMO_PEER_WRITE_FIXTURES=1
  /// to regenerate it (only ever for a new version, never to paper over a change).
  func testVersion1FixtureMatchesTheVersion1Schema() throws {
    let node = try Self.makeVersion1Node()
    let scratch = node.root + "/dump"
    try SchemaFixture.dump(node, to: scratch)
    if ProcessInfo.processInfo.environment["MEMO_PEER_WRITE_FIXTURES"] == "1" {
      let target = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/schema-v1"
      try SchemaFixture.dump(node, to: target)
    }
    func schemaLines(_ path: String) throws -> [String] {
      try String(contentsOfFile: path + "/memos.sql", encoding: .utf8).split(separator: "\n")
        .filter { !$0.hasPrefix("INSERT") }.map(String.init)
    }
    XCTAssertEqual(try schemaLines(scratch), try schemaLines(try SchemaFixture.directory(version: 1)))
  }
}
