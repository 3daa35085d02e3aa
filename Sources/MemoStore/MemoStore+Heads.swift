import MemoCore
import MemoCrypto

/// The heads of each memo (docs/PROTOCOL.md, "Sync"): every row of the memos table is one
/// head. The winner (`MemoHeads.winner`) sits at the memo's id; every other head sits at
/// its conflict-copy id, derived from the memo id and the head's dot, so every replica
/// names a copy the same way.
extension MemoStore {
  /// One stored head and where it lives.
  struct HeadRow {
    var rowID: String
    var head: HeadSummary
  }

  /// The heads of `memo`: its row and its conflict copies' rows.
  func heads(of memo: MemoID) throws -> [HeadRow] {
    try sql {
      try db.withCached(
        "SELECT id, dot_origin, dot_seq, clock, revision, deleted FROM memos WHERE id = ?1 OR conflict_of = ?1"
      ) { query in
        try query.bind(1, memo)
        var result: [HeadRow] = []
        while try query.step() {
          guard !query.isNull(1), let clock = VersionVector(encoded: query.blob(3)) else {
            throw MemoPeerError(
              .corruptDatabase, "memo \(memo.short) has a row without its sync history",
              hint: "restore from an export; the file was left untouched")
          }
          let dot = try storedDot(query, 1, 2)
          result.append(
            HeadRow(
              rowID: query.text(0),
              head: HeadSummary(dot: dot, clock: clock, revision: query.int64(4), isDeleted: query.int64(5) != 0)))
        }
        return result
      }
    }
  }

  /// The id of the conflict copy that shows head `dot` of `memo`: the first 16 bytes of
  /// SHA-256 over both, in UUID layout.
  static func copyID(of memo: MemoID, dot: Dot) -> MemoID {
    hashedID("memo-peer/1\0conflict-copy\0\(memo.rawValue)\0\(dot.origin)\0\(dot.seq)")
  }

