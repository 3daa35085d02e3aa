import MemoCore
import MemoProtocol

/// The sending side of one direction of a sync: reads this replica's change feed from the
/// peer's positions onwards and yields batches of records of the notebooks shared with the
/// peer that it lacks (those its knowledge in the notebook does not cover). A memo of a
/// notebook this device is a member of is sealed under the notebook's key; a record this
/// device relays goes as it came. Holds one batch at a time.
///
/// The knowledge it reports (`knowledge`) is read before the first batch; the feed is read
/// to its end at the time of each read, so a head changed meanwhile is sent at its new
/// position. Either way the peer ends up holding everything that knowledge claims.
public final class SyncSource {
  public let store: MemoStore
  /// Per notebook sent: what the peer knows there, and where in this feed it stands.
  let plan: [NotebookID: SyncPlan.Outgoing]
  /// Per notebook sent, this replica's knowledge when the sync began: what the peer may
  /// adopt once it has every batch.
  public let knowledge: [NotebookID: VersionVector]
  /// The position after the last row read.
  public private(set) var position: UInt64
  public private(set) var isFinished = false
  /// Records sent so far.
  public private(set) var sent = 0
  let maximumRevisions: Int
  let maximumBytes: Int
  /// Feed rows read for one batch at most (most of them skipped as known to the peer).
  static let maximumScan = 16384
  /// Replicas whose binding this session has sent (or has none to send).
  private var bound: Set<ReplicaID> = []

  public init(
    store: MemoStore, plan: [NotebookID: SyncPlan.Outgoing], maximumRevisions: Int = 256,
    maximumBytes: Int = 512 * 1024
  ) throws {
    self.store = store
    self.plan = plan
    self.knowledge = try Dictionary(uniqueKeysWithValues: plan.keys.map { ($0, try store.knowledge(of: $0)) })
    self.position = plan.values.map(\.start).min() ?? 0
    isFinished = plan.isEmpty
    self.maximumRevisions = maximumRevisions
    self.maximumBytes = maximumBytes
  }

  /// Rows of the feed after `position` that this sync may send: an upper bound, for
  /// progress.
  public func estimate() throws -> Int { plan.isEmpty ? 0 : try store.feedCount(after: position) }

  /// The next batch, nil when the feed is exhausted. A batch may carry no records (every
  /// row read was of another notebook or known to the peer) but still moves the peer's
  /// positions on.
  public func nextBatch() throws -> SyncRecordBatch.Batch? {
    guard !isFinished else { return nil }
    var records: [SyncRecord] = []
    var bytes = 0
    // Rows the peer must not get (another notebook) or already has are skipped by their
    // notebook, position and clock alone (their sealed columns are not even read), many at
    // a time: a peer that knows everything is told "nothing up to here" in one batch.
    let plan = self.plan
    let skip = { (notebook: NotebookID?, feed: UInt64, clock: VersionVector) -> Bool in
      guard let notebook, let outgoing = plan[notebook] else { return true }
      return feed <= outgoing.start || outgoing.knowledge.covers(clock)
    }
    var bindings: [ReplicaBinding] = []
    let rows = try store.recordRows(after: position, limit: Self.maximumScan, skip: skip) { record in
      // A row a peer would refuse (left by a sync before the checks existed: a number out of
      // range) is not sent, so it cannot stop every later sync; it stays here as it is.
      guard (try? SyncRules.checkNumbers(record)) != nil else { return true }
      // The first record of a replica in this session brings its binding (a signed record
      // is worth nothing to a peer that cannot tell whose replica it is).
      if record.signature != nil, bound.insert(record.dot.origin).inserted,
        let binding = try store.binding(of: record.dot.origin)
      {
        bindings.append(binding)
        bytes += SyncRecordBatch.bindingSize
      }
      bytes += SyncRecordBatch.encodedSize(record)
      records.append(record)
      return records.count < maximumRevisions && bytes < maximumBytes
        && bindings.count < SyncRecordBatch.maximumBindings
    }
    guard let last = rows.last else {
      isFinished = true
      return nil
    }
    position = last
    sent += records.count
    return SyncRecordBatch.Batch(position: position, bindings: bindings, records: records)
  }
}

extension MemoStore {
  /// One row of the change feed, still sealed.
  struct FeedRow {
    var rowID: MemoID
    var memo: MemoID
    var head: HeadSummary
    var columns: SealedColumns
  }

