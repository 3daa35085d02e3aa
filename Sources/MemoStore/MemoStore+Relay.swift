import MemoCore
import MemoProtocol

/// A memo of a notebook this device relays: what can be said of it without its key.
public struct RelayedMemo: Sendable, Equatable {
  public var memo: MemoID
  public var notebook: NotebookID
  /// Sealed revisions held (the memo's heads: more than one while members disagree).
  public var revisions: Int
}

/// The blind relay's storage (docs/PRIVACY.md, "The blind relay"): records of notebooks
/// this device relays, kept exactly as they arrived — sealed under a key this device never
/// holds — with their notebook, memo id, dot and clock in clear. The same head rules as for
/// memos decide which to keep: every record no other record held here has seen.
extension MemoStore {
  /// The relayed memo whose id starts with `text`, when exactly one does (nil otherwise).
  public func relayedMemo(matching text: String) throws -> RelayedMemo? {
    guard let prefix = try? IDPrefix(text) else { return nil }
    return try sql {
      let query = try db.prepare(
        "SELECT memo, notebook, count(*) FROM relayed WHERE memo GLOB ? GROUP BY memo, notebook LIMIT 2")
      try query.bind(1, prefix.rawValue + "*")
      var found: [RelayedMemo] = []
      while try query.step() {
        guard let memo = query.memo(0), let notebook = query.notebook(1) else { continue }
        found.append(RelayedMemo(memo: memo, notebook: notebook, revisions: Int(query.int64(2))))
      }
      return found.count == 1 ? found[0] : nil
    }
  }

  /// The records held for `memo` (its heads here).
  func relayedHeads(of memo: MemoID) throws -> [(dot: Dot, clock: VersionVector)] {
    try sql {
      try db.withCached("SELECT dot_origin, dot_seq, clock FROM relayed WHERE memo = ?") { query in
        try query.bind(1, memo)
        var heads: [(Dot, VersionVector)] = []
        while try query.step() {
          guard let clock = VersionVector(encoded: query.blob(2)) else {
            throw MemoPeerError(
              .corruptDatabase, "a relayed record of memo \(memo.short) has no readable version vector",
              hint: "restore from a backup; the file was left untouched")
          }
          heads.append((try storedDot(query, 0, 1), clock))
        }
        return heads
      }
    }
  }

  /// Stores a record of a relayed notebook by the head rules (`RemoteMerge.relayedStep`):
  /// nothing when a record held here has seen it; otherwise it is kept, at the next feed
  /// position (so it is forwarded), and every record it has seen goes. The receiver's rules
  /// apply as to any revision (`SyncRules.admit`: its own replica, a clock beyond its
  /// sequence), and a memo keeps at most 33 concurrent records. Runs inside the caller's
  /// transaction.
  func applyRelayed(_ record: SyncRecord, receiver: SyncRules.Receiver, now: Timestamp) throws -> ApplyResult {
    guard try SyncRules.admit(record, into: receiver) else { return .known }
    let step = RemoteMerge.relayedStep(
      record.clock, over: try relayedHeads(of: record.memo), memo: record.memo, maximumHeads: Self.maximumRelayedHeads)
    let removing: [Dot]
    let result: ApplyResult
    switch step {
    case .known, .hold: return .known
    case .refuse(let violation): throw violation
    case .store(let dots, let stored): (removing, result) = (dots, stored)
    }
    try raiseHorizon(record.dot, in: record.notebook)
    try sql {
      for dot in removing {
        // Kept, sealed as it came, as the relay's history of the memo (its bounds: history).
        try db.withCached(
          "INSERT OR IGNORE INTO relayed_history (memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, "
            + "signature, received, superseded) SELECT memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, "
            + "signature, received, ?4 FROM relayed WHERE memo = ?1 AND dot_origin = ?2 AND dot_seq = ?3"
        ) { keep in
          try keep.bind([
            .id(record.memo), .id(dot.origin), .integer(Int64(bitPattern: dot.seq)),
            .integer(Self.wallClock()),
          ])
          _ = try keep.step()
        }
        try db.withCached("DELETE FROM relayed WHERE memo = ? AND dot_origin = ? AND dot_seq = ?") { delete in
          try delete.bind([
            .id(record.memo), .id(dot.origin), .integer(Int64(bitPattern: dot.seq)),
          ])
          _ = try delete.step()
        }
      }
    }
    let feed = try nextFeedPositions(1)
    try sql {
      try db.withCached(
        "INSERT INTO relayed (memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, feed_seq, received, "
          + "signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
      ) { insert in
        try insert.bind([
          .id(record.memo), .id(record.dot.origin), .integer(Int64(bitPattern: record.dot.seq)),
          .id(record.notebook), .blob(record.clock.encoded()), .text(record.keyID), .blob(record.sealed),
          .integer(Int64(bitPattern: feed)), .integer(now), record.signature.map { .blob($0) } ?? .null,
        ])
        _ = try insert.step()
      }
    }
    if !removing.isEmpty { try pruneRelayedHistory(of: record.memo, now: Self.wallClock(), limits: historyLimits()) }
    return result
  }

