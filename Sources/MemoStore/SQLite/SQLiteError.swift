internal import CSQLite
import MemoCore

/// A failed SQLite call: the result code and the name of the call, plus SQLite's message
/// (which names tables and columns, never values) for debug logs.
struct SQLiteError: Error, Equatable {
  let code: Int32
  let call: String
  let message: String

  var primaryCode: Int32 { code & 0xFF }

  /// Another connection holds the lock this call needed, past the busy timeout.
  var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

  var diagnostics: String { "\(call): \(message) (SQLite code \(code))" }

  /// The user-facing error for this failure, with what to do next.
  func memoPeerError(database path: String) -> MemoPeerError {
    switch primaryCode {
    case SQLITE_FULL:
      return MemoPeerError(
        .diskFull, "the disk holding \(path) is full; nothing was changed",
        hint: "free some space and try again", diagnostics: diagnostics)
    case SQLITE_NOTADB, SQLITE_CORRUPT:
      return MemoPeerError(
        .corruptDatabase, "\(path) is damaged or is not an SQLite database; it was left untouched",
        remedy: .restoreFromExport, diagnostics: diagnostics)
    case SQLITE_BUSY, SQLITE_LOCKED:
      // `MemoStore.translatingSQLiteErrors` names the holder when it can.
      return LockHolder.busyError(
        nil, waitedMilliseconds: MemoStore.busyTimeoutMilliseconds, diagnostics: diagnostics)
    case SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN:
      return MemoPeerError(
        .storage, "cannot write to \(path)",
        hint: "check that the file system is writable and the directory belongs to you",
        diagnostics: diagnostics)
    default:
      return MemoPeerError(
        .storage, "the memo database failed (SQLite code \(code))",
        hint: "run the command again with --debug for details", diagnostics: diagnostics)
    }
  }
}
