import MemoCore

/// Sync bookkeeping per notebook (schema 6): a device that gets only some notebooks must
/// not claim, or be credited with, revisions of the others. Knowledge, the cursor in each
/// peer's feed and each peer's last known knowledge are kept per notebook; this replica's
/// own sequence counter (`knowledge` table, its own row) stays one for all.
extension MemoStore {
  /// Per origin, the highest sequence this replica has seen all of in `notebook`; its own
  /// entry is its sequence counter (it holds every revision it made).
  public func knowledge(of notebook: NotebookID) throws -> VersionVector {
    let own = try knowledge()[replicaID]
    return try sql {
      try db.withCached("SELECT origin, seq FROM notebook_knowledge WHERE notebook = ?") { read in
        try read.bind(1, notebook)
        var entries: [ReplicaID: UInt64] = own > 0 ? [replicaID: own] : [:]
        // Entries a peer could plant before knowledge was checked (beyond 2^53, or past
        // 4,096 replicas) are left out, as in `knowledge()`: claiming less is always safe.
        while try read.step(), entries.count < SyncLimits.maximumReplicas {
          let seq = UInt64(bitPattern: read.int64(1))
          if let origin = read.replica(0), origin != replicaID, seq <= SyncLimits.maximumSequence {
            entries[origin] = seq
          }
        }
        return VersionVector(entries)
      }
    }
  }

  /// Raises this replica's knowledge in `notebook` with what a peer claims, as far as
  /// `SyncRules.adoptable` allows: never beyond the notebook's horizon (what arrived here in
  /// that notebook) or the knowledge already held there, never this replica's own entry
  /// (entries only grow).
  func learn(claimed: VersionVector, in notebook: NotebookID) throws {
    let bound = try horizon(of: notebook).merging(try knowledge(of: notebook))
    let adopted = SyncRules.adoptable(claimed, horizon: bound, own: replicaID)
    try sql {
      for (origin, seq) in adopted.entries {
        try db.withCached(
          "INSERT INTO notebook_knowledge (notebook, origin, seq) VALUES (?1, ?2, ?3) "
            + "ON CONFLICT(notebook, origin) DO UPDATE SET seq = max(seq, ?3)"
        ) { upsert in
          try upsert.bind([.id(notebook), .replica(origin), .integer(Int64(bitPattern: seq))])
          _ = try upsert.step()
        }
      }
    }
  }

  /// How far this replica has received `peer`'s feed for `notebook` (and in which of the
  /// peer's databases).
  public func syncCursor(for peer: DeviceID, in notebook: NotebookID) throws -> FeedPosition? {
    try sql {
      try db.withCached("SELECT replica, position FROM sync_cursors WHERE device = ? AND notebook = ?") { read in
        try read.bind([.device(peer), .id(notebook)])
        // A cursor in a replica that is not one is no cursor: the peer sends from the start.
        guard try read.step(), let replica = read.replica(0) else { return nil }
        return FeedPosition(replica: replica, position: UInt64(bitPattern: read.int64(1)))
      }
    }
  }

  func setSyncCursor(_ peer: DeviceID, in notebook: NotebookID, _ cursor: FeedPosition) throws {
    try sql {
      try db.withCached(
        "INSERT INTO sync_cursors (device, notebook, replica, position) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(device, notebook) DO UPDATE SET replica = ?3, position = ?4"
      ) { upsert in
        try upsert.bind([
          .device(peer), .id(notebook), .id(cursor.replica),
          .integer(Int64(bitPattern: cursor.position)),
        ])
        _ = try upsert.step()
      }
    }
  }

  /// Records what `peer` said it knows in `notebook` (for `peers`' pending count).
  func recordPeerKnowledge(_ peer: DeviceID, in notebook: NotebookID, _ knowledge: VersionVector) throws {
    try sql {
      try db.withCached(
        "INSERT INTO sync_peer_knowledge (device, notebook, knowledge) VALUES (?1, ?2, ?3) "
          + "ON CONFLICT(device, notebook) DO UPDATE SET knowledge = ?3"
      ) { upsert in
        try upsert.bind([.device(peer), .id(notebook), .blob(knowledge.encoded())])
        _ = try upsert.step()
      }
    }
  }

  /// Rows of our feed, of notebooks shared with `peer`, that a sync would send it: not
  /// covered by its last known knowledge there, and — in a notebook it has synced with us
  /// before — past the position it acknowledged. Reads clocks only.
  func pendingRecords(for peer: DeviceID) throws -> Int {
    let shared = Set(try activeMemberships(of: peer).map(\.1.id))
    guard !shared.isEmpty else { return 0 }
    let known = try peerKnowledge(peer)
    let acked = try peerAcked(peer)
    return try sql {
      let read = try db.prepare(
        "SELECT clock, notebook, feed_seq FROM memos UNION ALL SELECT clock, notebook, feed_seq FROM relayed")
      var count = 0
      while try read.step() {
        guard !read.isNull(1), let notebook = read.notebook(1), shared.contains(notebook) else { continue }
        if let knowledge = known[notebook] {
          guard UInt64(bitPattern: read.int64(2)) > acked else { continue }
          if knowledge.covers(VersionVector(encoded: read.blob(0)) ?? VersionVector()) { continue }
        }
        count += 1
      }
      return count
    }
  }

  /// What `peer` last said it knows, per notebook.
  func peerKnowledge(_ peer: DeviceID) throws -> [NotebookID: VersionVector] {
    try sql {
      let read = try db.prepare("SELECT notebook, knowledge FROM sync_peer_knowledge WHERE device = ?")
      try read.bind(1, peer)
      var result: [NotebookID: VersionVector] = [:]
      while try read.step() {
        if let id = read.notebook(0), let vector = VersionVector(encoded: read.blob(1)) { result[id] = vector }
      }
      return result
    }
  }
}