  /// The sealed records of `memo` this relay forwarded and then replaced, oldest first: the
  /// dots, and when each was replaced here.
  public func relayedHistory(of memo: MemoID) throws -> [(dot: Dot, superseded: Timestamp)] {
    try sql {
      let read = try db.prepare(
        "SELECT dot_origin, dot_seq, superseded FROM relayed_history WHERE memo = ? ORDER BY id")
      try read.bind(1, memo)
      var rows: [(Dot, Timestamp)] = []
      while try read.step() { rows.append((try storedDot(read, 0, 1), read.int64(2))) }
      return rows
    }
  }

  /// The history bounds for a relay's kept records, shared fairly as a member's history is
  /// (`HistoryRetention`; issue 38): of `memo`, what the rule keeps for `revisions`, each
  /// record's author being the device its replica is bound to (else the replica), in the
  /// order they were replaced here; those replaced within `days`; and while the sealed
  /// records are over `totalBytes` in all, the oldest of the author holding the most. A
  /// relay has no revisions of its own there: every author gets a share. Runs inside the
  /// caller's transaction.
  func pruneRelayedHistory(of memo: MemoID, now: Timestamp, limits: HistoryLimits) throws {
    try sql {
      let entries = try relayedHistoryAuthors("h.memo = ?1", [.id(memo)]).map { row in
        HistoryRetention.Entry<String>(id: row.id, revision: row.id, author: row.author)
      }
      for id in HistoryRetention.dropped(entries, limit: limits.revisions, own: nil) {
        let drop = try db.prepare("DELETE FROM relayed_history WHERE id = ?")
        try drop.bind(1, id)
        _ = try drop.step()
      }
      let old = try db.prepare("DELETE FROM relayed_history WHERE superseded < ?")
      try old.bind(1, now - Int64(max(limits.days, 0)) * 86_400_000)
      _ = try old.step()
      try pruneRelayedBytes(to: limits.totalBytes)
    }
  }

  /// While the sealed records kept are over `budget` bytes, drops the oldest of the author
  /// holding the most. Reads the holdings once (a relay's total was always summed here).
  private func pruneRelayedBytes(to budget: Int64) throws {
    var holdings: [String: Int64] = [:]
    let read = try db.prepare(
      "SELECT coalesce(b.device, h.dot_origin), sum(length(h.sealed)) FROM relayed_history h "
        + "LEFT JOIN replica_bindings b ON b.replica = h.dot_origin GROUP BY 1")
    while try read.step() { holdings[read.text(0)] = read.int64(1) }
    var total = holdings.values.reduce(0, +)
    var waiting: [String: [Int64]] = [:]
    while total > budget, let author = HistoryRetention.heaviest(holdings) {
      if waiting[author, default: []].isEmpty {
        waiting[author] = try relayedHistoryAuthors(
          "coalesce(b.device, h.dot_origin) = ?1 ORDER BY h.id LIMIT 64", [.text(author)]
        ).map(\.id)
      }
      guard let id = waiting[author]?.first else { break }
      waiting[author]?.removeFirst()
      let drop = try db.prepare("DELETE FROM relayed_history WHERE id = ? RETURNING length(sealed)")
      try drop.bind(1, id)
      let freed = try drop.step() ? drop.int64(0) : 0
      holdings[author, default: 0] -= freed
      total -= freed
    }
  }

  /// The kept records matching `condition` (over `relayed_history h` and the binding `b` of
  /// its replica): their ids and authors, the device a replica is bound to or the replica.
  private func relayedHistoryAuthors(_ condition: String, _ values: [SQLiteValue]) throws -> [(
    id: Int64, author: String
  )] {
    let read = try db.prepare(
      "SELECT h.id, coalesce(b.device, h.dot_origin) FROM relayed_history h "
        + "LEFT JOIN replica_bindings b ON b.replica = h.dot_origin WHERE \(condition)")
    try read.bind(values)
    var rows: [(id: Int64, author: String)] = []
    while try read.step() { rows.append((read.int64(0), read.text(1))) }
    return rows
  }

  /// Every sealed revision this device relays (the widget's count).
  public func relayedRevisionCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM relayed")) }
  }

  /// Concurrent revisions of one memo a relay keeps (a memo and its conflict copies).
  static let maximumRelayedHeads = 33
}
