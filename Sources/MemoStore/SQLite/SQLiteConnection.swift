internal import CSQLite

/// One SQLite connection. Owns its `sqlite3*` and closes it in deinit; the pointer never
/// leaves this file and `SQLiteStatement`.
///
/// Not Sendable: a connection is used by one thread (the CLI) or owned by one actor.
final class SQLiteConnection {
  let path: String
  private let handle: OpaquePointer
  /// Prepared statements kept for reuse by `withCached`, by SQL text.
  private var cached: [String: CachedStatement] = [:]

  /// A statement of the cache, and whether a call is using it now.
  private final class CachedStatement {
    let handle: OpaquePointer
    var inUse = false
    init(_ handle: OpaquePointer) { self.handle = handle }
  }

  /// Opens an existing database, or creates it when `create` is set.
  init(path: String, create: Bool) throws(SQLiteError) {
    self.path = path
    var db: OpaquePointer?
    let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
    let result = sqlite3_open_v2(path, &db, flags, nil)
    guard result == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close_v2(db)
      throw SQLiteError(code: result, call: "sqlite3_open_v2", message: message)
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
  }

  deinit {
    for statement in cached.values { sqlite3_finalize(statement.handle) }
    sqlite3_close_v2(handle)
  }

  /// Runs one or more statements that return no rows.
  func execute(_ sql: String) throws(SQLiteError) {
    try check(sqlite3_exec(handle, sql, nil, nil, nil), "sqlite3_exec")
  }

  func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
    var statement: OpaquePointer?
    try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil), "sqlite3_prepare_v2")
    guard let statement else {
      throw SQLiteError(code: SQLITE_MISUSE, call: "sqlite3_prepare_v2", message: "empty SQL")
    }
    return SQLiteStatement(statement, connection: self)
  }

  /// Runs `body` with a prepared statement for `sql` that is kept for the next call: for
  /// statements run once per memo in long loops (a sync applies thousands of memos), where
  /// preparing costs more than running. The statement is reset and its bindings cleared
  /// after `body`, so it holds no read transaction or values between uses; `body` must not
  /// keep it. A nested use of the same SQL gets a statement of its own.
  ///
  /// One look-up of the SQL text per use: a statement stays in the cache while in use
  /// (marked so) rather than being taken out and put back, which hashed the text three
  /// times a call, a tenth of a sync's time on the receiving side.
  func withCached<R>(_ sql: String, _ body: (SQLiteStatement) throws -> R) throws -> R {
    let entry: CachedStatement
    if let known = cached[sql] {
      guard !known.inUse else { return try body(try prepare(sql)) }
      entry = known
    } else {
      entry = CachedStatement(try prepare(sql).handOver())
      cached[sql] = entry
    }
    entry.inUse = true
    let statement = SQLiteStatement(entry.handle, connection: self, owned: false)
    defer {
      statement.reset()
      entry.inUse = false
    }
    return try body(statement)
  }

  /// An integer from a one-row query such as `PRAGMA user_version`.
  func scalarInt(_ sql: String) throws(SQLiteError) -> Int64 {
    let statement = try prepare(sql)
    guard try statement.step() else { return 0 }
    return statement.int64(0)
  }

  /// Runs `body` in a write transaction taken at once (BEGIN IMMEDIATE), committing on
  /// success and rolling back on any error, so a failed write leaves the previous state.
  /// Inside an open transaction it simply runs `body`: the outer one commits or rolls back.
  /// `body` only reads and writes: it never waits on the network, another thread or D-Bus
  /// while the write lock is held (`MemoStore.batch`, issue 39).
  func transaction<R>(_ body: () throws -> R) throws -> R {
    if sqlite3_get_autocommit(handle) == 0 { return try body() }
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
      throw error
    }
  }

  /// Runs `body` inside the open transaction as a savepoint: on any error what `body` wrote
  /// is rolled back and the error rethrown, while the transaction (and what it wrote before)
  /// goes on. Outside a transaction it is `transaction(_:)`.
  func savepoint<R>(_ body: () throws -> R) throws -> R {
    guard sqlite3_get_autocommit(handle) == 0 else { return try transaction(body) }
    try execute("SAVEPOINT entry")
    do {
      let result = try body()
      try execute("RELEASE entry")
      return result
    } catch {
      sqlite3_exec(handle, "ROLLBACK TO entry", nil, nil, nil)
      sqlite3_exec(handle, "RELEASE entry", nil, nil, nil)
      throw error
    }
  }

  var changes: Int { Int(sqlite3_changes(handle)) }

  /// Whether a transaction is open on this connection.
  var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  func check(_ result: Int32, _ call: String) throws(SQLiteError) {
    guard result == SQLITE_OK || result == SQLITE_ROW || result == SQLITE_DONE else {
      throw SQLiteError(code: result, call: call, message: String(cString: sqlite3_errmsg(handle)))
    }
  }
}

