import MemoCore

/// The sending side of one direction of a sync: reads this replica's change feed from the
/// peer's position onwards and yields batches of the heads the peer lacks (those its
/// knowledge does not cover), decrypted for the TLS connection. Holds one batch at a time.
///
/// The knowledge it reports (`knowledge`) is read before the first batch; the feed is read
/// to its end at the time of each read, so a head changed meanwhile is sent at its new
/// position. Either way the peer ends up holding everything that knowledge claims.
public final class SyncSource {
  public let store: MemoStore
  let peerKnowledge: VersionVector
  /// Our knowledge when the sync began: what the peer may adopt once it has every batch.
  public let knowledge: VersionVector
  /// The position after the last head read.
  public private(set) var position: UInt64
  public private(set) var isFinished = false
  /// Heads sent so far.
  public private(set) var sent = 0
  let maximumRevisions: Int
  let maximumBytes: Int
  /// Feed rows read for one batch at most (most of them skipped as known to the peer).
  static let maximumScan = 16384

  /// `from`: the peer's position in our feed (0 when it never synced, or synced with
  /// another database of ours).
  public init(
    store: MemoStore, peerKnowledge: VersionVector, from position: UInt64, maximumRevisions: Int = 256,
    maximumBytes: Int = 512 * 1024
  ) throws {
    self.store = store
    self.peerKnowledge = peerKnowledge
    self.knowledge = try store.knowledge()
    self.position = position
    self.maximumRevisions = maximumRevisions
    self.maximumBytes = maximumBytes
  }

  /// The next batch, nil when the feed is exhausted. A batch may carry no revisions (every
  /// head read was known to the peer) but still moves the peer's position on.
  public func nextBatch() throws -> SyncBatchCodec.Batch? {
    guard !isFinished else { return nil }
    var revisions: [SyncRevision] = []
    var bytes = 0
    // Heads the peer already has are skipped by their clock alone (their sealed columns are
    // not even read), many at a time: a peer that knows everything is told "nothing up to
    // here" in one batch, not one per few hundred rows. The scan per batch is still bounded.
    let known = { (clock: VersionVector) in self.peerKnowledge.covers(clock) }
    let rows = try store.feedRows(after: position, limit: Self.maximumScan, skip: known) { row in
      let revision = try store.syncRevision(row)
      // A row a peer would refuse (left by a sync before the checks existed: a number out of
      // range) is not sent, so it cannot stop every later sync; it stays here as it is.
      guard (try? SyncRules.checkNumbers(revision)) != nil else { return true }
      bytes += SyncBatchCodec.encodedSize(revision)
      revisions.append(revision)
      return revisions.count < maximumRevisions && bytes < maximumBytes
    }
    guard let last = rows.last else {
      isFinished = true
      return nil
    }
    position = last
    sent += revisions.count
    return SyncBatchCodec.Batch(position: position, revisions: revisions)
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

  /// Reads feed rows after `position` in order, until `body` returns false or `limit`
  /// rows were read; rows whose clock `skip` accepts are passed over without reading their
  /// sealed columns. Returns the feed positions read.
  func feedRows(
    after position: UInt64, limit: Int, skip: (VersionVector) -> Bool, _ body: (FeedRow) throws -> Bool
  ) throws -> [UInt64] {
    try sql {
      let query = try db.prepare(
        "SELECT clock, feed_seq, rowid FROM memos WHERE feed_seq > ? ORDER BY feed_seq LIMIT ?")
      try query.bind([.integer(Int64(bitPattern: position)), .integer(Int64(limit))])
      let full = try db.prepare("SELECT \(Self.memoColumns) FROM memos WHERE rowid = ?")
      var positions: [UInt64] = []
      while try query.step() {
        positions.append(UInt64(bitPattern: query.int64(1)))
        if skip(VersionVector(encoded: query.blob(0)) ?? VersionVector()) { continue }
        try full.bind(1, query.int64(2))
        defer { full.reset() }
        guard try full.step() else { continue }
        let rowID = try memoID(full.text(0))
        let columns = columns(of: full)
        guard let dot = columns.dot else { continue }
        let row = FeedRow(
          rowID: rowID, memo: columns.conflictOf ?? rowID,
          head: HeadSummary(dot: dot, clock: columns.clock, revision: full.int64(7), isDeleted: columns.isDeleted),
          columns: columns)
        if try !body(row) { break }
      }
      return positions
    }
  }

  /// A feed row opened for sending.
  func syncRevision(_ row: FeedRow) throws -> SyncRevision {
    let memo = try decrypt(id: row.rowID, revision: row.head.revision, row.columns)
    return SyncRevision(
      memo: row.memo, head: row.head, created: memo.created, updated: memo.updated, isPrivate: memo.isPrivate,
      title: memo.title, body: memo.body, tags: memo.tags)
  }
}
