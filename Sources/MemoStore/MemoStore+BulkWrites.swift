/// How the connection writes while it receives a sync (`SyncSink`): a receiving direction
/// commits one batch after another, each dirtying the pages its rows land on, most of them
/// leaves of the indexes spread over the whole file. With SQLite's defaults (a 2 MiB page
/// cache, a checkpoint after every 1,000 pages of WAL) the receiver of an initial sync of
/// 10,000 memos read 186 MB and wrote 171 MB for a database of 45 MB: pages fell out of
/// the cache between batches and were read again, and every other commit checkpointed,
/// copying the same index pages into the database again and again. With a 4 MiB cache and
/// a checkpoint every 4,000 pages (16 MiB of WAL) it reads 63 MB and writes 147 MB, with
/// 40% fewer syncs to disk. Atomicity and durability are SQLite's as before: a commit is
/// in the WAL (and synced) when it returns, however late it is checkpointed.
extension MemoStore {
  /// Page cache (KiB) and checkpoint interval (pages) while a sync is received.
  static let bulkCacheKiB = 4096
  static let bulkCheckpointPages = 4000

  /// SQLite's defaults, which every other use of the connection keeps.
  static let defaultCacheKiB = 2000
  static let defaultCheckpointPages = 1000

  /// Sets the receiving settings, for one more receiver (a connection may serve several
  /// sessions one after the other, each with its sink).
  func beginBulkWrites() throws {
    if bulkWriters.count == 0 {
      try sql {
        try db.execute(
          "PRAGMA cache_size = -\(Self.bulkCacheKiB); PRAGMA wal_autocheckpoint = \(Self.bulkCheckpointPages)")
      }
    }
    bulkWriters.count += 1
  }

  /// One receiver less; after the last, back to the defaults and the cache's extra memory
  /// given back.
  func endBulkWrites() {
    bulkWriters.count -= 1
    guard bulkWriters.count == 0 else { return }
    // A failure leaves the marker: the next opening makes the index.
    try? restoreListingIndex()
    try? db.execute(
      "PRAGMA cache_size = -\(Self.defaultCacheKiB); PRAGMA wal_autocheckpoint = \(Self.defaultCheckpointPages); "
        + "PRAGMA shrink_memory")
  }
}

/// How many sinks receive on a connection now (`beginBulkWrites`).
final class BulkWriters {
  var count = 0
}
