import MemoCore
import MemoCrypto
import MemoProtocol

/// Content stored once (schema 12; docs/FORMATS.md, "Bodies in records"): a head that has
/// its record keeps its body only there, sealed under its notebook's key, and the row's
/// `body` column is empty. The body is most of a memo, and a second copy sealed under the
/// device key made a 1 KiB memo a 2.5 KiB row, written and read twice by every sync. The
/// title and tags stay sealed in the row: `list` reads them without opening records.
///
/// The notebook keys are themselves sealed under the device key, so the body at rest is
/// still behind it. A row without a record (an unsigned revision from before sync version
/// 3), and an empty body (a tombstone), keep the sealed column as before.
extension MemoStore {
  /// The `body` column of a row whose body is read from its record: zero bytes, which no
  /// sealed value is (a sealed empty text has 29).
  static let bodyInRecord: [UInt8] = []

  /// Whether `memo`'s row keeps its body only in its record. The record was made from the
  /// same revision (signed here, or opened from what a peer sent), so it holds this body.
  func keepsBodyInRecord(_ memo: Memo) -> Bool {
    bodiesInRecords && memo.record != nil && memo.dot != nil && memo.notebook != nil && !memo.body.isEmpty
  }

  /// The body of a row whose `body` column is empty, opened from its record under the
  /// notebook key generation that sealed it.
  func recordBody(of id: MemoID, _ columns: SealedColumns) throws -> String {
    guard let stored = columns.record, let notebook = columns.notebook, let dot = columns.dot else {
      throw MemoPeerError(
        .corruptDatabase, "memo \(id): its body is kept in a record the row does not have",
        hint: "the other memos are unaffected; restore this one from an export or another device",
        remedy: .deleteMemo(id.short))
    }
    let record = SyncRecord(
      notebook: notebook, memo: columns.conflictOf ?? id, dot: dot, clock: columns.clock, keyID: stored.keyID,
      sealed: stored.sealed)
    guard let key = try keyring(notebook)[stored.keyID] else {
      throw Self.missingBodyKey(of: id, notebook: notebook)
    }
    var content: [UInt8]
    do {
      content = try key.sealer.open(record.sealed, associatedData: record.associatedData)
    } catch {
      throw Self.bodyIntegrityFailure(of: id, error)
    }
    defer { SecureBytes.wipe(&content) }
    guard let revision = RecordContent.decode(content, of: record) else {
      throw Self.bodyIntegrityFailure(of: id, nil)
    }
    return revision.body
  }

  static func missingBodyKey(of id: MemoID, notebook: NotebookID) -> MemoPeerError {
    MemoPeerError(
      .keyMissing, "memo \(id): the key of notebook \(notebook.short) that sealed its body is not on this device",
      hint: "a member of the notebook can share its keys with this device again", remedy: .sync)
  }

  static func bodyIntegrityFailure(of id: MemoID, _ error: (any Error)?) -> MemoPeerError {
    MemoPeerError(
      .integrity, "memo \(id): its body failed the integrity check (tampered, truncated or moved)",
      hint: "the other memos are unaffected; restore this one from an export or another device",
      remedy: .deleteMemo(id.short), diagnostics: error.map { "\($0)" })
  }
}

// MARK: - Migration

extension MemoStore {
  /// Rows moved per transaction by `moveBodiesIntoRecords`.
  static let bodyMigrationBatch = 1_000

  /// The `meta` key that says some rows may still hold a second copy of their body.
  static let bodyCopiesKey = "body_copies"

  /// Schema 12's work, after its migration: every row whose record holds the same body as
  /// its sealed column gets an empty column, a thousand rows per transaction. Each batch
  /// commits on its own, so a kill at any point leaves every row readable (a row is either
  /// still as it was or already moved), and the next opening goes on from there; the marker
  /// in `meta` goes in the last one. A row whose record does not open, or holds another body,
  /// keeps its column: nothing is emptied that is not kept elsewhere. Needs the device key
  /// (a locked node moves them at its first unlocked opening).
  func moveBodiesIntoRecords() throws {
    guard contentSealer != nil, try metaBytes(Self.bodyCopiesKey) != nil else { return }
    let total = try sql {
      try db.scalarInt("SELECT count(*) FROM memos WHERE length(body) > 0 AND record IS NOT NULL")
    }
    logger.info("moving the bodies of \(total, privacy: .public) memo(s) into their records (schema 12)")
    var after = ""
    var moved = 0
    var kept = 0
    while true {
      let step = try batch { try moveBodyBatch(after: after) }
      moved += step.moved
      kept += step.kept
      guard let last = step.last else { break }
      after = last
      if moved > 0 && moved % (Self.bodyMigrationBatch * 20) == 0 {
        logger.info("moved \(moved, privacy: .public) of \(total, privacy: .public) bodies")
      }
    }
    try batch {
      try sql {
        let done = try db.prepare("DELETE FROM meta WHERE key = ?")
        try done.bind(1, Self.bodyCopiesKey)
        _ = try done.step()
      }
    }
    logger.info(
      "moved \(moved, privacy: .public) bodies into their records; \(kept, privacy: .public) kept their own copy")
  }

  /// One transaction of `moveBodiesIntoRecords`: the next rows by id after `after`.
  private func moveBodyBatch(after: String) throws -> (moved: Int, kept: Int, last: String?) {
    try sql {
      let read = try db.prepare(
        "SELECT \(Self.memoColumns) FROM memos WHERE id > ? AND length(body) > 0 AND record IS NOT NULL "
          + "ORDER BY id LIMIT ?")
      try read.bind([.text(after), .integer(Int64(Self.bodyMigrationBatch))])
      let empty = try db.prepare("UPDATE memos SET body = ? WHERE id = ?")
      var moved = 0
      var kept = 0
      var last: String?
      while try read.step() {
        let rowID = read.text(0)
        last = rowID
        guard let id = MemoID(canonical: rowID) else {
          kept += 1
          continue
        }
        let columns = try columns(of: read)
        guard let sealedCopy = try? open(.body, of: id, revision: read.int64(7), columns.body), !sealedCopy.isEmpty,
          (try? recordBody(of: id, columns)) == String(decoding: sealedCopy, as: UTF8.self)
        else {
          kept += 1
          continue
        }
        try empty.bind([.blob(Self.bodyInRecord), .text(rowID)])
        _ = try empty.step()
        empty.reset()
        moved += 1
      }
      return (moved, kept, last)
    }
  }
}