  /// An id every replica derives alike from `text`: the first 16 bytes of its SHA-256, in
  /// UUID layout.
  static func hashedID(_ text: String) -> MemoID {
    let digest = try? SHA256.hash(Array(text.utf8))
    guard let digest else { return MemoID() }
    let hex = Hex.encode(Array(digest.prefix(16)))
    let text = [
      hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4),
      hex.dropFirst(20),
    ].map(String.init).joined(separator: "-")
    return MemoID(canonical: text) ?? MemoID()
  }

  func refuseConflictCopy(_ memo: Memo) throws {
    guard let original = memo.conflictOf else { return }
    throw MemoPeerError(
      .conflict, "\(memo.id.short) is a conflict copy of memo \(original.short); it cannot be changed by itself",
      remedy: .resolveConflict(memo: memo.id.short))
  }

  /// Throws the `conflict` error `update` and `delete` would throw, before a person spends
  /// effort on a change that could not be saved (the editor, a confirmation).
  public func checkChangeable(_ id: MemoID) throws {
    guard let memo = try loadRow(id), !memo.isDeleted else { return }
    try refuseConflictCopy(memo)
    try refuseWhileConflicted(id, doing: "changed")
  }

  /// Refuses a new revision of a memo that has conflict copies (see `update`).
  func refuseWhileConflicted(_ id: MemoID, doing verb: String) throws {
    let copies = try heads(of: id).filter { !$0.head.isDeleted && $0.rowID != id.rawValue }.count
    guard copies == 0 else {
      throw MemoPeerError(
        .conflict,
        "memo \(id.short) has \(copies) conflict cop\(copies == 1 ? "y" : "ies") from a sync; it was not \(verb)",
        hint: "resolve them first", remedy: .resolveConflict(memo: id.short))
    }
  }

  // MARK: - Counters

  /// Reserves `count` sequence numbers of this replica; returns the first. They are this
  /// replica's own entry in its knowledge.
  func nextLocalSeqs(_ count: Int) throws -> UInt64 {
    try bump(
      "INSERT INTO knowledge (origin, seq) VALUES (?1, ?2) ON CONFLICT(origin) DO UPDATE SET seq = seq + ?2 RETURNING seq",
      key: replicaID.rawValue, by: count)
  }

  /// Reserves `count` positions in this replica's change feed; returns the first.
  func nextFeedPositions(_ count: Int) throws -> UInt64 {
    if staged.isActive { return try stagedFeedPositions(count) }
    return try bump(
      "INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = value + ?2 RETURNING value",
      key: "feed", by: count)
  }

  /// Advances a counter by `count` and returns the first number reserved. A counter past
  /// 2^53 (which no real history reaches, but a damaged file may hold) is refused, so every
  /// number this replica sends is one its peers accept.
  private func bump(_ statement: String, key: String, by count: Int) throws -> UInt64 {
    try sql {
      try db.withCached(statement) { upsert in
        try upsert.bind([.text(key), .integer(Int64(count))])
        guard try upsert.step() else { throw MemoPeerError(.storage, "a sync counter could not be advanced") }
        let last = upsert.int64(0)
        guard count >= 1, last >= count, UInt64(last) <= SyncLimits.maximumSequence else {
          throw Self.counterOutOfRange(key == "feed" ? "change feed" : "sequence")
        }
        return UInt64(last) - UInt64(count) + 1
      }
    }
  }

  /// A mark that moves whenever something the web page shows changed: a revision stored
  /// (the feed: memos, conflicts, history), the inbox (an arrival, an accept, a drop), a
  /// purge (which removes rows without a revision) or history let go (the trash emptied).
  /// Counts only, never content, so the page may ask for it while the node is locked.
  public func changeMark() throws -> String {
    try flushStaged()
    return try sql {
      let read = try db.prepare(
        "SELECT (SELECT value FROM counters WHERE name = 'feed'), (SELECT count(*) FROM inbox), "
          + "(SELECT coalesce(max(rowid), 0) FROM inbox), (SELECT count(*) FROM purges), "
          + "(SELECT coalesce((SELECT value FROM counters WHERE name = 'history_bytes'), 0))")
      guard try read.step() else { return "0" }
      return (0..<5).map { String(read.int64(Int32($0))) }.joined(separator: ".")
    }
  }

  /// The last position in this replica's change feed: it moves with every revision stored
  /// here (made here, synced, delivered or relayed) and with nothing else, so `serve`'s live
  /// push compares it to tell a change worth sending from a write that was only progress.
  public func feedEnd() throws -> UInt64 {
    try flushStaged()
    return try sql {
      let read = try db.prepare("SELECT value FROM counters WHERE name = 'feed'")
      return try read.step() ? UInt64(bitPattern: read.int64(0)) : 0
    }
  }

  /// Per origin, the highest sequence number this replica has seen all of. Entries a peer
  /// could plant before knowledge was checked (beyond 2^53, or past 4,096 replicas) are
  /// left out: claiming less is always safe, and peers refuse a `sync-hello` with them.
  public func knowledge() throws -> VersionVector {
    try sql {
      let read = try db.prepare("SELECT origin, seq FROM knowledge ORDER BY origin = ?1 DESC, origin")
      try read.bind(1, replicaID)
      var entries: [ReplicaID: UInt64] = [:]
      while try read.step(), entries.count < SyncLimits.maximumReplicas {
        let seq = UInt64(bitPattern: read.int64(1))
        if seq <= SyncLimits.maximumSequence, let origin = read.replica(0) { entries[origin] = seq }
      }
      return VersionVector(entries)
    }
  }

  /// This replica's own last sequence number: what it has made (`SyncRules.Receiver`).
  func ownSequence() throws -> UInt64 {
    try sql {
      try db.withCached("SELECT seq FROM knowledge WHERE origin = ?") { read in
        try read.bind(1, replicaID)
        guard try read.step() else { return 0 }
        let seq = UInt64(bitPattern: read.int64(0))
        return seq <= SyncLimits.maximumSequence ? seq : 0
      }
    }
  }

  /// What a peer's data is checked against: this replica and its sequence.
  func receiver() throws -> SyncRules.Receiver {
    SyncRules.Receiver(replica: replicaID, sequence: try ownSequence())
  }

  // MARK: - Horizon

  /// Per replica, the highest sequence of a revision this replica has seen itself — the dot
  /// of a revision it stored or held (clock entries do not count: a revision names what it
  /// has seen, which proves nothing about what this replica holds). The bound of what a
  /// peer's knowledge may raise ours to.
  func horizon() throws -> VersionVector { try horizonRows("SELECT origin, seq FROM horizon") }

  /// Per replica, the highest sequence of a revision of `notebook` this replica has seen
  /// itself (schema 7): the bound of what a peer's knowledge of that notebook may raise
  /// ours to.
  func horizon(of notebook: NotebookID) throws -> VersionVector {
    try horizonRows("SELECT origin, seq FROM notebook_horizon WHERE notebook = ?", [.id(notebook)])
  }

  /// The (origin, seq) rows of one of the horizon tables, as a vector.
  private func horizonRows(_ query: String, _ values: [SQLiteValue] = []) throws -> VersionVector {
    try flushStaged()
    return try sql {
      try db.withCached(query) { read in
        try read.bind(values)
        var entries: [ReplicaID: UInt64] = [:]
        while try read.step() {
          if let origin = read.replica(0) { entries[origin] = UInt64(bitPattern: read.int64(1)) }
        }
        return VersionVector(entries)
      }
    }
  }

  /// Raises the horizon to `dot`, and the horizon of `notebook` (schema 7), which bounds
  /// what a peer may claim for that notebook (this replica's own dots excluded: its bound
  /// is its own sequence). Runs inside the caller's transaction; in a staged batch it is
  /// written at its end (`StagedWrites`).
  func raiseHorizon(_ dot: Dot, in notebook: NotebookID?) throws {
    guard dot.origin != replicaID else { return }
    if staged.isActive { return stageHorizon(dot, in: notebook) }
    try sql {
      try Self.raiseHorizon(db, dot)
      if let notebook { try Self.raiseHorizon(db, dot, in: notebook) }
    }
  }

  static func raiseHorizon(_ db: SQLiteConnection, _ dot: Dot, in notebook: NotebookID) throws {
    try db.withCached(
      "INSERT INTO notebook_horizon (notebook, origin, seq) VALUES (?1, ?2, ?3) "
        + "ON CONFLICT(notebook, origin) DO UPDATE SET seq = max(seq, ?3)"
    ) { upsert in
      try upsert.bind([.id(notebook), .id(dot.origin), .integer(Int64(bitPattern: dot.seq))])
      _ = try upsert.step()
    }
  }

  static func raiseHorizon(_ db: SQLiteConnection, _ dot: Dot) throws {
    try db.withCached(
      "INSERT INTO horizon (origin, seq) VALUES (?1, ?2) ON CONFLICT(origin) DO UPDATE SET seq = max(seq, ?2)"
    ) { upsert in
      try upsert.bind([.id(dot.origin), .integer(Int64(bitPattern: dot.seq))])
      _ = try upsert.step()
    }
  }

  /// Every replica this node tracks (its knowledge and horizon): what the 4,096 cap counts.
  func knownReplicas() throws -> Set<ReplicaID> {
    Set(try knowledge().entries.keys).union(try horizon().entries.keys)
  }

  /// Schema 5: the horizon of the rows and held removals already here (their dots), and of
  /// the knowledge. Runs inside the migration's transaction; it only fills the new table.
  static func backfillHorizon(_ db: SQLiteConnection) throws {
    for query in [
      "SELECT dot_origin, dot_seq FROM memos WHERE dot_origin IS NOT NULL AND dot_seq IS NOT NULL",
      "SELECT dot_origin, dot_seq FROM sync_held", "SELECT origin, seq FROM knowledge",
    ] {
      let read = try db.prepare(query)
      while try read.step() {
        // A row without a valid origin has no place in the horizon (it came from before the
        // checks); it is left out rather than stopping the migration.
        if let dot = read.dot(0, 1) { try raiseHorizon(db, dot) }
      }
    }
  }

  // MARK: - Storing heads

  /// Stores `memo` as a new revision made here: a new dot, a clock that has seen the
  /// winner and the tombstone heads (every head with `resolvingAll`), and those heads
  /// removed. Runs inside the caller's transaction.
  @discardableResult
  /// `author`: the `origin` shown for the revision when it is not this replica (an imported
  /// or delivered memo keeps the device it came from); the dot is always this replica's.
  func storeLocalRevision(_ memo: Memo, resolvingAll: Bool, alsoSeen: [VersionVector] = [], author: MemoOrigin? = nil)
    throws -> Memo
  {
    let existing = try heads(of: memo.id)
    var next = memo
    let dot = Dot(origin: replicaID, seq: try nextLocalSeqs(1))
    var clock = MemoHeads.clockForLocalRevision(existing.map(\.head), resolvingAll: resolvingAll)
    for seen in alsoSeen { clock.merge(seen) }
    clock.add(dot)
    next.dot = dot
    next.clock = clock
    next.origin = author ?? .replica(replicaID)
    next.conflictOf = nil
    next.notebook = try notebookOfRow(next)
    next.record = try signedRecord(for: next)
    let removing = existing.filter { clock.covers($0.head.clock) }.map(\.head.dot)
    try storeHead(next, existing: existing, removing: removing)
    return next
  }

  /// Stores a head of memo `memo.id` (its content in `memo`), removes the heads with
  /// `removing` dots, and moves rows so that the winner sits at the memo's id and every
  /// other head at its copy id. Runs inside the caller's transaction.
  func storeHead(_ memo: Memo, existing: [HeadRow], removing: [Dot]) throws {
    guard let dot = memo.dot else { throw MemoPeerError(.storage, "a revision without a dot cannot be stored") }
    // Settled before the rows it may be read from go.
    var memo = memo
    memo.notebook = try notebookOfRow(memo)
    let now = Self.wallClock()
    let before = MemoHeads.winner(existing.map(\.head))
    var kept: [HeadRow] = []
    for row in existing {
      if removing.contains(row.head.dot) {
        // Kept as history in this transaction: nothing superseded is lost on a kill.
        try recordHistory(ofRow: row.rowID, memo: memo.id, now: now)
        try deleteRow(row.rowID)
      } else {
        kept.append(row)
      }
    }
    let incoming = HeadSummary(dot: dot, clock: memo.clock, revision: memo.revision, isDeleted: memo.isDeleted)
    guard let winner = MemoHeads.winner(kept.map(\.head) + [incoming]) else { return }
    // A delete that won over a live revision puts the memo in the trash; a live winner
    // takes it out (a memo with no row here has nothing there: a purge empties both).
    let wasLive = before.map { !$0.isDeleted } ?? false
    if winner.isDeleted == wasLive, winner.isDeleted || !existing.isEmpty {
      try updateTrash(
        memo.id, winnerDeleted: winner.isDeleted, author: winner.dot == dot ? memo.record?.author : nil, now: now)
    }
    let place = { (head: HeadSummary) -> MemoID in
      head.dot == winner.dot ? memo.id : Self.copyID(of: memo.id, dot: head.dot)
    }
    // The row at the memo's id first (it may have to make room), then the others.
    let ordered = kept.filter { $0.rowID == memo.id.rawValue } + kept.filter { $0.rowID != memo.id.rawValue }
    for row in ordered where row.rowID != place(row.head).rawValue {
      try relocate(row, of: memo.id, to: place(row.head))
    }
    var stored = memo
    stored.id = place(incoming)
    stored.conflictOf = stored.id == memo.id ? nil : memo.id
    try insertRow(stored)
  }

  /// Inserts a head's row at the next feed position.
  private func insertRow(_ memo: Memo) throws {
    let values = try row(for: memo, feed: try nextFeedPositions(1))
    try sql {
      try db.withCached(Self.insertMemo) { insert in
        try insert.bind(values)
        _ = try insert.step()
      }
    }
  }

  private func deleteRow(_ rowID: String) throws {
    try sql {
      try db.withCached("DELETE FROM memos WHERE id = ?") { delete in
        try delete.bind(1, rowID)
        _ = try delete.step()
      }
    }
  }

  /// Moves a head's row to another id: its sealed fields are bound to the row id, so they
  /// are opened and sealed again.
  private func relocate(_ row: HeadRow, of memo: MemoID, to target: MemoID) throws {
    guard let rowID = MemoID(canonical: row.rowID), var moved = try loadRow(rowID) else { return }
    let pinned = try sql {
      let read = try db.prepare("SELECT pinned FROM memos WHERE id = ?")
      try read.bind(1, row.rowID)
      return try read.step() && read.int64(0) != 0
    }
    moved.id = target
    moved.conflictOf = target == memo ? nil : memo
    try deleteRow(row.rowID)
    try insertRow(moved)
    try sql {
      if pinned && target == memo {
        let pin = try db.prepare("UPDATE memos SET pinned = 1 WHERE id = ?")
        try pin.bind(1, target)
        _ = try pin.step()
      }
    }
  }

  /// Schema 4: gives every existing row a dot of this replica, a clock and a feed
  /// position, in the order the memos were made. Runs inside the migration's transaction;
  /// it only fills the new columns.
  static func backfillSyncColumns(_ db: SQLiteConnection) throws {
    let ids = try db.prepare("SELECT id FROM memos ORDER BY created, id")
    var rows: [String] = []
    while try ids.step() { rows.append(ids.text(0)) }
    guard !rows.isEmpty else { return }
    let read = try db.prepare("SELECT value FROM meta WHERE key = 'replica_id'")
    let replica: ReplicaID
    if try read.step(), let stored = ReplicaID(String(decoding: read.blob(0), as: UTF8.self)) {
      replica = stored
    } else {
      guard let made = ReplicaID(Hex.encode(try SystemRandom.bytes(16))) else {
        throw MemoPeerError(.storage, "could not make a replica id")
      }
      replica = made
      let insert = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('replica_id', ?)")
      try insert.bind(1, Array(replica.rawValue.utf8))
      _ = try insert.step()
    }
    let update = try db.prepare("UPDATE memos SET dot_origin = ?, dot_seq = ?, clock = ?, feed_seq = ? WHERE id = ?")
    for (index, id) in rows.enumerated() {
      let seq = Int64(index + 1)
      let clock = VersionVector([replica: UInt64(seq)]).encoded()
      try update.bind([.replica(replica), .integer(seq), .blob(clock), .integer(seq), .text(id)])
      _ = try update.step()
      update.reset()
    }
    let count = Int64(rows.count)
    let knowledge = try db.prepare("INSERT INTO knowledge (origin, seq) VALUES (?, ?)")
    try knowledge.bind([.replica(replica), .integer(count)])
    _ = try knowledge.step()
    let feed = try db.prepare("INSERT INTO counters (name, value) VALUES ('feed', ?)")
    try feed.bind(1, count)
    _ = try feed.step()
  }
}

extension MemoStore {
  /// Every row, tombstones and conflict copies included, decrypted, ordered by id: for
  /// comparing replicas in tests and `sync --verify`-style checks. Reads all memos into
  /// memory, so it is not for large stores.
  public func allHeadRows() throws -> [Memo] {
    try sql {
      let query = try db.prepare("SELECT \(Self.memoColumns) FROM memos ORDER BY id")
      var result: [Memo] = []
      while try query.step() {
        let id = try memoID(query.text(0))
        result.append(try decrypt(id: id, revision: query.int64(7), try columns(of: query)))
      }
      return result
    }
  }
}
