import MemoCore

/// What `serve`'s live links read of the store after a wake (docs/PROTOCOL.md, "Live sync"),
/// counts only, so that a write that was only progress (a cursor, `last_synced`) owes no
/// sync. `feed` moves with every revision stored here. `membership` moves with what decides
/// which records this device may read and ask for: a notebook held (an accepted invitation,
/// a deleted notebook), an op of a notebook's log (a share, an unshare, a key generation, a
/// grant — made here or arriving), a key generation held. An accept stores no revision, so
/// before `membership` the daemon saw nothing to do, and an accepted notebook stayed empty
/// until somebody typed `sync` (issue 39).
public struct SyncMarks: Sendable, Equatable {
  /// The change feed's last position (`feedEnd`).
  public var feed: UInt64
  /// Notebooks held (not deleted), ops of their logs, key generations held: compared as a
  /// whole, never read as numbers of anything.
  public var membership: [Int64]

  public init(feed: UInt64, membership: [Int64]) {
    self.feed = feed
    self.membership = membership
  }
}

extension MemoStore {
  /// The store's marks now (`SyncMarks`), in one read.
  public func syncMarks() throws -> SyncMarks {
    try flushStaged()
    return try sql {
      let read = try db.prepare(
        "SELECT (SELECT coalesce((SELECT value FROM counters WHERE name = 'feed'), 0)), "
          + "(SELECT count(*) FROM notebooks WHERE deleted = 0), (SELECT count(*) FROM notebook_ops), "
          + "(SELECT count(*) FROM notebook_keys)")
      guard try read.step() else { return SyncMarks(feed: 0, membership: []) }
      return SyncMarks(feed: UInt64(bitPattern: read.int64(0)), membership: (1..<4).map { read.int64(Int32($0)) })
    }
  }
}
