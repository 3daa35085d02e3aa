import CSQLite
import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem

/// History at scale: 10,000 memos of 1 KiB with 10 revisions each; `history ID` and `show
/// ID --revision N` of one memo as whole processes (target < 50 ms each), and the store's
/// size next to the same memos without history.
struct HistoryBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    let root = NSTemporaryDirectory() + "memo-peer-bench-history-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: root) }
    let count = min(options.memoCount, 10_000)
    let body = String(repeating: "0123456789abcdef", count: 64)  // 1 KiB
    let drafts = (0..<count).map { MemoDraft(title: "Memo number \($0)", body: body) }
    print("history (\(count) memos of 1 KiB, 10 revisions each):")

    let plainPaths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root + "/without"])
    try PrivateFiles.ensureDirectory(root, role: "bench directory")
    try MemoStore.open(paths: plainPaths).createMany(drafts, now: 1_700_000_000_000)

    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root + "/with"])
    let store = try MemoStore.open(paths: paths)
    let memos = try store.createMany(drafts, now: 1_700_000_000_000)
    let build = try seconds {
      for revision in 2...10 {
        try store.batch {
          for memo in memos {
            try store.update(
              memo.id, MemoChange(body: "revision \(revision)\n" + body), now: 1_700_000_000_000 + Int64(revision))
          }
        }
      }
    }
    report.add(
      "9 edits of each of \(count) memos (one transaction per round)", value: build, unit: "s",
      baselineName: "none", baseline: 0)

    let environment = ["MEMO_PEER_HOME": root + "/with", "PATH": "/usr/bin:/bin"]
    let id = memos[count / 2].id.rawValue
    let history = try best(options.repeats) {
      try runProcess(options.memoPeer, ["history", id], environment: environment).0
    }
    let list = try best(options.repeats) { try runProcess(options.memoPeer, ["list"], environment: environment).0 }
    report.add(
      "memo-peer history ID (process)", value: history, unit: "s", baselineName: "memo-peer list (process)",
      baseline: list, target: "< 50 ms", met: history < 0.05)
    let show = try best(options.repeats) {
      try runProcess(options.memoPeer, ["show", id, "--revision", "5", "--plain"], environment: environment).0
    }
    report.add(
      "memo-peer show ID --revision 5 (process)", value: show, unit: "s", baselineName: "memo-peer list (process)",
      baseline: list, target: "< 50 ms", met: show < 0.05)
    report.add(
      "store with 10 revisions per memo", value: try Self.mebibytes(paths), unit: "MiB",
      baselineName: "the same memos without history", baseline: try Self.mebibytes(plainPaths))
  }

  /// The database's size once its write-ahead log is checkpointed.
  static func mebibytes(_ paths: NodePaths) throws -> Double {
    var db: OpaquePointer?
    guard sqlite3_open(paths.databasePath, &db) == SQLITE_OK else { throw BenchError("sqlite3_open") }
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nil, nil, nil)
    func value(_ pragma: String) -> Int64 {
      var statement: OpaquePointer?
      sqlite3_prepare_v2(db, pragma, -1, &statement, nil)
      defer { sqlite3_finalize(statement) }
      return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : 0
    }
    return Double(value("PRAGMA page_count") * value("PRAGMA page_size")) / 1_048_576
  }
}
