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
  /// The last sync data this replica refused from the peer.
  public var lastRefusal: SyncRefusalRecord?
}

/// Sync data this replica refused from a peer: when, why (a `sync-refuse` code), and the
/// evidence in this program's words (`SyncViolation.detail`: numbers and field names, never
/// the peer's bytes), so that `peers` can say what was received and why it is impossible.
public struct SyncRefusalRecord: Sendable, Equatable {
  public var at: Timestamp
  /// The refusal's code (`SyncRefuseReason`'s raw value).
  public var reason: String
  public var detail: String

  /// What the refused data was, in words (a newer peer's code as itself).
  public var what: String { SyncRefuseReason(rawValue: reason)?.badData ?? "data refused as \(reason)" }

  /// The longest detail kept: details are this program's own sentences, so this only bounds
  /// a future one that names more.
  public static let maximumDetailBytes = 1024
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
        .device(peer), .id(cursor.replica), .integer(Int64(bitPattern: cursor.position)), .integer(now),
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

  /// Records that this replica refused `violation` from `peer` (the newest refusal replaces
  /// the one before). Written in a transaction of its own: the refused batch's was rolled
  /// back, and this is the only trace the refusal leaves in the store.
  public func recordRefusal(of peer: DeviceID, _ violation: SyncViolation, now: Timestamp) throws {
    var detail = violation.detail
    if detail.utf8.count > SyncRefusalRecord.maximumDetailBytes {
      detail = String(decoding: detail.utf8.prefix(SyncRefusalRecord.maximumDetailBytes), as: UTF8.self)
    }
    try sql {
      let upsert = try db.prepare(
        "INSERT INTO sync_peers (device, refused_at, refused_reason, refused_detail) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(device) DO UPDATE SET refused_at = ?2, refused_reason = ?3, refused_detail = ?4")
      try upsert.bind([.device(peer), .integer(now), .text(violation.reason.rawValue), .text(detail)])
      _ = try upsert.step()
    }
  }

  /// Every peer this replica has synced with or tried to.
  public func syncPeerRecords() throws -> [SyncPeerRecord] {
    struct Raw {
      var device: DeviceID
      var acked: UInt64
      var seen: Timestamp?
      var synced: Timestamp?
      var refusal: SyncRefusalRecord?
    }
    let raws = try sql {
      let read = try db.prepare(
        "SELECT device, acked, last_seen, last_synced, refused_at, refused_reason, refused_detail "
          + "FROM sync_peers ORDER BY device")
      var result: [Raw] = []
      while try read.step() {
        guard let device = read.device(0) else { continue }
        let refusal =
          read.isNull(4)
          ? nil : SyncRefusalRecord(at: read.int64(4), reason: read.text(5), detail: read.text(6))
        result.append(
          Raw(
            device: device, acked: UInt64(bitPattern: read.int64(1)),
            seen: read.isNull(2) ? nil : read.int64(2), synced: read.isNull(3) ? nil : read.int64(3),
            refusal: refusal))
      }
      return result
    }
    return try raws.map { raw in
      SyncPeerRecord(
        device: raw.device, lastSeen: raw.seen, lastSynced: raw.synced,
        pending: try pendingRecords(for: raw.device), heldDeletes: try heldDeleteCount(raw.device),
        lastRefusal: raw.refusal)
    }
  }
}
