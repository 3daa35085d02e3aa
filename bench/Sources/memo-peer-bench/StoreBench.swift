import CSQLite
import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem

/// Insert, list and search at scale, against plain unsealed SQLite on the same rows.
struct StoreBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    let root = options.keepHome ?? NSTemporaryDirectory() + "memo-peer-bench-\(getpid())"
    defer { if options.keepHome == nil { try? FileManager.default.removeItem(atPath: root) } }
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root])
    let count = options.memoCount
    let body = String(repeating: "0123456789abcdef", count: 64)  // 1 KiB
    var drafts = (0..<count).map { index in
      MemoDraft(
        title: "Memo number \(index)", body: body, tags: index % 10 == 0 ? ["tenth", "bench"] : ["bench"])
    }
    drafts[count / 2].body = body.replacingOccurrences(of: "0123", with: "NEEDLE", options: [], range: nil)

    print("store (\(count) memos of 1 KiB):")
    // Kept open while `list` is first measured (its WAL as the insert left it), then closed.
    var store: MemoStore? = try MemoStore.open(paths: paths)
    let insert = try seconds { try store?.createMany(drafts, now: 1_700_000_000_000) }
    let plainInsert = try PlainSQLite.insert(count: count, body: body, in: root + "/plain.sqlite")
    report.add(
      "insert \(count) memos (one transaction)", value: insert, unit: "s", baselineName: "plain SQLite insert",
      baseline: plainInsert)

    let environment = ["MEMO_PEER_HOME": root, "PATH": "/usr/bin:/bin"]
    let list = try best(options.repeats) { try runProcess(options.memoPeer, ["list"], environment: environment).0 }
    let listRSS = try peakRSS(options.memoPeer, ["list"], environment: environment)
    let listJSONRSS = try peakRSS(options.memoPeer, ["list", "--json"], environment: environment)
    let searchRSS = try peakRSS(options.memoPeer, ["search", "needle"], environment: environment)
    let plainRead = try best(options.repeats) { try PlainSQLite.readAll(root + "/plain.sqlite", columns: "id, title") }
    report.add(
      "memo-peer list (process)", value: list, unit: "s", baselineName: "plain SQLite read of id+title",
      baseline: plainRead, target: "≤ 3× the plain read", met: list <= 3 * plainRead)
    report.add(
      "memo-peer list peak RSS", value: Double(listRSS) / 1024, unit: "MiB", baselineName: "none", baseline: 0,
      target: "< 30 MiB", met: listRSS < 30 * 1024)
    let listJSON = try best(options.repeats) {
      try runProcess(options.memoPeer, ["list", "--json"], environment: environment).0
    }
    report.add(
      "memo-peer list --json (process)", value: listJSON, unit: "s", baselineName: "plain SQLite read",
      baseline: plainRead)
    report.add(
      "memo-peer list --json peak RSS", value: Double(listJSONRSS) / 1024, unit: "MiB", baselineName: "none",
      baseline: 0)
    let search = try best(options.repeats) {
      try runProcess(options.memoPeer, ["search", "needle"], environment: environment).0
    }
    let plainFull = try best(options.repeats) {
      try PlainSQLite.readAll(root + "/plain.sqlite", columns: "id, title, body")
    }
    report.add(
      "memo-peer search (process, decrypts every body)", value: search, unit: "s",
      baselineName: "plain SQLite read of all bodies", baseline: plainFull, target: "≤ 1.5× the plain read",
      met: search <= 1.5 * plainFull)
    report.add(
      "memo-peer search peak RSS", value: Double(searchRSS) / 1024, unit: "MiB", baselineName: "none", baseline: 0)
    // The same `list` once the inserting connection is closed (SQLite checkpoints and
    // removes the WAL): whether the open WAL is what the first figure's RSS includes.
    store = nil
    let closedRSS = try peakRSS(options.memoPeer, ["list"], environment: environment)
    report.add(
      "memo-peer list peak RSS, inserting connection closed", value: Double(closedRSS) / 1024, unit: "MiB",
      baselineName: "none", baseline: 0)
  }
}

/// The same rows in an unsealed table: what SQLite alone costs.
enum PlainSQLite {
  static func insert(count: Int, body: String, in path: String) throws -> Double {
    unlink(path)
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError("sqlite3_open") }
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL", nil, nil, nil)
    sqlite3_exec(db, "CREATE TABLE memos (id TEXT PRIMARY KEY, title TEXT, body TEXT, updated INTEGER)", nil, nil, nil)
    return seconds {
      sqlite3_exec(db, "BEGIN", nil, nil, nil)
      var statement: OpaquePointer?
      sqlite3_prepare_v2(db, "INSERT INTO memos VALUES (?, ?, ?, ?)", -1, &statement, nil)
      for index in 0..<count {
        sqlite3_bind_text(statement, 1, UUID().uuidString.lowercased(), -1, memo_sqlite_transient())
        sqlite3_bind_text(statement, 2, "Memo number \(index)", -1, memo_sqlite_transient())
        sqlite3_bind_text(statement, 3, body, -1, memo_sqlite_transient())
        sqlite3_bind_int64(statement, 4, Int64(index))
        sqlite3_step(statement)
        sqlite3_reset(statement)
      }
      sqlite3_finalize(statement)
      sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }
  }

  static func readAll(_ path: String, columns: String) throws -> Double {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError("sqlite3_open") }
    defer { sqlite3_close(db) }
    return seconds {
      var statement: OpaquePointer?
      sqlite3_prepare_v2(db, "SELECT \(columns) FROM memos ORDER BY updated DESC", -1, &statement, nil)
      var bytes = 0
      while sqlite3_step(statement) == SQLITE_ROW {
        for column in 0..<sqlite3_column_count(statement) { bytes += Int(sqlite3_column_bytes(statement, column)) }
      }
      sqlite3_finalize(statement)
      if bytes == 0 { print("(empty)") }
    }
  }
}
