import MemoCore

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
        guard let memo = MemoID(canonical: query.text(0)), let notebook = NotebookID(query.text(1)) else { continue }
        found.append(RelayedMemo(memo: memo, notebook: notebook, revisions: Int(query.int64(2))))
      }
      return found.count == 1 ? found[0] : nil
    }
  }

  /// The records held for `memo` (its heads here).
  func relayedHeads(of memo: MemoID) throws -> [(dot: Dot, clock: VersionVector)] {
    try sql {
      try db.withCached("SELECT dot_origin, dot_seq, clock FROM relayed WHERE memo = ?") { query in
        try query.bind(1, memo.rawValue)
        var heads: [(Dot, VersionVector)] = []
        while try query.step() {
          guard let clock = VersionVector(encoded: query.blob(2)) else {
            throw MemoPeerError(
              .corruptDatabase, "a relayed record of memo \(memo.short) has no readable version vector",
              hint: "restore from a backup; the file was left untouched")
          }
          heads.append((Dot(origin: query.text(0), seq: UInt64(bitPattern: query.int64(1))), clock))
        }
        return heads
      }
    }
  }

  /// Stores a record of a relayed notebook by the head rules: nothing when a record held
  /// here has seen it; otherwise it is kept, at the next feed position (so it is forwarded),
  /// and every record it has seen goes. The receiver's rules apply as to any revision
  /// (`SyncRules.admit`: its own replica, a clock beyond its sequence), and a memo keeps at
  /// most 33 concurrent records. Runs inside the caller's transaction.
  func applyRelayed(_ record: SyncRecord, receiver: SyncRules.Receiver, now: Timestamp) throws -> ApplyResult {
    guard try SyncRules.admit(record, into: receiver) else { return .known }
    let heads = try relayedHeads(of: record.memo)
    if heads.contains(where: { $0.clock.covers(record.clock) }) { return .known }
    let removing = heads.filter { record.clock.covers($0.clock) }.map(\.dot)
    guard heads.count - removing.count < Self.maximumRelayedHeads else {
      throw SyncViolation(
        .tooManyCopies, "memo \(record.memo.short) would get more than \(Self.maximumRelayedHeads) relayed heads")
    }
    try raiseHorizon(record.dot, in: record.notebook)
    try sql {
      for dot in removing {
        try db.withCached("DELETE FROM relayed WHERE memo = ? AND dot_origin = ? AND dot_seq = ?") { delete in
          try delete.bind([.text(record.memo.rawValue), .text(dot.origin), .integer(Int64(bitPattern: dot.seq))])
          _ = try delete.step()
        }
      }
    }
    let feed = try nextFeedPositions(1)
    try sql {
      try db.withCached(
        "INSERT INTO relayed (memo, dot_origin, dot_seq, notebook, clock, key_id, sealed, feed_seq, received) "
          + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
      ) { insert in
        try insert.bind([
          .text(record.memo.rawValue), .text(record.dot.origin), .integer(Int64(bitPattern: record.dot.seq)),
          .text(record.notebook.rawValue), .blob(record.clock.encoded()), .text(record.keyID), .blob(record.sealed),
          .integer(Int64(bitPattern: feed)), .integer(now),
        ])
        _ = try insert.step()
      }
    }
    return .stored(conflict: heads.count - removing.count > 0, live: 0)
  }

  /// Every sealed revision this device relays (the widget's count).
  public func relayedRevisionCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM relayed")) }
  }

  /// Concurrent revisions of one memo a relay keeps (a memo and its conflict copies).
  static let maximumRelayedHeads = 33
}
