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

/// An id as the database holds it: one text form per kind of id, converted here, at the
/// SQL, and nowhere else. A statement binds the id itself (`bind(_:_:)`, `SQLiteValue.id`),
/// never a string the caller made of it, so a device ID cannot reach a column in its
/// grouped or short form, nor a replica id where a device ID belongs by mistake of text.
protocol SQLiteID {
  /// The column's text for this id.
  var sqliteText: String { get }
}

/// Device IDs are compact base32 text in the database.
extension DeviceID: SQLiteID {
  var sqliteText: String { compact }
}

/// Replica, memo and notebook ids are their canonical lowercase text.
extension ReplicaID: SQLiteID {
  var sqliteText: String { rawValue }
}

extension MemoID: SQLiteID {
  var sqliteText: String { rawValue }
}

extension NotebookID: SQLiteID {
  var sqliteText: String { rawValue }
}

/// A memo's origin is a replica id or a compact device ID (`MemoOrigin.text`).
extension MemoOrigin: SQLiteID {
  var sqliteText: String { text }
}

extension SQLiteStatement {
  func bind(_ index: Int32, _ id: some SQLiteID) throws(SQLiteError) { try bind(index, id.sqliteText) }

  /// The device ID in column `column`; nil for text that is not one (a row written by
  /// hand, or damaged): the caller skips such a row.
  func device(_ column: Int32) -> DeviceID? { DeviceID(text(column)) }
}

extension SQLiteValue {
  /// Any id, in its column's text form.
  static func id(_ id: some SQLiteID) -> SQLiteValue { .text(id.sqliteText) }
  static func device(_ id: DeviceID) -> SQLiteValue { .id(id) }
  static func replica(_ id: ReplicaID) -> SQLiteValue { .id(id) }
}

/// Ids read back from their columns, parsed here.
extension SQLiteStatement {
  /// The replica id in `column`; nil for text that is not one (a damaged row).
  func replica(_ column: Int32) -> ReplicaID? { ReplicaID(text(column)) }

  /// The notebook id in `column`; nil for text that is not one (a damaged row).
  func notebook(_ column: Int32) -> NotebookID? { NotebookID(text(column)) }

  /// The memo id in `column`, in the canonical form this store writes; nil for any other.
  func memo(_ column: Int32) -> MemoID? { MemoID(canonical: text(column)) }

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

  /// The memo origin in `column` of a row this store wrote: one that is neither a replica
  /// id nor a compact device ID means a damaged database (or a row written by hand).
  func storedOrigin(_ statement: SQLiteStatement, _ column: Int32) throws -> MemoOrigin {
    guard let origin = MemoOrigin(statement.text(column)) else {
      throw MemoPeerError(
        .integrity,
        "a memo of \(paths.databasePath) names an origin that is neither a replica nor a device (the database is damaged)",
        hint: "restore it from a backup if it is damaged", remedy: .checkStore)
    }
    return origin
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
