import MemoCore

/// The per-peer quotas of a sync (docs/PROTOCOL.md, "Quotas"): what one trusted device may
/// add here, so that a device that floods stops only itself. Counted in the receiving
/// batch's transaction; over a quota the batch is refused (`over-quota`, naming the peer) and
/// nothing of it is lost: it comes again at a later sync.
extension MemoStore {
  /// The quotas config.json sets (its defaults when it sets none, or cannot be read: a
  /// broken file must not stop syncs; `doctor` and every command that reads it say so).
  func syncQuotas() -> SyncQuotas {
    (try? secrets.syncQuotas()) ?? SyncQuotas()
  }

  /// The UTC day of `now` (ms since 1970), the quota's period.
  static func quotaDay(_ now: Timestamp) -> Int64 { now / 86_400_000 }

  /// New memos `peer` added here by sync on `day`.
  func memosAdded(by peer: DeviceID, day: Int64) throws -> Int {
    try sql {
      try db.withCached("SELECT memos FROM sync_added WHERE peer = ? AND day = ?") { read in
        try read.bind([.device(peer), .integer(day)])
        return try read.step() ? Int(read.int64(0)) : 0
      }
    }
  }

  /// Counts `count` more new memos from `peer` on `day`, and forgets days long past. Runs
  /// inside the caller's transaction.
  func recordMemosAdded(_ count: Int, by peer: DeviceID, day: Int64) throws {
    guard count > 0 else { return }
    try sql {
      try db.withCached(
        "INSERT INTO sync_added (peer, day, memos) VALUES (?1, ?2, ?3) "
          + "ON CONFLICT(peer, day) DO UPDATE SET memos = memos + ?3"
      ) { upsert in
        try upsert.bind([.device(peer), .integer(day), .integer(Int64(count))])
        _ = try upsert.step()
      }
      try db.withCached("DELETE FROM sync_added WHERE day < ?") { prune in
        try prune.bind(1, day - 2)
        _ = try prune.step()
      }
    }
  }

  /// Sealed bytes this relay keeps of `author`'s records in `notebook` (its replicas' records).
  func relayedBytes(of author: DeviceID, in notebook: NotebookID) throws -> Int64 {
    try sql {
      try db.withCached(
        """
        SELECT coalesce(sum(length(r.sealed)), 0) FROM relayed r JOIN replica_bindings b ON b.replica = r.dot_origin
        WHERE r.notebook = ? AND b.device = ?
        """
      ) { read in
        try read.bind([.id(notebook), .device(author)])
        return try read.step() ? read.int64(0) : 0
      }
    }
  }
}
