import MemoCore

extension MemoStore {
  /// The ids of live memos starting with `prefix` (any prefix when empty), newest first,
  /// at most `limit`. Reads ids only, never a sealed field, so it works while locked and
  /// cannot reveal content (shell completion).
  public func liveMemoIDs(prefix: String, limit: Int) throws -> [MemoID] {
    let pattern = prefix.isEmpty ? "*" : try IDPrefix(prefix).rawValue + "*"
    return try sql {
      let query = try db.prepare("SELECT id FROM memos WHERE deleted = 0 AND id GLOB ? ORDER BY updated DESC LIMIT ?")
      try query.bind([.text(pattern), .integer(Int64(limit))])
      var ids: [MemoID] = []
      while try query.step() { ids.append(try memoID(query.text(0))) }
      return ids
    }
  }
}

/// Device IDs are compact base32 text in the database: converted here, at the SQL, and
/// nowhere else.
extension SQLiteStatement {
  func bind(_ index: Int32, _ device: DeviceID) throws(SQLiteError) { try bind(index, device.compact) }

  /// The device ID in column `column`; nil for text that is not one (a row written by
  /// hand, or damaged): the caller skips such a row.
  func device(_ column: Int32) -> DeviceID? { DeviceID(text(column)) }
}

extension SQLiteValue {
  static func device(_ id: DeviceID) -> SQLiteValue { .text(id.compact) }
  static func replica(_ id: ReplicaID) -> SQLiteValue { .text(id.rawValue) }
}

/// Replica ids are their hex text in the database, converted here.
extension SQLiteStatement {
  /// The replica id in `column`; nil for text that is not one (a damaged row).
  func replica(_ column: Int32) -> ReplicaID? { ReplicaID(text(column)) }

  /// The dot in `originColumn` and `seqColumn`; nil when the origin is not a replica id.
  func dot(_ originColumn: Int32, _ seqColumn: Int32) -> Dot? {
    replica(originColumn).map { Dot(origin: $0, seq: UInt64(bitPattern: int64(seqColumn))) }
  }
}

extension MemoStore {
  /// The dot of a row this store wrote: every replica id it holds was checked when it
  /// arrived, so one that is not a replica id means a damaged database.
  func storedDot(_ statement: SQLiteStatement, _ originColumn: Int32, _ seqColumn: Int32) throws -> Dot {
    guard let dot = statement.dot(originColumn, seqColumn) else {
      throw MemoPeerError(
        .integrity, "a row of \(paths.databasePath) names a replica that is not one (the database is damaged)",
        hint: "restore it from a backup if it is damaged", remedy: .checkStore)
    }
    return dot
  }
}

/// The notebooks named in a run of feed rows, parsed once per change of value: a feed's
/// rows come in long runs of one notebook, and checking the 32 hex digits of each row was a
/// measurable part of reading a feed of 10,000 memos for a sync.
struct NotebookIDCache {
  private var last: (text: String, id: NotebookID?)?

  /// The notebook id in `column` (not NULL: the caller checked); nil when it is not one.
  mutating func notebook(_ query: SQLiteStatement, _ column: Int32) -> NotebookID? {
    let text = query.text(column)
    if let last, last.text == text { return last.id }
    let id = NotebookID(text)
    last = (text, id)
    return id
  }
}
