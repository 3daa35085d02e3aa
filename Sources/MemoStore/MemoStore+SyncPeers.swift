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

/// The sync bookkeeping tables: `sync_peers` (feed positions both ways, the peer's last
/// known knowledge, times) and `sync_held` (deletes waiting for a person).
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

  /// Records that `peer` holds our feed up to `position` and knows `knowledge` in each
  /// notebook (for `peers`' pending count).
  public func recordPeerProgress(
    _ peer: String, acked position: UInt64, knowledge: [NotebookID: VersionVector], now: Timestamp
  ) throws {
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, acked, last_seen) VALUES (?1, ?2, ?3) "
          + "ON CONFLICT(device) DO UPDATE SET acked = max(acked, ?2), last_seen = ?3")
      try upsert.bind([.text(peer), .integer(Int64(bitPattern: position)), .integer(now)])
      _ = try upsert.step()
    }
    for (notebook, vector) in knowledge { try recordPeerKnowledge(peer, in: notebook, vector) }
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
      var seen: Timestamp?
      var synced: Timestamp?
    }
    let raws = try sql {
      let read = try db.prepare("SELECT device, acked, last_seen, last_synced FROM sync_peers ORDER BY device")
      var result: [Raw] = []
      while try read.step() {
        result.append(
          Raw(
            device: read.text(0), acked: UInt64(bitPattern: read.int64(1)),
            seen: read.isNull(2) ? nil : read.int64(2), synced: read.isNull(3) ? nil : read.int64(3)))
      }
      return result
    }
    return try raws.map { raw in
      SyncPeerRecord(
        device: raw.device, lastSeen: raw.seen, lastSynced: raw.synced,
        pending: try pendingRecords(for: raw.device), heldDeletes: try heldDeleteCount(raw.device))
    }
  }

  // MARK: - Held deletes

  func hold(_ revision: SyncRevision, for peer: String) throws {
    try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO sync_held "
          + "(device, memo, dot_origin, dot_seq, clock, revision, created, updated, private, notebook) "
          + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      try insert.bind([
        .text(peer), .text(revision.memo.rawValue), .text(revision.head.dot.origin),
        .integer(Int64(bitPattern: revision.head.dot.seq)), .blob(revision.head.clock.encoded()),
        .integer(revision.head.revision), .integer(revision.created), .integer(revision.updated),
        .integer(revision.isPrivate ? 1 : 0), revision.notebook.map { .text($0.rawValue) } ?? .null,
      ])
      _ = try insert.step()
    }
  }

  func heldDeleteCount(_ peer: String) throws -> Int {
    try sql {
      let count = try db.prepare("SELECT count(*) FROM sync_held WHERE device = ?")
      try count.bind(1, peer)
      _ = try count.step()
      return Int(count.int64(0))
    }
  }

  /// The deletes held for `peer`, as the tombstone heads they are.
  func heldDeletes(_ peer: String) throws -> [SyncRevision] {
    try sql {
      let read = try db.prepare(
        "SELECT memo, dot_origin, dot_seq, clock, revision, created, updated, private, notebook FROM sync_held "
          + "WHERE device = ?")
      try read.bind(1, peer)
      var result: [SyncRevision] = []
      while try read.step() {
        guard let memo = MemoID(canonical: read.text(0)), let clock = VersionVector(encoded: read.blob(3)) else {
          continue
        }
        result.append(
          SyncRevision(
            memo: memo,
            head: HeadSummary(
              dot: Dot(origin: read.text(1), seq: UInt64(bitPattern: read.int64(2))), clock: clock,
              revision: read.int64(4), isDeleted: true),
            created: read.int64(5), updated: read.int64(6), isPrivate: read.int64(7) != 0, title: "", body: "",
            tags: [], notebook: read.isNull(8) ? nil : NotebookID(read.text(8))))
      }
      return result
    }
  }

  func dropHeldDeletes(_ peer: String) throws {
    try sql {
      let delete = try db.prepare("DELETE FROM sync_held WHERE device = ?")
      try delete.bind(1, peer)
      _ = try delete.step()
    }
  }

  /// A person's answer to held deletes from `peer`: `apply` deletes the memos here too;
  /// `keep` keeps them, as new revisions that have seen the deletes (so the memos come
  /// back on the peer at the next sync). Returns how many were settled.
  public func settleHeldDeletes(from peer: String, apply: Bool, now: Timestamp) throws -> Int {
    try batch {
      let held = try heldDeletes(peer)
      for revision in held {
        if apply {
          _ = try applyRemote(revision, holdingDeletesFor: nil)
        } else if let current = try loadRow(revision.memo), !current.isDeleted {
          var kept = current
          kept.revision = max(current.revision, revision.head.revision) + 1
          kept.updated = max(now, current.updated)
          _ = try storeLocalRevision(kept, resolvingAll: false, alsoSeen: [revision.head.clock])
        }
      }
      try dropHeldDeletes(peer)
      return held.count
    }
  }
}
