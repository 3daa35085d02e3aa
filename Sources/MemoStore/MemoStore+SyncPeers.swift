import MemoCore

/// What this replica remembers about syncing with one peer (`peers` shows it).
public struct SyncPeerRecord: Sendable, Equatable {
  /// The peer's device ID (compact form).
  public var device: DeviceID
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
  public func syncCursor(for peer: DeviceID) throws -> FeedPosition? {
    try sql {
      let read = try db.prepare("SELECT replica, cursor FROM sync_peers WHERE device = ?")
      try read.bind(1, peer)
      guard try read.step(), !read.isNull(0), let replica = read.replica(0) else { return nil }
      return FeedPosition(replica: replica, position: UInt64(bitPattern: read.int64(1)))
    }
  }

  func setSyncCursor(_ peer: DeviceID, _ cursor: FeedPosition, now: Timestamp) throws {
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, replica, cursor, last_seen) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(device) DO UPDATE SET replica = ?2, cursor = ?3, last_seen = ?4")
      try upsert.bind([
        .device(peer), .text(cursor.replica.rawValue), .integer(Int64(bitPattern: cursor.position)), .integer(now),
      ])
      _ = try upsert.step()
    }
  }

  /// Records that `peer` holds our feed up to `position` and knows `knowledge` in each
  /// notebook (for `peers`' pending count).
  public func recordPeerProgress(
    _ peer: DeviceID, acked position: UInt64, knowledge: [NotebookID: VersionVector], now: Timestamp
  ) throws {
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, acked, last_seen) VALUES (?1, ?2, ?3) "
          + "ON CONFLICT(device) DO UPDATE SET acked = max(acked, ?2), last_seen = ?3")
      try upsert.bind([.device(peer), .integer(Int64(bitPattern: position)), .integer(now)])
      _ = try upsert.step()
    }
    for (notebook, vector) in knowledge { try recordPeerKnowledge(peer, in: notebook, vector) }
  }

  /// The position a peer acknowledged in our feed, when it is still this database's.
  public func peerAcked(_ peer: DeviceID) throws -> UInt64 {
    try sql {
      let read = try db.prepare("SELECT acked FROM sync_peers WHERE device = ?")
      try read.bind(1, peer)
      return try read.step() ? UInt64(bitPattern: read.int64(0)) : 0
    }
  }

  func markSynced(_ peer: DeviceID, now: Timestamp) throws {
    try sql {
      let update = try db.prepare("UPDATE sync_peers SET last_synced = ?, last_seen = ? WHERE device = ?")
      try update.bind([.integer(now), .integer(now), .device(peer)])
      _ = try update.step()
    }
  }

  /// Every peer this replica has synced with or tried to.
  public func syncPeerRecords() throws -> [SyncPeerRecord] {
    struct Raw {
      var device: DeviceID
      var acked: UInt64
      var seen: Timestamp?
      var synced: Timestamp?
    }
    let raws = try sql {
      let read = try db.prepare("SELECT device, acked, last_seen, last_synced FROM sync_peers ORDER BY device")
      var result: [Raw] = []
      while try read.step() {
        guard let device = read.device(0) else { continue }
        result.append(
          Raw(
            device: device, acked: UInt64(bitPattern: read.int64(1)),
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
}