  /// Reads feed rows (memos and relayed records) after `position` in order, until `body`
  /// returns false or `limit` rows were read, each as the record the peer gets; rows that
  /// `skip` accepts (by notebook, position and clock) are passed over without reading
  /// their sealed columns. Returns the feed positions read.
  func recordRows(
    after position: UInt64, limit: Int, skip: (NotebookID?, UInt64, VersionVector) -> Bool,
    _ body: (SyncRecord) throws -> Bool
  ) throws -> [UInt64] {
    try sql {
      let query = try db.prepare(
        "SELECT clock, feed_seq, rowid, notebook, 0 FROM memos WHERE feed_seq > ?1 "
          + "UNION ALL SELECT clock, feed_seq, rowid, notebook, 1 FROM relayed WHERE feed_seq > ?1 "
          + "ORDER BY 2 LIMIT ?2")
      try query.bind([.integer(Int64(bitPattern: position)), .integer(Int64(limit))])
      let recordRow = try db.prepare(
        "SELECT id, conflict_of, dot_origin, dot_seq, record_key, record, signature FROM memos WHERE rowid = ?")
      let memoRow = try db.prepare("SELECT \(Self.memoColumns) FROM memos WHERE rowid = ?")
      let relayedRow = try db.prepare(
        "SELECT memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, signature FROM relayed WHERE rowid = ?")
      var positions: [UInt64] = []
      var notebooks = NotebookIDCache()
      while try query.step() {
        let feed = UInt64(bitPattern: query.int64(1))
        positions.append(feed)
        let notebook = query.isNull(3) ? nil : notebooks.notebook(query, 3)
        let clock = VersionVector(encoded: query.blob(0)) ?? VersionVector()
        if skip(notebook, feed, clock) { continue }
        let record: SyncRecord?
        if query.int64(4) == 0 {
          let rowid = query.int64(2)
          record =
            try notebook.flatMap { try storedRecord(recordRow, rowid: rowid, notebook: $0, clock: clock) }
            ?? memoRecord(memoRow, rowid: rowid)
        } else {
          record = try relayedRecord(relayedRow, rowid: query.int64(2))
        }
        if let record, try !body(record) { break }
      }
      return positions
    }
  }

  /// A memo row's record as its author sealed and signed it (sync version 3), read without
  /// its other columns (the sealed title, body and tags, the author): nil for a row from
  /// before signing, which `memoRecord` seals as it leaves.
  private func storedRecord(_ statement: SQLiteStatement, rowid: Int64, notebook: NotebookID, clock: VersionVector)
    throws -> SyncRecord?
  {
    try statement.bind(1, rowid)
    defer { statement.reset() }
    guard try statement.step(), !statement.isNull(2), let dot = statement.dot(2, 3), !statement.isNull(4),
      !statement.isNull(5)
    else { return nil }
    let rowID = try memoID(statement.text(0))
    let memo = statement.isNull(1) ? rowID : statement.memo(1) ?? rowID
    return SyncRecord(
      notebook: notebook, memo: memo, dot: dot, clock: clock, keyID: statement.text(4),
      sealed: statement.blob(5), signature: statement.isNull(6) ? nil : statement.blob(6))
  }

  /// A memo row opened under the device key and sealed under its notebook's key.
  private func memoRecord(_ statement: SQLiteStatement, rowid: Int64) throws -> SyncRecord? {
    try statement.bind(1, rowid)
    defer { statement.reset() }
    guard try statement.step() else { return nil }
    let rowID = try memoID(statement.text(0))
    let columns = try columns(of: statement)
    guard let dot = columns.dot else { return nil }
    // A head from sync version 3 travels as its author sealed and signed it: nothing to open.
    if let stored = columns.record, let notebook = columns.notebook {
      return SyncRecord(
        notebook: notebook, memo: columns.conflictOf ?? rowID, dot: dot, clock: columns.clock, keyID: stored.keyID,
        sealed: stored.sealed, signature: stored.signature)
    }
    let row = FeedRow(
      rowID: rowID, memo: columns.conflictOf ?? rowID,
      head: HeadSummary(dot: dot, clock: columns.clock, revision: statement.int64(7), isDeleted: columns.isDeleted),
      columns: columns)
    let revision = try syncRevision(row)
    // The numbers inside the seal too (revision counter, times): a row a peer would refuse
    // is not sent (see `nextBatch`).
    guard (try? SyncRules.checkNumbers(revision)) != nil else { return nil }
    var record = try sealRecord(revision)
    // A revision this store made before sync version 3 is signed as it leaves (its legacy
    // binding says whose it is), so what it wrote before the upgrade still reaches devices
    // that had not seen it; others' revisions from then travel unsigned.
    if dot.origin == (try legacyReplicaID()) {
      record.signature = try signer().signature(for: record.signedMessage)
    }
    return record
  }

  /// A relayed record, as it came.
  private func relayedRecord(_ statement: SQLiteStatement, rowid: Int64) throws -> SyncRecord? {
    try statement.bind(1, rowid)
    defer { statement.reset() }
    guard try statement.step(), let memo = statement.memo(0),
      let notebook = statement.notebook(3), let clock = VersionVector(encoded: statement.blob(4))
    else { return nil }
    return SyncRecord(
      notebook: notebook, memo: memo, dot: try storedDot(statement, 1, 2),
      clock: clock, keyID: statement.text(5), sealed: statement.blob(6),
      signature: statement.isNull(7) ? nil : statement.blob(7))
  }

  /// A feed row opened for sending.
  func syncRevision(_ row: FeedRow) throws -> SyncRevision {
    let memo = try decrypt(id: row.rowID, revision: row.head.revision, row.columns)
    return SyncRevision(
      memo: row.memo, head: row.head, created: memo.created, updated: memo.updated, isPrivate: memo.isPrivate,
      title: memo.title, body: memo.body, tags: memo.tags, notebook: try memo.notebook ?? defaultNotebook().id)
  }
}
