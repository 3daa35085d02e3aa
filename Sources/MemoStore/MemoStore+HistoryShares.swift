import MemoCore

/// History shared fairly among authors (issue 38; docs/PROTOCOL.md, "History is shared
/// fairly"): per memo, `HistoryRetention` picks what stays; over the byte total, the author
/// holding the most bytes loses its oldest revision first. For the second, the store keeps
/// each author's bytes in `counters` (`history_bytes:<author>`, `-` for unsigned) beside the
/// total, and where that author's oldest row may start (`history_from:<author>`), so the
/// pass costs a few rows per revision and never a scan of the whole history: a flood at the
/// byte total would otherwise make every synced revision read it all.
extension MemoStore {
  /// Drops the revisions of `memo` the fair rule does not keep for a per-memo `limit`.
  /// Runs inside the caller's transaction.
  func pruneRevisions(of memo: MemoID, limit: Int) throws {
    let count = try db.withCached("SELECT count(*) FROM memo_history WHERE memo = ?") { read in
      try read.bind(1, memo)
      return try read.step() ? read.int64(0) : 0
    }
    guard count > max(limit, 0) else { return }
    let entries: [HistoryRetention.Entry<String>] = try db.withCached(
      "SELECT id, revision, author FROM memo_history WHERE memo = ?"
    ) { read in
      try read.bind(1, memo)
      var rows: [HistoryRetention.Entry<String>] = []
      while try read.step() {
        rows.append(.init(id: read.int64(0), revision: read.int64(1), author: read.isNull(2) ? nil : read.text(2)))
      }
      return rows
    }
    let own = ownDeviceID()?.compact
    for id in HistoryRetention.dropped(entries, limit: limit, own: own) {
      try deleteHistory("id = ?1", [.integer(id)])
    }
  }

  /// While more than `budget` bytes of history are kept, drops the oldest revision of the
  /// author holding the most (`HistoryRetention.heaviest`). Runs inside the caller's
  /// transaction.
  func pruneHistoryBytes(to budget: Int64) throws {
    guard try historyBytes() > budget else { return }
    var holdings = try historyHoldings()
    var total = holdings.values.reduce(0, +)
    var waiting: [String: [Int64]] = [:]
    while total > budget, let author = HistoryRetention.heaviest(holdings) {
      if waiting[author, default: []].isEmpty { waiting[author] = try oldestHistory(of: author) }
      guard let id = waiting[author]?.first else {
        // The counter names bytes no row has: set it right rather than loop.
        total -= holdings[author] ?? 0
        holdings[author] = 0
        try setCounter(Self.holdingName(author), 0)
        continue
      }
      waiting[author]?.removeFirst()
      for (freedAuthor, freed) in try deleteHistory("id = ?1", [.integer(id)]) {
        holdings[freedAuthor, default: 0] -= freed
        total -= freed
      }
      // Rows of `author` are dropped oldest first: none is left below the next one.
      try setCounter(Self.startName(author), id + 1)
    }
  }

  /// Counts `bytes` of history added (negative: freed) for `author` ("-": unsigned).
  func countHistoryBytes(_ bytes: Int64, author: String) throws {
    for name in ["history_bytes", Self.holdingName(author)] {
      try db.withCached(
        "INSERT INTO counters (name, value) VALUES (?2, max(?1, 0)) "
          + "ON CONFLICT(name) DO UPDATE SET value = max(value + ?1, 0)"
      ) { upsert in
        try upsert.bind([.integer(bytes), .text(name)])
        _ = try upsert.step()
      }
    }
  }

  /// Counts a row just kept as history: its bytes, and where its author's rows start when
  /// it landed below that (a row id is reused after the newest rows went).
  func countKeptHistory(id: Int64, size: Int64, author: String) throws {
    try countHistoryBytes(size, author: author)
    try db.withCached("UPDATE counters SET value = min(value, ?1) WHERE name = ?2") { lower in
      try lower.bind([.integer(id), .text(Self.startName(author))])
      _ = try lower.step()
    }
  }

  /// The author key of a stored `author` column: the device's compact ID, or "-" for an
  /// unsigned revision.
  static func historyAuthor(_ row: SQLiteStatement, _ column: Int32) -> String {
    row.isNull(column) ? "-" : row.text(column)
  }

  /// Bytes of history kept per author, rebuilt from the rows when the counters do not add
  /// up to the total (a store from before they were kept, or one they drifted from).
  private func historyHoldings() throws -> [String: Int64] {
    var holdings = try readHoldings()
    if holdings.values.reduce(0, +) != (try historyBytes()) {
      try db.execute(
        "DELETE FROM counters WHERE name GLOB 'history_bytes:*' OR name GLOB 'history_from:*'; "
          + "INSERT INTO counters (name, value) SELECT 'history_bytes:' || coalesce(author, '-'), sum(size) "
          + "FROM memo_history GROUP BY author; "
          + "INSERT OR REPLACE INTO counters (name, value) "
          + "SELECT 'history_bytes', coalesce(sum(size), 0) FROM memo_history")
      holdings = try readHoldings()
    }
    return holdings
  }

  private func readHoldings() throws -> [String: Int64] {
    let read = try db.prepare("SELECT substr(name, 15), value FROM counters WHERE name GLOB 'history_bytes:*'")
    var holdings: [String: Int64] = [:]
    while try read.step() { holdings[read.text(0)] = read.int64(1) }
    return holdings
  }

  /// The oldest history rows of `author` (at most 64), from where its rows start.
  private func oldestHistory(of author: String) throws -> [Int64] {
    let start = try db.withCached("SELECT value FROM counters WHERE name = ?") { read in
      try read.bind(1, Self.startName(author))
      return try read.step() ? read.int64(0) : 0
    }
    let select = try db.prepare("SELECT id FROM memo_history WHERE id >= ?1 AND author IS ?2 ORDER BY id LIMIT 64")
    var from = start
    while true {
      try select.bind([.integer(from), author == "-" ? .null : .text(author)])
      var ids: [Int64] = []
      while try select.step() { ids.append(select.int64(0)) }
      if !ids.isEmpty || from == 0 { return ids }
      select.reset()
      from = 0
    }
  }

  private func setCounter(_ name: String, _ value: Int64) throws {
    try db.withCached("INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)") { write in
      try write.bind([.text(name), .integer(value)])
      _ = try write.step()
    }
  }

  private static func holdingName(_ author: String) -> String { "history_bytes:" + author }
  private static func startName(_ author: String) -> String { "history_from:" + author }
}
