import MemoCore
import MemoCrypto

/// Memo operations. Every write is one transaction; every read of content opens the sealed
/// fields with additional data naming the memo, field and revision.
extension MemoStore {
  /// Answered from the covering index `memos_for_listing` alone (a test checks the plan).
  static let listingQuery =
    "SELECT id, title, listing_title, tags, created, updated, private, revision, pinned, conflict_of, notebook, author "
    + "FROM memos WHERE deleted = 0 ORDER BY updated DESC, id"

  /// `listingQuery` for one notebook (the notebook is in the covering index too).
  static let notebookListingQuery =
    "SELECT id, title, listing_title, tags, created, updated, private, revision, pinned, conflict_of, notebook, author "
    + "FROM memos WHERE deleted = 0 AND notebook = ? ORDER BY updated DESC, id"

  /// The memo a widget shows: the most recently changed pinned memo, else the latest.
  static let widgetQuery =
    "SELECT id, title, listing_title, tags, created, updated, private, revision, pinned, conflict_of, notebook, author "
    + "FROM memos WHERE deleted = 0 ORDER BY pinned DESC, updated DESC, id LIMIT 1"

  static let insertMemo =
    "INSERT INTO memos (\(memoColumns), listing_title) VALUES "
    + "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

  /// Every column of a memo row but `listing_title` and `pinned`, in the order `row(for:)` gives.
  static let memoColumns =
    "id, title, body, tags, created, updated, private, revision, origin, deleted, "
    + "dot_origin, dot_seq, clock, feed_seq, conflict_of, notebook, record_key, record, signature, author"

  /// Validates and stores a new memo, in `notebook` (default: the default notebook).
  @discardableResult
  public func create(_ draft: MemoDraft, now: Timestamp, in notebook: NotebookID? = nil) throws -> Memo {
    try createMany([draft], now: now, in: notebook)[0]
  }

  /// Stores many new memos in one transaction (imports, benchmarks).
  @discardableResult
  public func createMany(_ drafts: [MemoDraft], now: Timestamp, in notebook: NotebookID? = nil) throws -> [Memo] {
    let target = try writableNotebook(try notebook ?? defaultNotebook().id).id
    var memos = try drafts.map { draft -> Memo in
      let valid = try MemoRules.validated(draft)
      return Memo(
        id: MemoID(), title: valid.title, body: valid.body, tags: valid.tags, created: now, updated: now,
        isPrivate: valid.isPrivate, revision: 1, origin: .replica(replicaID), notebook: target)
    }
    try sql {
      try db.transaction {
        let firstSeq = try nextLocalSeqs(memos.count)
        let firstFeed = try nextFeedPositions(memos.count)
        let insert = try db.prepare(Self.insertMemo)
        for index in memos.indices {
          let dot = Dot(origin: replicaID, seq: firstSeq + UInt64(index))
          memos[index].dot = dot
          memos[index].clock = VersionVector([dot.origin: dot.seq])
          memos[index].record = try signedRecord(for: memos[index])
          try insert.bind(try row(for: memos[index], feed: firstFeed + UInt64(index)))
          try insert.step()
          insert.reset()
        }
      }
    }
    logger.debug("created \(memos.count, privacy: .public) memo(s)")
    return memos
  }

  /// Live memos, newest first, with title and tags decrypted (bodies are not touched).
  /// Needs the device key; `listing` works while locked.
  public func summaries(tag: String? = nil, notebook: NotebookID? = nil) throws -> [MemoSummary] {
    var result: [MemoSummary] = []
    try forEachSummary(tag: tag, notebook: notebook) { result.append($0) }
    return result
  }

  /// `summaries`, one at a time as the rows are read: nothing is held but the current row.
  public func forEachSummary(
    tag: String? = nil, notebook: NotebookID? = nil, _ body: (MemoSummary) throws -> Void
  ) throws {
    _ = try sealer()
    try forEachListing(tag: tag, notebook: notebook) { memo in
      try body(
        MemoSummary(
          id: memo.id, title: memo.title ?? "", tags: memo.tags ?? [], created: memo.created, updated: memo.updated,
          isPrivate: memo.isPrivate, revision: memo.revision, notebook: memo.notebook, author: memo.author))
    }
  }

