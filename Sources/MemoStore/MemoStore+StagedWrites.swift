import MemoCore

/// Writes that a received sync batch makes once per record although only their last value
/// counts: the change feed's counter (one position per row stored) and the horizons (the
/// highest sequence seen per replica, and per notebook and replica). Inside `stagedBatch`
/// they are kept in memory and written once, just before the batch's transaction commits:
/// three upserts per record were a quarter of a received record's SQL. The transaction
/// still holds them all or none of them, so a kill -9 leaves the batch applied or not, as
/// before. Whatever reads those tables inside a staged batch (`horizon()`, a revocation's
/// cut, the feed's end) writes what is staged first, so it reads what is stored.
final class StagedWrites {
  /// Set while a staged batch runs; nothing is staged otherwise.
  fileprivate(set) var isActive = false
  /// The feed's counter as the table holds it, and the last position handed out since.
  fileprivate var feed: (stored: UInt64, last: UInt64)?
  fileprivate var horizon: [ReplicaID: UInt64] = [:]
  fileprivate var notebookHorizon: [NotebookID: [ReplicaID: UInt64]] = [:]
  /// The dot last staged, not yet in the two above.
  fileprivate var last: (origin: ReplicaID, notebook: NotebookID?, seq: UInt64)?

  fileprivate var isEmpty: Bool {
    (feed.map { $0.stored == $0.last } ?? true) && horizon.isEmpty && notebookHorizon.isEmpty && last == nil
  }

  /// Moves `last` into the horizons.
  fileprivate func foldLast() {
    guard let (origin, notebook, seq) = last else { return }
    last = nil
    horizon[origin] = max(horizon[origin] ?? 0, seq)
    if let notebook {
      notebookHorizon[notebook, default: [:]][origin] = max(notebookHorizon[notebook]?[origin] ?? 0, seq)
    }
  }

  fileprivate func reset() {
    isActive = false
    feed = nil
    horizon = [:]
    notebookHorizon = [:]
    last = nil
  }
}

extension MemoStore {
  /// `batch`, with the feed's counter and the horizons staged (`StagedWrites`) and written
  /// once before it commits. Inside another transaction it is `batch` (the outer one owns
  /// the commit, so it would have nowhere to write them).
  func stagedBatch<R>(_ body: () throws -> R) throws -> R {
    guard !staged.isActive, !db.inTransaction else { return try batch(body) }
    staged.isActive = true
    // Also after a rollback: what was staged is dropped with it.
    defer { staged.reset() }
    return try batch {
      let result = try body()
      try flushStaged()
      return result
    }
  }

  /// Writes what is staged; nothing when nothing is.
  func flushStaged() throws {
    guard staged.isActive, !staged.isEmpty else { return }
    staged.foldLast()
    try sql {
      if let feed = staged.feed, feed.last != feed.stored {
        try db.withCached(
          "INSERT INTO counters (name, value) VALUES ('feed', ?1) ON CONFLICT(name) DO UPDATE SET value = ?1"
        ) { upsert in
          try upsert.bind(1, Int64(bitPattern: feed.last))
          _ = try upsert.step()
        }
        staged.feed = (feed.last, feed.last)
      }
      for (origin, seq) in staged.horizon { try Self.raiseHorizon(db, Dot(origin: origin, seq: seq)) }
      for (notebook, entries) in staged.notebookHorizon {
        for (origin, seq) in entries { try Self.raiseHorizon(db, Dot(origin: origin, seq: seq), in: notebook) }
      }
    }
    staged.horizon = [:]
    staged.notebookHorizon = [:]
  }

  /// `count` positions of the feed from the staged counter (read once per batch).
  func stagedFeedPositions(_ count: Int) throws -> UInt64 {
    if staged.feed == nil {
      let value = try sql {
        try db.withCached("SELECT value FROM counters WHERE name = 'feed'") { read in
          try read.step() ? read.int64(0) : 0
        }
      }
      guard value >= 0 else { throw Self.counterOutOfRange("change feed") }
      staged.feed = (UInt64(value), UInt64(value))
    }
    guard let feed = staged.feed, count >= 1, feed.last <= SyncLimits.maximumSequence,
      UInt64(count) <= SyncLimits.maximumSequence - feed.last
    else {
      throw Self.counterOutOfRange("change feed")
    }
    staged.feed = (feed.stored, feed.last + UInt64(count))
    return feed.last + 1
  }

  /// Raises the staged horizons to `dot` (see `raiseHorizon`). A batch's records come in
  /// runs of one replica and notebook: a dot of the same pair as the last one only raises
  /// a number, without hashing either id.
  func stageHorizon(_ dot: Dot, in notebook: NotebookID?) {
    if let last = staged.last, last.origin == dot.origin, last.notebook == notebook {
      staged.last?.seq = max(last.seq, dot.seq)
      return
    }
    staged.foldLast()
    staged.last = (dot.origin, notebook, dot.seq)
  }

  /// A counter past 2^53 (which no real history reaches, but a damaged file may hold).
  static func counterOutOfRange(_ name: String) -> MemoPeerError {
    MemoPeerError(
      .corruptDatabase, "the memo database's \(name) counter is out of range",
      remedy: .moveMemosToNewNode)
  }
}
