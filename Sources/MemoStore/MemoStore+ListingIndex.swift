import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// A large first fill builds the listing index after it, not during it (issue 43).
///
/// `memos_for_listing` covers what `list` shows (about 270 bytes an entry), and a received
/// memo lands at a random place in it. Up to about 25,000 memos its leaves stay in the
/// receiving connection's page cache (`bulkCacheKiB`); past that nearly every insert read a
/// leaf back, and every batch of 256 dirtied about 500 pages that went to the WAL and were
/// checkpointed again: 100,000 memos cost 14.5 times 10,000. So once a receiving session
/// has stored `listingIndexDeferral` records, the index is dropped, and made again (one
/// sort of the rows, in one transaction) when the last receiver on the connection ends.
///
/// Meanwhile `list` and `search` still answer, by reading the table. `meta` row
/// `listing_index_deferred` (the process id that dropped it) says the index is to be made
/// again: by that process at the end of its sessions, or by any opening once that process
/// is gone (a kill -9 mid-sync), before any migration reads the schema.
extension MemoStore {
  /// The records a receiving session stores before it defers the listing index.
  public static let listingIndexDeferral = 20_000

  static let listingIndexDeferredKey = "listing_index_deferred"

  /// Drops the listing index until `restoreListingIndex`; a no-op when it is dropped already.
  func deferListingIndex() throws {
    try batch {
      try sql {
        try db.execute("DROP INDEX IF EXISTS memos_for_listing")
        let mark = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
        try mark.bind([.text(Self.listingIndexDeferredKey), .blob(Array(String(getpid()).utf8))])
        _ = try mark.step()
      }
    }
    logger.info("listing index deferred until this sync ends")
  }

  /// Makes the listing index again if it was deferred.
  func restoreListingIndex() throws {
    guard try metaBytes(Self.listingIndexDeferredKey) != nil else { return }
    try sql { try db.transaction { try Self.makeListingIndex(db) } }
    logger.info("listing index made again")
  }

  /// At an opening, before the migrations: the index back when the process that dropped it
  /// is gone (it makes it again itself otherwise, when its sync ends).
  static func restoreAbandonedListingIndex(_ db: SQLiteConnection) throws {
    guard try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'meta'") == 1 else { return }
    let read = try db.prepare("SELECT value FROM meta WHERE key = ?")
    try read.bind(1, listingIndexDeferredKey)
    guard try read.step() else { return }
    let owner = pid_t(String(decoding: read.blob(0), as: UTF8.self)) ?? 0
    read.reset()
    // Alive (this process too: another of its connections makes it when its sync ends).
    if owner > 0, kill(owner, 0) == 0 || errno == EPERM { return }
    try db.transaction { try makeListingIndex(db) }
  }

  /// The index as schema 8 made it (a migration that changes it changes this too).
  private static func makeListingIndex(_ db: SQLiteConnection) throws {
    try db.execute(
      "CREATE INDEX IF NOT EXISTS memos_for_listing ON memos(\(Schema.listingIndexColumns))")
    let done = try db.prepare("DELETE FROM meta WHERE key = ?")
    try done.bind(1, listingIndexDeferredKey)
    _ = try done.step()
  }
}