/// A prepared statement. Values are bound by 1-based index; blobs and text are copied
/// (SQLITE_TRANSIENT) so no Swift buffer has to outlive the call.
final class SQLiteStatement {
  fileprivate let handle: OpaquePointer
  private let connection: SQLiteConnection
  /// False while the connection's cache owns the handle (`withCached`).
  fileprivate var owned: Bool

  fileprivate init(_ handle: OpaquePointer, connection: SQLiteConnection, owned: Bool = true) {
    self.handle = handle
    self.connection = connection
    self.owned = owned
  }

  deinit { if owned { sqlite3_finalize(handle) } }

  /// The handle, which the caller now owns (`withCached`'s cache): this statement no
  /// longer finalizes it.
  fileprivate func handOver() -> OpaquePointer {
    owned = false
    return handle
  }

  func bind(_ index: Int32, _ value: Int64) throws(SQLiteError) {
    try connection.check(sqlite3_bind_int64(handle, index, value), "sqlite3_bind_int64")
  }

  func bind(_ index: Int32, _ value: String) throws(SQLiteError) {
    try connection.check(sqlite3_bind_text(handle, index, value, -1, memo_sqlite_transient()), "sqlite3_bind_text")
  }

  func bind(_ index: Int32, _ value: [UInt8]) throws(SQLiteError) {
    let result = value.withUnsafeBytes {
      sqlite3_bind_blob64(
        handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64($0.count), memo_sqlite_transient())
    }
    try connection.check(result, "sqlite3_bind_blob64")
  }

  func bindNull(_ index: Int32) throws(SQLiteError) {
    try connection.check(sqlite3_bind_null(handle, index), "sqlite3_bind_null")
  }

  /// Binds each value in order, starting at index 1.
  func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
    for (offset, value) in values.enumerated() {
      let index = Int32(offset + 1)
      switch value {
      case .integer(let v): try bind(index, v)
      case .text(let v): try bind(index, v)
      case .blob(let v): try bind(index, v)
      case .null: try bindNull(index)
      }
    }
  }

  /// Advances; true when a row is available, false when done.
  @discardableResult
  func step() throws(SQLiteError) -> Bool {
    let result = sqlite3_step(handle)
    try connection.check(result, "sqlite3_step")
    return result == SQLITE_ROW
  }

  /// Resets for another execution with new bindings.
  func reset() {
    sqlite3_reset(handle)
    sqlite3_clear_bindings(handle)
  }

  func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

  var columnCount: Int32 { sqlite3_column_count(handle) }

  /// SQLITE_INTEGER (1), SQLITE_FLOAT (2), SQLITE_TEXT (3), SQLITE_BLOB (4) or SQLITE_NULL (5).
  func columnType(_ column: Int32) -> Int32 { sqlite3_column_type(handle, column) }

  func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

  func text(_ column: Int32) -> String {
    guard let bytes = sqlite3_column_text(handle, column) else { return "" }
    return String(cString: bytes)
  }

  /// The column's bytes (a blob's, or a text's UTF-8 without its NUL) where SQLite holds
  /// them, without a copy: valid only inside `body`, and never past the next step.
  func withBytes<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    let base = sqlite3_column_blob(handle, column)
    let count = Int(sqlite3_column_bytes(handle, column))
    return try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
  }

  func blob(_ column: Int32) -> [UInt8] {
    let count = Int(sqlite3_column_bytes(handle, column))
    guard count > 0, let base = sqlite3_column_blob(handle, column) else { return [] }
    return Array(UnsafeRawBufferPointer(start: base, count: count))
  }
}

/// A value to bind, so a statement's parameters can be passed as one array.
enum SQLiteValue {
  case integer(Int64)
  case text(String)
  case blob([UInt8])
  case null
}