  /// Live memos, newest first, with whatever can be decrypted in the current lock state:
  /// everything when unlocked; while locked only the titles of memos not marked private
  /// (from their listing copy), never tags. Filtering by tag needs the device key.
  public func listing(tag: String? = nil, notebook: NotebookID? = nil) throws -> [MemoListing] {
    var result: [MemoListing] = []
    try forEachListing(tag: tag, notebook: notebook) { result.append($0) }
    return result
  }

  /// `listing`, one memo at a time in the index's order (`memos_for_listing` serves the
  /// ORDER BY, so nothing is sorted or held but the current row). Every check (the tag, the
  /// key it needs) is made before `body` first runs; `body` may throw to stop early.
  public func forEachListing(
    tag: String? = nil, notebook: NotebookID? = nil, _ body: (MemoListing) throws -> Void
  ) throws {
    let wanted = try tag.map { try MemoRules.normalizeTags([$0])[0] }
    if wanted != nil { _ = try sealer() }
    let conflicted = try conflictedMemoIDs()
    var reader = RowReader()
    defer { reader.wipe() }
    try sql {
      let query = try db.prepare(notebook == nil ? Self.listingQuery : Self.notebookListingQuery)
      if let notebook { try query.bind(1, notebook) }
      while try query.step() {
        var memo = try listed(query, &reader)
        if !conflicted.isEmpty { memo.hasConflict = conflicted.contains(memo.id) }
        if let wanted, !(memo.tags ?? []).contains(wanted) { continue }
        try body(memo)
      }
    }
  }

  /// The memo a status-bar widget shows (pinned first, else the latest), decrypted as far
  /// as the lock state allows; nil when there are no memos.
  public func widgetMemo() throws -> MemoListing? {
    try sql {
      let query = try db.prepare(Self.widgetQuery)
      var reader = RowReader()
      defer { reader.wipe() }
      return try query.step() ? try listed(query, &reader) : nil
    }
  }

  /// Pins or unpins a memo for the widget. A local preference: not a new revision.
  public func setPinned(_ id: MemoID, _ pinned: Bool) throws {
    try sql {
      try db.transaction {
        let update = try db.prepare("UPDATE memos SET pinned = ? WHERE id = ? AND deleted = 0")
        try update.bind([.integer(pinned ? 1 : 0), .id(id)])
        try update.step()
      }
    }
  }

