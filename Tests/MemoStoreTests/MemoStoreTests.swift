import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore

final class MemoStoreTests: XCTestCase {
  /// `memos.origin` is read as a typed origin: a row that names neither a replica nor a
  /// device is reported as damage, never taken for one (nor a crash).
  func testAStoredOriginThatIsNeitherIsDamage() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let memo = try store.create(MemoDraft(title: "t", body: "b"), now: 1_000)
    for bad in ["r", TestDevices.id(named: "B").description, store.replicaID.rawValue.uppercased()] {
      try store.db.execute("UPDATE memos SET origin = '\(bad)' WHERE id = '\(memo.id)'")
      assertMemoError(.integrity, try store.memo(memo.id)) {
        XCTAssertTrue($0.message.contains("neither a replica nor a device"), $0.message)
      }
    }
    try store.db.execute("UPDATE memos SET origin = '\(TestDevices.id(named: "B").compact)' WHERE id = '\(memo.id)'")
    XCTAssertEqual(try store.memo(memo.id).origin, .device(TestDevices.id(named: "B")))
  }

  func testCreateListShowUpdateDeleteRoundTrip() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let first = try store.create(MemoDraft(title: "", body: "Buy milk\nand eggs", tags: ["Home"]), now: 1_000)
    let second = try store.create(MemoDraft(title: "Plan", body: "ship it", isPrivate: true), now: 2_000)
    XCTAssertEqual(try store.summaries().map(\.id), [second.id, first.id])
    XCTAssertEqual(try store.summaries(tag: "HOME").map(\.id), [first.id])
    XCTAssertEqual(try store.memo(first.id).body, "Buy milk\nand eggs")
    XCTAssertEqual(try store.memo(first.id).title, "Buy milk")
    XCTAssertEqual(try store.memo(first.id).origin, .replica(store.replicaID))

    let edited = try store.update(first.id, MemoChange(body: "Buy oat milk"), now: 3_000)
    XCTAssertEqual(edited.revision, 2)
    XCTAssertEqual(try store.memo(first.id), edited)
    XCTAssertEqual(try store.update(first.id, MemoChange(body: "Buy oat milk"), now: 4_000).revision, 2)

    try store.delete(second.id, now: 5_000)
    assertMemoError(.notFound, try store.memo(second.id))
    XCTAssertEqual(try store.count(), 1)
    // Reopening finds the same data, with the same key.
    let reopened = try node.open()
    XCTAssertEqual(try reopened.memo(first.id), edited)
    XCTAssertEqual(reopened.replicaID, store.replicaID)
  }

  func testListingReadsOnlyTheCoveringIndex() throws {
    let node = try TemporaryNode()
    _ = try node.open()
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    let plan = try db.prepare("EXPLAIN QUERY PLAN " + MemoStore.listingQuery)
    var steps: [String] = []
    while try plan.step() { steps.append(plan.text(3)) }
    XCTAssertEqual(steps, ["SEARCH memos USING COVERING INDEX memos_for_listing (deleted=?)"])
  }

  func testStreamedQueriesAreOrderedByTheListingIndex() throws {
    let node = try TemporaryNode()
    _ = try node.open()
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    for query in [MemoStore.notebookListingQuery, MemoStore.searchQuery, MemoStore.notebookSearchQuery] {
      let plan = try db.prepare("EXPLAIN QUERY PLAN " + query)
      var steps: [String] = []
      while try plan.step() { steps.append(plan.text(3)) }
      XCTAssertEqual(steps.count, 1, "\(query): \(steps)")
      XCTAssertTrue(steps[0].hasPrefix("SEARCH memos USING "), "\(query): \(steps)")
      XCTAssertTrue(steps[0].contains("INDEX memos_for_listing (deleted=?)"), "\(query): \(steps)")
      XCTAssertFalse(steps.contains { $0.contains("TEMP B-TREE") }, "\(query): \(steps)")
    }
  }

  func testListingAndSearchStreamNewestFirstWithFilters() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let family = try store.createNotebook(named: "Family", now: 1)
    var made: [Memo] = []
    // Pairs share a time, so the order among them is the id's.
    for index in 0..<12 {
      let draft = MemoDraft(
        title: "memo \(index)", body: index % 3 == 0 ? "has the needle" : "plain",
        tags: index % 2 == 0 ? ["even"] : ["odd"])
      made.append(try store.create(draft, now: Timestamp(100 + index / 2), in: index % 4 == 0 ? family.id : nil))
    }
    try store.delete(made[5].id, now: 50)
    let live = made.filter { $0.id != made[5].id }
    let newestFirst = live.sorted { ($0.updated, $1.id) > ($1.updated, $0.id) }

    var streamed: [MemoListing] = []
    try store.forEachListing { streamed.append($0) }
    XCTAssertEqual(streamed.map(\.id), newestFirst.map(\.id))
    XCTAssertEqual(streamed, try store.listing())
    var summaries: [MemoSummary] = []
    try store.forEachSummary(tag: "EVEN") { summaries.append($0) }
    XCTAssertEqual(summaries.map(\.id), newestFirst.filter { $0.tags == ["even"] }.map(\.id))
    XCTAssertEqual(summaries, try store.summaries(tag: "even"))
    var inFamily: [MemoListing] = []
    try store.forEachListing(notebook: family.id) { inFamily.append($0) }
    XCTAssertEqual(inFamily.map(\.id), newestFirst.filter { $0.notebook == family.id }.map(\.id))

    // Search: a title or tag match needs no body; a body match is found too; same order.
    var found: [MemoSummary] = []
    try store.search("needle") { found.append($0) }
    XCTAssertEqual(found.map(\.id), newestFirst.filter { $0.body.contains("needle") }.map(\.id))
    XCTAssertEqual(found, try store.search("needle"))
    XCTAssertEqual(try store.search("ODD").map(\.id), newestFirst.filter { $0.tags == ["odd"] }.map(\.id))
    XCTAssertEqual(
      try store.search("memo", notebook: family.id).map(\.id), newestFirst.filter { $0.notebook == family.id }.map(\.id)
    )
    XCTAssertEqual(try found.first.map { try store.memo($0.id).summary }, found.first)

    // A body that throws stops the stream there.
    struct Stop: Error {}
    var seen = 0
    XCTAssertThrowsError(
      try store.forEachListing { _ in
        seen += 1
        if seen == 2 { throw Stop() }
      }
    ) { XCTAssertTrue($0 is Stop) }
    XCTAssertEqual(seen, 2)
  }

  func testSearchIsCaseInsensitiveOverTitleTagsAndBody() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let a = try store.create(MemoDraft(title: "Alpha", body: "the QUICK fox"), now: 1)
    let b = try store.create(MemoDraft(title: "Quick notes", body: "x"), now: 2)
    let c = try store.create(MemoDraft(title: "c", body: "y", tags: ["quickly"]), now: 3)
    _ = try store.create(MemoDraft(title: "d", body: "nothing"), now: 4)
    XCTAssertEqual(Set(try store.search("quick").map(\.id)), [a.id, b.id, c.id])
    XCTAssertEqual(try store.search("fox").map(\.id), [a.id])
    XCTAssertEqual(try store.search("absent"), [])
  }

  /// `search` opens memos on several threads, a batch at a time: across batches and
  /// threads it finds what a plain scan finds, in the listing's order; a field that fails
  /// to open is thrown after every match before it, and a body that throws stops it.
  func testSearchOverManyBatchesIsInTheListingsOrder() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let count = SearchBatch.maximumRows * 2 + 300
    let drafts = (0..<count).map { index in
      MemoDraft(
        title: index % 7 == 0 ? "Needle in the title \(index)" : "memo \(index)",
        body: index % 5 == 0 ? "a NEEDLE in the body" : "hay \(index)", tags: index % 11 == 0 ? ["needles"] : [])
    }
    // Ten times of a hundred memos each: the order among equal times is the id's.
    for start in stride(from: 0, to: count, by: 100) {
      try store.createMany(Array(drafts[start..<min(count, start + 100)]), now: Timestamp(1000 + start / 230))
    }
    var memos: [Memo] = []
    try store.forEachMemo { memos.append($0) }
    let listed = try store.listing().map(\.id)
    let byID = Dictionary(uniqueKeysWithValues: memos.map { ($0.id, $0) })
    let expected = listed.filter { id in
      let memo = byID[id]!
      return ([memo.title, memo.body] + memo.tags).contains { $0.lowercased().contains("needle") }
    }
    XCTAssertGreaterThan(expected.count, count / 3)
    let found = try store.search("nEEdle")
    XCTAssertEqual(found.map(\.id), expected)
    XCTAssertEqual(found, expected.map { byID[$0]!.summary })

    // Stopped by the body after 5 memos: no more are handed on.
    struct Stop: Error {}
    var seen = 0
    XCTAssertThrowsError(
      try store.search("needle") { _ in
        seen += 1
        if seen == 5 { throw Stop() }
      }
    ) { XCTAssertTrue($0 is Stop) }
    XCTAssertEqual(seen, 5)

    // A memo of the second batch whose body fails to open: every match before it, then
    // the integrity error naming it.
    let broken = listed[(SearchBatch.maximumRows + 40)...].first { id in
      !([byID[id]!.title] + byID[id]!.tags).contains { $0.lowercased().contains("needle") }
    }!
    let donor = listed[0]
    try node.tamper(
      "UPDATE memos SET record = (SELECT record FROM memos WHERE id = '\(donor)') WHERE id = '\(broken)'")
    var before: [MemoID] = []
    assertMemoError(.integrity, try node.open().search("needle") { before.append($0.id) }) {
      XCTAssertTrue($0.message.contains(broken.rawValue))
    }
    let brokenIndex = listed.firstIndex(of: broken)!
    XCTAssertEqual(before, expected.filter { listed.firstIndex(of: $0)! < brokenIndex })
  }

  func testPrefixesResolveLikeGit() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    // 2,000 memos: some four-digit prefix is shared (the chance that none is, of 65,536
    // prefixes, is below 10^-13).
    let memos = try store.createMany((0..<2000).map { MemoDraft(title: "m\($0)", body: "b") }, now: 1)
    let target = memos[0]
    XCTAssertEqual(try store.resolve(target.id.rawValue), target.id)
    XCTAssertEqual(try store.resolve(String(target.id.rawValue.prefix(12)).uppercased()), target.id)
    // Fewer than four characters open nothing, however many memos start with them.
    for short in 1..<IDPrefix.minimumToResolve {
      assertMemoError(.ambiguousID, try store.resolve(String(target.id.rawValue.prefix(short))))
    }
    // A shared prefix lists the candidates.
    let counts = Dictionary(grouping: memos) { $0.id.rawValue.prefix(4) }
    let (prefix, shared) = try XCTUnwrap(counts.first { $0.value.count > 1 })
    assertMemoError(.ambiguousID, try store.resolve(String(prefix))) { error in
      for memo in shared.prefix(10) { XCTAssertTrue(error.message.contains(memo.id.rawValue), error.message) }
      XCTAssertFalse(error.message.contains("m0 "))
    }
    let unused = try XCTUnwrap(
      (0..<65536).lazy.map { String(format: "%04x", $0) }.first { counts[Substring($0)] == nil })
    assertMemoError(.notFound, try store.resolve(unused + "0000"))
  }

  func testUniqueBodyNeverAppearsInRawDataFiles() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let marker = "UNIQUE-\(UUID().uuidString)-BODY"
    let memo = try store.create(MemoDraft(title: "title-\(marker)", body: marker, tags: ["tag-marker"]), now: 1)
    try store.update(memo.id, MemoChange(body: marker + " edited"), now: 2)
    let open = try node.rawDataBytes()  // database, WAL and shm while the store is open
    XCTAssertFalse(open.contains(bytes: Array(marker.utf8)))
    XCTAssertFalse(open.contains(bytes: Array("tag-marker".utf8)))
    XCTAssertTrue(open.contains(bytes: Array(memo.id.rawValue.utf8)), "the scan does see plaintext ids")
  }

  // MARK: - Tampering

  func testFlippedByteFailsNamingTheMemo() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let memo = try store.create(MemoDraft(title: "t", body: "the body"), now: 1)
    // The body is kept once, in the memo's record (schema 12).
    XCTAssertEqual(try node.column("body", of: memo.id), [])
    var record = try node.column("record", of: memo.id)
    record[20] ^= 0x01
    try node.setColumn("record", of: memo.id, to: record)
    assertMemoError(.integrity, try node.open().memo(memo.id)) { error in
      XCTAssertTrue(error.message.contains(memo.id.rawValue))
      XCTAssertFalse(error.message.contains("the body"))
    }
  }

  func testCiphertextMovedToAnotherRowOrFieldFails() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let a = try store.create(MemoDraft(title: "A title", body: "A body"), now: 1)
    let b = try store.create(MemoDraft(title: "B title", body: "B body"), now: 2)
    try node.tamper("UPDATE memos SET record = (SELECT record FROM memos WHERE id = '\(a.id)') WHERE id = '\(b.id)'")
    assertMemoError(.integrity, try node.open().memo(b.id)) { XCTAssertTrue($0.message.contains(b.id.rawValue)) }
    XCTAssertEqual(try node.open().memo(a.id).body, "A body", "other memos are unaffected")
    try node.tamper("UPDATE memos SET title = record WHERE id = '\(a.id)'")
    assertMemoError(.integrity, try node.open().summaries()) { XCTAssertTrue($0.message.contains("title")) }
  }

  func testOlderRevisionCiphertextFailsAfterEdit() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let memo = try store.create(MemoDraft(title: "t", body: "version one"), now: 1)
    let oldRecord = try node.column("record", of: memo.id)
    try store.update(memo.id, MemoChange(body: "version two"), now: 2)
    try node.setColumn("record", of: memo.id, to: oldRecord)
    assertMemoError(.integrity, try node.open().memo(memo.id))
  }

  func testTruncatedCiphertextFails() throws {
    let node = try TemporaryNode()
    let memo = try node.open().create(MemoDraft(title: "t", body: "a longer body to cut"), now: 1)
    try node.tamper("UPDATE memos SET record = substr(record, 1, length(record) - 3)")
    assertMemoError(.integrity, try node.open().memo(memo.id))
    try node.tamper("UPDATE memos SET record = X'01'")
    assertMemoError(.integrity, try node.open().memo(memo.id))
  }

  // MARK: - Keys and files

  func testWrongKeyIsRecognised() throws {
    let node = try TemporaryNode()
    try node.open().create(MemoDraft(title: "t", body: "b"), now: 1)
    let other = try TemporaryNode()
    _ = try other.open()
    try PrivateFiles.writeAtomically(
      try PrivateFiles.read(other.paths.deviceKeyPath, limit: 64), to: node.paths.deviceKeyPath)
    assertMemoError(.wrongKey, try node.open()) { XCTAssertNotNil($0.hint) }
  }

  func testCopiedDataDirectoryWithoutKeyIsUnreadable() throws {
    let node = try TemporaryNode()
    try node.open().create(MemoDraft(title: "t", body: "b"), now: 1)
    let copy = try TemporaryNode()
    try FileManager.default.copyItem(atPath: node.paths.dataDirectory, toPath: copy.paths.dataDirectory)
    assertMemoError(.keyMissing, try copy.open()) { error in
      XCTAssertTrue(error.message.contains(copy.paths.deviceKeyPath))
      XCTAssertEqual(error.remedy, .moveMemosToNewNode)
    }
    XCTAssertFalse(PrivateFiles.exists(copy.paths.deviceKeyPath), "no new key is made over existing data")
  }

  func testPermissionsThatAreTooOpenAreRefused() throws {
    let node = try TemporaryNode()
    _ = try node.open()
    for (path, mode, role) in [
      (node.paths.keyDirectory, 0o755, "key directory"), (node.paths.deviceKeyPath, 0o644, "device key"),
      (node.paths.dataDirectory, 0o750, "data directory"),
    ] {
      let original: mode_t = path == node.paths.deviceKeyPath ? 0o600 : 0o700
      chmod(path, mode_t(mode))
      assertMemoError(.permissionsTooOpen, try node.open()) { error in
        XCTAssertTrue(error.message.contains(role), error.message)
        XCTAssertTrue(error.hint?.contains("chmod \(String(original, radix: 8))") ?? false, error.hint ?? "")
      }
      chmod(path, original)
    }
    XCTAssertNoThrow(try node.open())
  }

  func testFreshFilesArePrivate() throws {
    let node = try TemporaryNode()
    _ = try node.open()
    func mode(_ path: String) -> mode_t {
      var info = stat()
      stat(path, &info)
      return info.st_mode & 0o777
    }
    XCTAssertEqual(mode(node.paths.keyDirectory), 0o700)
    XCTAssertEqual(mode(node.paths.dataDirectory), 0o700)
    XCTAssertEqual(mode(node.paths.deviceKeyPath), 0o600)
    XCTAssertEqual(mode(node.paths.databasePath), 0o600)
    XCTAssertEqual(try PrivateFiles.read(node.paths.deviceKeyPath, limit: 100).count, 38)
  }

  /// Two commands on a fresh node at once (here threads, each with its own connection):
  /// every open succeeds, and all open the same database with the same keys.
  func testConcurrentFirstOpensOfAFreshNodeAllSucceed() throws {
    /// `@unchecked Sendable`: every access to the arrays holds `lock`.
    final class Outcomes: @unchecked Sendable {
      let lock = NSLock()
      var replicas: [ReplicaID] = []
      var errors: [String] = []
    }
    for _ in 0..<10 {
      let node = try TemporaryNode()
      let paths = node.paths
      let outcomes = Outcomes()
      DispatchQueue.concurrentPerform(iterations: 4) { _ in
        do {
          let replica = try MemoStore.open(paths: paths).replicaID
          outcomes.lock.withLock { outcomes.replicas.append(replica) }
        } catch {
          outcomes.lock.withLock { outcomes.errors.append("\(error)") }
        }
      }
      XCTAssertEqual(outcomes.errors, [])
      XCTAssertEqual(Set(outcomes.replicas).count, 1, "one database")
      _ = try node.open().create(MemoDraft(title: "readable", body: "by every opener"), now: 1)
    }
  }

  func testForeignCorruptAndNewerDatabasesAreLeftUntouched() throws {
    let cases: [(String, MemoPeerError.Code, (TemporaryNode) throws -> Void)] = [
      (
        "foreign", .foreignDatabase,
        { node in
          try PrivateFiles.ensureDirectory(node.paths.dataDirectory, role: "data")
          let db = try SQLiteConnection(path: node.paths.databasePath, create: true)
          try db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos VALUES (1, 'x')")
        }
      ),
      (
        "garbage", .corruptDatabase,
        { node in
          try PrivateFiles.ensureDirectory(node.paths.dataDirectory, role: "data")
          try PrivateFiles.writeAtomically(
            Array(repeating: 0x5A, count: 8192) + Array("not sqlite".utf8), to: node.paths.databasePath)
        }
      ),
      (
        "newer", .newerDatabase,
        { node in
          _ = try node.open()
          try node.tamper("PRAGMA user_version = 99")
        }
      ),
    ]
    for (name, code, prepare) in cases {
      let node = try TemporaryNode()
      try prepare(node)
      let before = try PrivateFiles.read(node.paths.databasePath, limit: 1 << 20)
      assertMemoError(code, try node.open()) { error in
        XCTAssertTrue(error.message.contains("untouched") || error.hint?.contains("untouched") == true, name)
      }
      XCTAssertEqual(try PrivateFiles.read(node.paths.databasePath, limit: 1 << 20), before, name)
    }
  }

  func testFailedWriteKeepsThePreviousState() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let memo = try store.create(MemoDraft(title: "kept", body: "original"), now: 1)
    // A batch that fails half-way rolls back entirely.
    XCTAssertThrowsError(
      try store.batch {
        try store.update(memo.id, MemoChange(body: "half-way"), now: 2)
        try store.create(MemoDraft(title: "", body: ""), now: 3)
      })
    XCTAssertEqual(try node.open().memo(memo.id).body, "original")
    XCTAssertEqual(try node.open().count(), 1)
  }

  func testQueuesAreSealedAndBoundToTheirPeer() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let peer = TestDevices.id(named: "B")
    let entry = QueuedPayload(id: "e1", peer: peer, payload: Array("QUEUED-SECRET".utf8), time: 5)
    try store.enqueue(entry, in: .outbox)
    XCTAssertEqual(
      try store.rows(in: .outbox), [QueueRow(id: "e1", peer: peer.compact, payload: entry.payload, time: 5)],
      "the row holds the compact ID")
    XCTAssertEqual(try store.outboxEntries().map(\.recipient), [peer])
    XCTAssertFalse(try node.rawDataBytes().contains(bytes: Array("QUEUED-SECRET".utf8)))
    try node.tamper("UPDATE outbox SET recipient = '\(TestDevices.id(named: "C").compact)'")
    assertMemoError(.integrity, try node.open().rows(in: .outbox))
  }

  /// A row that names no device (only the schema 1–2 fixtures have them) is listed with no
  /// recipient or sender, can be cancelled or dropped, and is never accepted.
  func testARowThatNamesNoDeviceIsListedAndCanOnlyBeDropped() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let memo = Array(#"{"body":"b","private":false,"sent":1,"tags":[],"title":"t"}"#.utf8)
    try store.enqueue(QueueRow(id: "out-1", peer: "device-b", payload: memo, time: 1), in: .outbox)
    try store.enqueue(QueueRow(id: "in-1", peer: "device-b", payload: memo, time: 1), in: .inbox)
    try store.enqueue(QueuedPayload(id: "in-2", peer: TestDevices.id(named: "B"), payload: memo, time: 2), in: .inbox)
    XCTAssertEqual(try store.outboxEntries().map(\.recipient), [nil])
    XCTAssertEqual(try store.outboxContent("out-1").body, "b", "still opens with the text it was sealed with")
    XCTAssertEqual(try store.inboxEntries().map(\.sender), [nil, TestDevices.id(named: "B")])
    assertMemoError(.invalidInput, try store.acceptInboxEntry("in-1"))
    XCTAssertEqual(try store.dropInboxEntry("in-1").id, "in-1")
    XCTAssertEqual(try store.acceptInboxEntry("in-2").origin, .device(TestDevices.id(named: "B")))
    XCTAssertEqual(try store.inboxEntries(), [])
  }
}
