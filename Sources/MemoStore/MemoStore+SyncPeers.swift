import MemoCore

/// What this replica remembers about syncing with one peer (`peers` shows it).
public struct SyncPeerRecord: Sendable, Equatable {
  /// The peer's device ID (compact form).
  public var device: String
  public var lastSeen: Timestamp?
  public var lastSynced: Timestamp?
  /// Heads here that the peer has not received yet, as far as this replica knows.
  public var pending: Int
  /// Deletes from the peer held back by the mass-delete guard.
  public var heldDeletes: Int
}

/// The sync bookkeeping table `sync_peers`: feed positions both ways, the peer's last known
/// knowledge, times. (Held removals: MemoStore+Held.)
extension MemoStore {
  /// How far this replica has received `peer`'s change feed (and which database of the
  /// peer's that position is in).
  public func syncCursor(for peer: String) throws -> FeedPosition? {
    try sql {
      let read = try db.prepare("SELECT replica, cursor FROM sync_peers WHERE device = ?")
      try read.bind(1, peer)
      guard try read.step(), !read.isNull(0) else { return nil }
      return FeedPosition(replica: read.text(0), position: UInt64(bitPattern: read.int64(1)))
    }
  }

  func setSyncCursor(_ peer: String, _ cursor: FeedPosition, now: Timestamp) throws {
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, replica, cursor, last_seen) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(device) DO UPDATE SET replica = ?2, cursor = ?3, last_seen = ?4")
      try upsert.bind([
        .text(peer), .text(cursor.replica), .integer(Int64(bitPattern: cursor.position)), .integer(now),
      ])
      _ = try upsert.step()
    }
  }

  /// Records that `peer` holds our feed up to `position` and knows `knowledge` (for
  /// `peers`' pending count).
  public func recordPeerProgress(_ peer: String, acked position: UInt64, knowledge: VersionVector?, now: Timestamp)
    throws
  {
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, acked, knowledge, last_seen) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(device) DO UPDATE SET acked = max(acked, ?2), knowledge = coalesce(?3, knowledge), last_seen = ?4"
      )
      try upsert.bind([
        .text(peer), .integer(Int64(bitPattern: position)), knowledge.map { .blob($0.encoded()) } ?? .null,
        .integer(now),
      ])
      _ = try upsert.step()
    }
  }

  /// The position a peer acknowledged in our feed, when it is still this database's.
  public func peerAcked(_ peer: String) throws -> UInt64 {
    try sql {
      let read = try db.prepare("SELECT acked FROM sync_peers WHERE device = ?")
      try read.bind(1, peer)
      return try read.step() ? UInt64(bitPattern: read.int64(0)) : 0
    }
  }

  func markSynced(_ peer: String, now: Timestamp) throws {
    try sql {
      let update = try db.prepare("UPDATE sync_peers SET last_synced = ?, last_seen = ? WHERE device = ?")
      try update.bind([.integer(now), .integer(now), .text(peer)])
      _ = try update.step()
    }
  }

  /// Every peer this replica has synced with or tried to.
  public func syncPeerRecords() throws -> [SyncPeerRecord] {
    struct Raw {
      var device: String
      var acked: UInt64
      var knowledge: VersionVector
      var seen: Timestamp?
      var synced: Timestamp?
    }
    let raws = try sql {
      let read = try db.prepare(
        "SELECT device, acked, knowledge, last_seen, last_synced FROM sync_peers ORDER BY device")
      var result: [Raw] = []
      while try read.step() {
        result.append(
          Raw(
            device: read.text(0), acked: UInt64(bitPattern: read.int64(1)),
            knowledge: read.isNull(2) ? VersionVector() : VersionVector(encoded: read.blob(2)) ?? VersionVector(),
            seen: read.isNull(3) ? nil : read.int64(3), synced: read.isNull(4) ? nil : read.int64(4)))
      }
      return result
    }
    return try raws.map { raw in
      SyncPeerRecord(
        device: raw.device, lastSeen: raw.seen, lastSynced: raw.synced,
        pending: try pendingHeads(after: raw.acked, knownTo: raw.knowledge),
        heldDeletes: try heldDeleteCount(raw.device))
    }
  }

  /// Heads past `position` in our feed that `knowledge` does not cover. Reads clocks only.
  func pendingHeads(after position: UInt64, knownTo knowledge: VersionVector) throws -> Int {
    try sql {
      let read = try db.prepare("SELECT clock FROM memos WHERE feed_seq > ?")
      try read.bind(1, Int64(bitPattern: position))
      var count = 0
      while try read.step() {
        if !knowledge.covers(VersionVector(encoded: read.blob(0)) ?? VersionVector()) { count += 1 }
      }
      return count
    }
  }
}