  /// Outbox entries not delivered yet. Counted without opening any payload, so it works
  /// while locked.
  public func outboxWaitingCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM outbox WHERE delivered IS NULL")) }
  }

  /// One row of `listingQuery` or `widgetQuery`.
  private func listed(_ query: SQLiteStatement, _ reader: inout RowReader) throws -> MemoListing {
    guard let id = reader.memoID(query, 0) else { throw Self.invalidRowID }
    let revision = query.int64(7)
    let isPrivate = query.int64(6) != 0
    var title: String?
    var tags: [String]?
    if let contentSealer {
      try open(
        .title, of: id, revision: revision, column: 1, of: query, sealer: contentSealer, into: &reader.title,
        context: &reader.context)
      title = String(decoding: reader.title, as: UTF8.self)
      try open(
        .tags, of: id, revision: revision, column: 3, of: query, sealer: contentSealer, into: &reader.tags,
        context: &reader.context)
      tags = TagList.decode(reader.tags)
    } else if !isPrivate && !query.isNull(2) {
      title = String(decoding: try openListingTitle(of: id, revision: revision, query.blob(2)), as: UTF8.self)
    }
    return MemoListing(
      id: id, title: title, tags: tags, created: query.int64(4), updated: query.int64(5), isPrivate: isPrivate,
      isPinned: query.int64(8) != 0, revision: revision,
      conflictOf: query.isNull(9) ? nil : query.memo(9),
      notebook: reader.notebook(query, 10), author: reader.device(query, 11))
  }

  /// One live memo, fully decrypted.
  public func memo(_ id: MemoID) throws -> Memo {
    guard let memo = try loadRow(id), !memo.isDeleted else {
      throw MemoPeerError(.notFound, "no memo has the id \(id)", remedy: .listMemos(includingTrash: false))
    }
    return memo
  }

  /// `text` as an id prefix long enough to resolve: one character matches a sixteenth of all
  /// memos, and `show 0` would open whichever is first.
  static func resolvablePrefix(_ text: String) throws -> IDPrefix {
    let prefix = try IDPrefix(text)
    guard prefix.rawValue.count >= IDPrefix.minimumToResolve else {
      throw MemoPeerError(
        .ambiguousID, "a memo id prefix needs at least \(IDPrefix.minimumToResolve) characters",
        remedy: .typeMoreOfID)
    }
    return prefix
  }

  /// Resolves a typed id or unique prefix, like git does for commits.
  public func resolve(_ text: String) throws -> MemoID {
    let prefix = try Self.resolvablePrefix(text)
    return try sql {
      let query = try db.prepare("SELECT id FROM memos WHERE deleted = 0 AND id GLOB ? ORDER BY id LIMIT 11")
      try query.bind(1, prefix.rawValue + "*")
      var matches: [String] = []
      while try query.step() { matches.append(query.text(0)) }
      switch matches.count {
      case 0:
        throw MemoPeerError(
          .notFound, "no memo id starts with \(prefix.rawValue)", remedy: .listMemos(includingTrash: false))
      case 1:
        return try memoID(matches[0])
      default:
        let shown = matches.prefix(10).joined(separator: ", ") + (matches.count > 10 ? ", …" : "")
        throw MemoPeerError(
          .ambiguousID, "the prefix \(prefix.rawValue) matches several memos: \(shown)",
          hint: "type more characters of the id")
      }
    }
  }

  /// Applies a change as a new revision; an unchanged memo keeps its revision. The new
  /// revision has seen the memo and any delete that lost to it. A memo with conflict
  /// copies is resolved first: a version vector can only say "this replica's revisions up
  /// to n", so a new revision here would claim to have seen every copy made here too.
  @discardableResult
  public func update(_ id: MemoID, _ change: MemoChange, now: Timestamp) throws -> Memo {
    try batch {
      let current = try memo(id)
      try refuseConflictCopy(current)
      try refuseWhileConflicted(id, doing: "changed")
      var next = try MemoRules.applying(change, to: current)
      guard next != current else { return current }
      next.revision = try MemoRules.nextRevision(after: current.revision)
      next.updated = max(now, current.updated)
      return try storeLocalRevision(next, resolvingAll: false)
    }
  }

  /// Replaces the memo's content with a tombstone: the text is gone, the id and a new
  /// revision stay so that the deletion can replicate. A memo with conflict copies is
  /// resolved first (`conflicts resolve`), as for `update`.
  public func delete(_ id: MemoID, now: Timestamp) throws {
    try batch {
      let current = try memo(id)
      try refuseConflictCopy(current)
      try refuseWhileConflicted(id, doing: "deleted")
      let tombstone = Memo(
        id: id, title: "", body: "", tags: [], created: current.created, updated: max(now, current.updated),
        isPrivate: current.isPrivate, revision: try MemoRules.nextRevision(after: current.revision),
        origin: .replica(replicaID),
        isDeleted: true, notebook: current.notebook)
      _ = try storeLocalRevision(tombstone, resolvingAll: true)
    }
  }

  /// Memos whose title, tags or body contain `query`, case-insensitively, newest first.
  /// Decrypts in memory, one row at a time; nothing is written anywhere.
  public func search(_ query: String, notebook: NotebookID? = nil) throws -> [MemoSummary] {
    var result: [MemoSummary] = []
    try search(query, notebook: notebook) { result.append($0) }
    return result
  }

  /// What `search` reads: the listing's order (`memos_for_listing` serves the ORDER BY),
  /// and only the columns a match needs; the body is read and opened only when the title
  /// and tags do not match, from the record when the row keeps it there (columns 10–15).
  static let searchQuery =
    "SELECT \(searchColumns) FROM memos WHERE deleted = 0 ORDER BY updated DESC, id"

  /// `searchQuery` for one notebook.
  static let notebookSearchQuery =
    "SELECT \(searchColumns) FROM memos WHERE deleted = 0 AND notebook = ? ORDER BY updated DESC, id"

  private static let searchColumns =
    "id, title, tags, created, updated, private, revision, notebook, author, body, "
    + "record_key, record, dot_origin, dot_seq, clock, conflict_of"

  /// Every live memo, decrypted one at a time (exports).
  public func forEachMemo(_ body: (Memo) throws -> Void) throws {
    try forEachRow(includeDeleted: false) { id, revision, columns in
      try body(try decrypt(id: id, revision: revision, columns))
    }
  }

  /// Number of live memos.
  public func count() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM memos WHERE deleted = 0")) }
  }

  /// How an imported memo was handled.
  public enum ImportOutcome: Sendable, Equatable {
    case added, updated, unchanged
  }

  /// Adds a memo from an archive, keeping its id, times and revision. A memo already here at
  /// the same or a newer revision is left alone; local deletions are not undone.
  public func importMemo(_ incoming: Memo) throws -> ImportOutcome {
    let valid = try MemoRules.validated(
      MemoDraft(title: incoming.title, body: incoming.body, tags: incoming.tags, isPrivate: incoming.isPrivate))
    var memo = incoming
    memo.title = valid.title
    memo.tags = valid.tags
    memo.isDeleted = false
    memo.conflictOf = nil
    return try batch {
      guard let existing = try loadRow(memo.id) else {
        _ = try storeLocalRevision(memo, resolvingAll: true, author: incoming.origin)
        return .added
      }
      guard !existing.isDeleted, existing.conflictOf == nil, memo.revision > existing.revision else {
        return .unchanged
      }
      try refuseWhileConflicted(memo.id, doing: "updated from the archive")
      _ = try storeLocalRevision(memo, resolvingAll: false, author: incoming.origin)
      return .updated
    }
  }

  // MARK: - Rows

  struct SealedColumns {
    var title: [UInt8]
    var body: [UInt8]
    var tags: [UInt8]
    var created: Timestamp
    var updated: Timestamp
    var isPrivate: Bool
    var origin: MemoOrigin
    var isDeleted: Bool
    var dot: Dot?
    var clock: VersionVector
    var conflictOf: MemoID?
    var notebook: NotebookID?
    var record: SealedRecord?
  }

  /// The row's values in `memoColumns` order, then `listing_title`: a copy of the title
  /// under the listing key for live memos not marked private, NULL otherwise (so marking a
  /// memo private removes the copy in the same write). The body is sealed in the row only
  /// when its record does not keep it (`keepsBodyInRecord`).
  func row(for memo: Memo, feed: UInt64) throws -> [SQLiteValue] {
    let listingTitle: SQLiteValue =
      memo.isPrivate || memo.isDeleted ? .null : .blob(try sealListingTitle(of: memo))
    let body = keepsBodyInRecord(memo) ? Self.bodyInRecord : try seal(.body, of: memo, Array(memo.body.utf8))
    return [
      .id(memo.id), .blob(try seal(.title, of: memo, Array(memo.title.utf8))), .blob(body),
      .blob(try seal(.tags, of: memo, TagList.encode(memo.tags))),
      .integer(memo.created), .integer(memo.updated), .integer(memo.isPrivate ? 1 : 0),
      .integer(memo.revision), .id(memo.origin), .integer(memo.isDeleted ? 1 : 0),
      memo.dot.map { .replica($0.origin) } ?? .null,
      memo.dot.map { .integer(Int64(bitPattern: $0.seq)) } ?? .null,
      .blob(memo.clock.encoded()), .integer(Int64(bitPattern: feed)),
      memo.conflictOf.map { .id($0) } ?? .null, .id(try notebookOfRow(memo)),
      memo.record.map { .text($0.keyID) } ?? .null, memo.record.map { .blob($0.sealed) } ?? .null,
      memo.record?.signature.map { .blob($0) } ?? .null, memo.record?.author.map { .device($0) } ?? .null,
      listingTitle,
    ]
  }

  /// A memo's title, body and tags sealed under the device key, each bound to the memo's
  /// id and revision: a row's sealed columns, and those of a revision kept as history.
  func sealedFields(of memo: Memo) throws -> (title: [UInt8], body: [UInt8], tags: [UInt8]) {
    (
      try seal(.title, of: memo, Array(memo.title.utf8)), try seal(.body, of: memo, Array(memo.body.utf8)),
      try seal(.tags, of: memo, TagList.encode(memo.tags))
    )
  }

  func loadRow(_ id: MemoID) throws -> Memo? {
    try sql {
      let query = try db.prepare("SELECT \(Self.memoColumns) FROM memos WHERE id = ?")
      try query.bind(1, id)
      guard try query.step() else { return nil }
      return try decrypt(id: id, revision: query.int64(7), try columns(of: query))
    }
  }

  private func forEachRow(
    includeDeleted: Bool, _ body: (MemoID, Int64, SealedColumns) throws -> Void
  ) throws {
    try sql {
      let query = try db.prepare(
        "SELECT \(Self.memoColumns) FROM memos \(includeDeleted ? "" : "WHERE deleted = 0") ORDER BY id")
      while try query.step() {
        try body(try memoID(query.text(0)), query.int64(7), try columns(of: query))
      }
    }
  }

  /// The sealed columns of a row read with `memoColumns`.
  func columns(of query: SQLiteStatement) throws -> SealedColumns {
    SealedColumns(
      title: query.blob(1), body: query.blob(2), tags: query.blob(3), created: query.int64(4),
      updated: query.int64(5), isPrivate: query.int64(6) != 0, origin: try storedOrigin(query, 8),
      isDeleted: query.int64(9) != 0,
      dot: query.isNull(10) ? nil : query.dot(10, 11),
      clock: VersionVector(encoded: query.blob(12)) ?? VersionVector(),
      conflictOf: query.isNull(14) ? nil : query.memo(14),
      notebook: query.isNull(15) ? nil : query.notebook(15),
      record: query.isNull(16) || query.isNull(17)
        ? nil
        : SealedRecord(
          keyID: query.text(16), sealed: query.blob(17), signature: query.isNull(18) ? nil : query.blob(18),
          author: query.isNull(19) ? nil : query.device(19)))
  }

  func decrypt(id: MemoID, revision: Int64, _ columns: SealedColumns) throws -> Memo {
    Memo(
      id: id,
      title: String(decoding: try open(.title, of: id, revision: revision, columns.title), as: UTF8.self),
      body: columns.body.isEmpty
        ? try recordBody(of: id, columns)
        : String(decoding: try open(.body, of: id, revision: revision, columns.body), as: UTF8.self),
      tags: TagList.decode(try open(.tags, of: id, revision: revision, columns.tags)),
      created: columns.created, updated: columns.updated, isPrivate: columns.isPrivate, revision: revision,
      origin: columns.origin, isDeleted: columns.isDeleted, dot: columns.dot, clock: columns.clock,
      conflictOf: columns.conflictOf, notebook: columns.notebook, record: columns.record)
  }

  /// The notebook a row of `memo` goes into: its own, else (a memo from an archive or a
  /// delivery) the notebook of the memo already here, else the default notebook.
  func notebookOfRow(_ memo: Memo) throws -> NotebookID {
    if let notebook = memo.notebook { return notebook }
    let original = memo.conflictOf ?? memo.id
    let existing = try sql {
      try db.withCached("SELECT notebook FROM memos WHERE id = ?") { read in
        try read.bind(1, original)
        return try read.step() && !read.isNull(0) ? read.notebook(0) : nil
      }
    }
    if let existing { return existing }
    return try defaultNotebook().id
  }

  func memoID(_ text: String) throws -> MemoID {
    guard let id = MemoID(canonical: text) else { throw Self.invalidRowID }
    return id
  }

  static let invalidRowID = MemoPeerError(
    .corruptDatabase, "the memo database holds a row with an invalid id",
    hint: "restore from an export; the file was left untouched")

  // MARK: - Sealing

  private func seal(_ field: SealingContext.MemoField, of memo: Memo, _ plaintext: [UInt8]) throws -> [UInt8] {
    let sealer = try sealer()
    do {
      return try sealer.seal(
        plaintext, associatedData: SealingContext.memoField(field, id: memo.id, revision: memo.revision))
    } catch {
      throw MemoPeerError(.crypto, "sealing memo \(memo.id) failed", diagnostics: "\(error)")
    }
  }

  private func sealListingTitle(of memo: Memo) throws -> [UInt8] {
    do {
      return try listingSealer.seal(
        Array(memo.title.utf8),
        associatedData: SealingContext.memoField(.listingTitle, id: memo.id, revision: memo.revision))
    } catch {
      throw MemoPeerError(.crypto, "sealing memo \(memo.id) failed", diagnostics: "\(error)")
    }
  }

  private func openListingTitle(of id: MemoID, revision: Int64, _ sealed: [UInt8]) throws -> [UInt8] {
    do {
      return try listingSealer.open(
        sealed, associatedData: SealingContext.memoField(.listingTitle, id: id, revision: revision))
    } catch {
      throw MemoPeerError(
        .integrity, "memo \(id): its listing title failed the integrity check (tampered, truncated or moved)",
        hint: "unlock the node to read the memo itself", diagnostics: "\(error)")
    }
  }

  /// Opens one sealed field; a failure names the memo, never shows garbage.
  func open(_ field: SealingContext.MemoField, of id: MemoID, revision: Int64, _ sealed: [UInt8]) throws -> [UInt8] {
    let sealer = try sealer()
    do {
      return try sealer.open(sealed, associatedData: SealingContext.memoField(field, id: id, revision: revision))
    } catch {
      throw Self.integrityFailure(field, of: id, error)
    }
  }

  /// `open` of column `column` of the current row, read where SQLite holds it, into
  /// `plaintext` (its storage reused; the sealing context is built in `reader.context`).
  func open(
    _ field: SealingContext.MemoField, of id: MemoID, revision: Int64, column: Int32, of row: SQLiteStatement,
    sealer: AES256GCMKey, into plaintext: inout [UInt8], context: inout SealingContext.MemoFieldBuffer
  ) throws {
    try row.withBytes(column) { sealed in
      try Self.open(field, of: id, revision: revision, sealed, sealer: sealer, into: &plaintext, context: &context)
    }
  }

  /// `open` of bytes wherever they are (a row, a batch of `search`), into `plaintext`; it
  /// touches no store, so any thread with its own `sealer` and buffers may call it.
  static func open(
    _ field: SealingContext.MemoField, of id: MemoID, revision: Int64, _ sealed: UnsafeRawBufferPointer,
    sealer: AES256GCMKey, into plaintext: inout [UInt8], context: inout SealingContext.MemoFieldBuffer
  ) throws {
    context.set(field, id: id, revision: revision)
    do {
      try context.bytes.withUnsafeBytes { try sealer.open(sealed, associatedData: $0, into: &plaintext) }
    } catch {
      throw integrityFailure(field, of: id, error)
    }
  }

  private static func integrityFailure(_ field: SealingContext.MemoField, of id: MemoID, _ error: any Error)
    -> MemoPeerError
  {
    MemoPeerError(
      .integrity, "memo \(id): its \(field.rawValue) failed the integrity check (tampered, truncated or moved)",
      hint: "the other memos are unaffected; restore this one from an export or another device",
      remedy: .deleteMemo(id.short),
      diagnostics: "\(error)")
  }
}
