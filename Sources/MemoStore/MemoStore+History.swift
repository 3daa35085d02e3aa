import FoundationEssentials
import MemoCore

/// One revision of a memo as this device saw it: a superseded one from `memo_history`, or
/// the current one.
public struct MemoRevision: Sendable, Equatable {
  /// The revision's content (for a delete: empty, `isDeleted`).
  public var memo: Memo
  /// The device that signed it (nil: unsigned, from before sync version 3).
  public var author: DeviceID?
  /// When this device replaced it by a later revision; nil for the current one.
  public var superseded: Timestamp?

  public var isCurrent: Bool { superseded == nil }
}

extension MemoRevision {
  /// `memo` as it is now (a memo's head, or a conflict copy's): its current revision,
  /// signed by the author of the record it holds (nil: unsigned).
  public init(current memo: Memo) {
    self.init(memo: memo, author: memo.record?.author, superseded: nil)
  }
}

/// A memo in the trash: its delete won here within the trash's days, or the mass-delete
/// guard holds a delete of it.
public struct TrashEntry: Sendable, Equatable {
  public var memo: MemoID
  /// The title of its last revision before the delete (nil while locked).
  public var title: String?
  /// When the delete came into effect here (for a held delete: when it came).
  public var deleted: Timestamp
  /// The device that signed the delete (nil: unsigned).
  public var author: DeviceID?
  /// For a delete the guard holds: the peer it came from (the memo is still here).
  public var heldFrom: DeviceID?
  public var notebook: NotebookID?
}

/// History (docs/design/sync-v3.md, section 8): every head a new revision supersedes is kept
/// in `memo_history`, its sealed fields copied as they were (bound to the row id they were
/// sealed under, `sealed_as`), in the transaction that supersedes it; bounded per memo, by
/// age and in all. The trash is the memos whose delete won here: their last readable
/// revision is in the history, restorable for `trashDays`.
extension MemoStore {
  /// The wall clock of history bounds (the time a revision was superseded is this device's).
  /// The shared clock's wall time (`TimeSource`: truncated milliseconds, as `App.wallClock`).
  static func wallClock() -> Timestamp { Clocks.shared.wallNow }

  /// The limits in `config.json` (`history`; the defaults when it has none). Read once per
  /// store. A config that cannot be read keeps the most it could allow until it is fixed
  /// (`HistoryLimits.mostAllowed`; the commands that read the config report the error):
  /// falling back to the defaults would prune what a person asked to keep longer.
  public func historyLimits() -> HistoryLimits {
    if let known = historyLimitsCache.withLock({ $0 }) { return known }
    let limits = (try? secrets.historyLimits()) ?? .mostAllowed
    historyLimitsCache.withLock { $0 = limits }
    return limits
  }

  /// Replaces the limits for this store's life (tests, and callers that loaded the config).
  public func setHistoryLimits(_ limits: HistoryLimits) {
    historyLimitsCache.withLock { $0 = limits }
  }

  /// Keeps the head in row `rowID` (about to be removed) as history of `memo`. Runs inside
  /// the caller's transaction, before the row goes.
  func recordHistory(ofRow rowID: String, memo: MemoID, now: Timestamp) throws {
    let added = try sql {
      try db.withCached(
        "INSERT OR IGNORE INTO memo_history (memo, sealed_as, revision, dot_origin, dot_seq, clock, notebook, author, "
          + "title, body, tags, created, updated, private, deleted, size, superseded) "
          + "SELECT ?1, id, revision, dot_origin, dot_seq, clock, notebook, author, title, body, tags, created, "
          + "updated, private, deleted, length(title) + length(body) + length(tags), ?2 "
          + "FROM memos WHERE id = ?3 AND dot_origin IS NOT NULL AND dot_seq IS NOT NULL "
          + "RETURNING id, size, author, length(body) = 0"
      ) { insert -> (id: Int64, size: Int64, author: String, bodyInRecord: Bool)? in
        try insert.bind([.id(memo), .integer(now), .text(rowID)])
        return try insert.step()
          ? (insert.int64(0), insert.int64(1), Self.historyAuthor(insert, 2), insert.int64(3) != 0) : nil
      }
    }
    guard var added else { return }
    if added.bodyInRecord { added.size += try sealHistoryBody(id: added.id, ofRow: rowID) }
    try sql { try countKeptHistory(id: added.id, size: added.size, author: added.author) }
    try pruneHistory(of: memo, now: now, limits: historyLimits())
  }

  /// History keeps every field sealed under the device key, as it was in the row: a body
  /// the row kept only in its record (schema 12) is opened from it and sealed into history
  /// entry `id`, bound to the row id like the rest. Returns the bytes it added.
  private func sealHistoryBody(id: Int64, ofRow rowID: String) throws -> Int64 {
    guard let rowMemo = MemoID(canonical: rowID), let row = try loadRow(rowMemo) else { return 0 }
    let sealed = try sealedFields(of: row).body
    try sql {
      try db.withCached("UPDATE memo_history SET body = ?1, size = size + length(?1) WHERE id = ?2") { update in
        try update.bind([.blob(sealed), .integer(id)])
        _ = try update.step()
      }
    }
    return Int64(sealed.count)
  }

  /// Bytes of sealed history kept now.
  public func historyBytes() throws -> Int64 {
    try sql {
      let read = try db.prepare("SELECT value FROM counters WHERE name = 'history_bytes'")
      return try read.step() ? read.int64(0) : 0
    }
  }

  /// Drops what `limits` no longer allow: of `memo`, what the fair rule does not keep for
  /// `revisions` (`HistoryRetention`: this device's newest, the last before each change of
  /// author, and a share for every author); of every memo, those superseded more than
  /// `days` ago, and while the total is over `totalBytes` the oldest of the author holding
  /// the most; and the trash past `trashDays` (with the history of those memos). Runs
  /// inside the caller's transaction.
  func pruneHistory(of memo: MemoID?, now: Timestamp, limits: HistoryLimits) throws {
    let day: Int64 = 86_400_000
    try sql {
      if let memo { try pruneRevisions(of: memo, limit: limits.revisions) }
      try deleteHistory("superseded < ?1", [.integer(now - Int64(max(limits.days, 0)) * day)])
      let expired = try db.prepare("SELECT memo FROM trash WHERE deleted < ?")
      try expired.bind(1, now - Int64(max(limits.trashDays, 0)) * day)
      var memos: [String] = []
      while try expired.step() { memos.append(expired.text(0)) }
      for memo in memos { try forgetTrashed(memo) }
      try pruneHistoryBytes(to: limits.totalBytes)
    }
  }

  /// Deletes the history rows matching `condition`, keeping the byte counters right.
  /// Returns the bytes freed per author ("-": unsigned).
  @discardableResult
  func deleteHistory(_ condition: String, _ values: [SQLiteValue]) throws -> [String: Int64] {
    let delete = try db.prepare("DELETE FROM memo_history WHERE \(condition) RETURNING size, author")
    try delete.bind(values)
    var freed: [String: Int64] = [:]
    while try delete.step() { freed[Self.historyAuthor(delete, 1), default: 0] += delete.int64(0) }
    for (author, bytes) in freed where bytes > 0 { try countHistoryBytes(-bytes, author: author) }
    return freed
  }

  /// Drops a memo from the trash and its history with it.
  private func forgetTrashed(_ memo: String) throws {
    try deleteHistory("memo = ?1", [.text(memo)])
    let delete = try db.prepare("DELETE FROM trash WHERE memo = ?")
    try delete.bind(1, memo)
    _ = try delete.step()
  }

  /// Puts `memo` in the trash (its delete won over a live revision) or takes it out (a
  /// live revision won). Runs inside the caller's transaction.
  func updateTrash(_ memo: MemoID, winnerDeleted: Bool, author: DeviceID?, now: Timestamp) throws {
    try sql {
      if winnerDeleted {
        try db.withCached("INSERT OR REPLACE INTO trash (memo, deleted, author) VALUES (?, ?, ?)") { insert in
          try insert.bind([.id(memo), .integer(now), author.map { .device($0) } ?? .null])
          _ = try insert.step()
        }
      } else {
        try db.withCached("DELETE FROM trash WHERE memo = ?") { delete in
          try delete.bind(1, memo)
          _ = try delete.step()
        }
      }
    }
  }

  // MARK: - Reading

  /// Resolves an id or prefix among the memos this device has a row or history of, deleted
  /// ones included (for `history`, `restore`, `trash restore`).
  public func resolveAny(_ text: String) throws -> MemoID {
    if let exact = MemoID(canonical: text.lowercased()) { return exact }
    let prefix = try Self.resolvablePrefix(text)
    return try sql {
      let query = try db.prepare(
        "SELECT id FROM memos WHERE conflict_of IS NULL AND id GLOB ?1 "
          + "UNION SELECT memo FROM memo_history WHERE memo GLOB ?1 ORDER BY 1 LIMIT 11")
      try query.bind(1, prefix.rawValue + "*")
      var matches: [String] = []
      while try query.step() { matches.append(query.text(0)) }
      switch matches.count {
      case 0:
        throw MemoPeerError(
          .notFound, "no memo id starts with \(prefix.rawValue)",
          remedy: .listMemos(includingTrash: true))
      case 1:
        return try memoID(matches[0])
      default:
        throw MemoPeerError(
          .ambiguousID, "the prefix \(prefix.rawValue) matches several memos", hint: "type more characters of the id")
      }
    }
  }

  /// The revisions of `memo` this device saw, oldest first: the superseded ones it kept,
  /// then the current one (the row at the memo's id). Needs the device key.
  public func history(of memo: MemoID) throws -> [MemoRevision] {
    _ = try sealer()
    var result: [MemoRevision] = try sql {
      let query = try db.prepare(
        "SELECT sealed_as, revision, dot_origin, dot_seq, clock, notebook, author, title, body, tags, created, "
          + "updated, private, deleted, superseded FROM memo_history WHERE memo = ? ORDER BY revision, id")
      try query.bind(1, memo)
      var rows: [MemoRevision] = []
      while try query.step() {
        let sealedAs = try memoID(query.text(0))
        let revision = query.int64(1)
        let dot = try storedDot(query, 2, 3)
        let columns = SealedColumns(
          title: query.blob(7), body: query.blob(8), tags: query.blob(9), created: query.int64(10),
          updated: query.int64(11), isPrivate: query.int64(12) != 0, origin: .replica(dot.origin),
          isDeleted: query.int64(13) != 0, dot: dot,
          clock: VersionVector(encoded: query.blob(4)) ?? VersionVector(), conflictOf: nil,
          notebook: query.isNull(5) ? nil : query.notebook(5), record: nil)
        var opened = try decrypt(id: sealedAs, revision: revision, columns)
        opened.id = memo
        rows.append(
          MemoRevision(memo: opened, author: query.isNull(6) ? nil : query.device(6), superseded: query.int64(14)))
      }
      return rows
    }
    if let current = try loadRow(memo), current.conflictOf == nil {
      result.append(MemoRevision(memo: current, author: current.record?.author, superseded: nil))
    }
    guard !result.isEmpty else {
      throw MemoPeerError(.notFound, "no memo has the id \(memo)", remedy: .listMemos(includingTrash: false))
    }
    return result
  }

  /// Revision `number` of `memo` (its revision number as `history` lists it). Concurrent
  /// revisions (a conflict, an edit against a delete) can share a number: then the current
  /// one, else the one with content this device saw last, else the delete.
  public func revision(_ number: Int64, of memo: MemoID) throws -> MemoRevision {
    let all = try history(of: memo).filter { $0.memo.revision == number }
    let found = all.last(where: \.isCurrent) ?? all.last(where: { !$0.memo.isDeleted }) ?? all.last
    guard let found else {
      let known = try history(of: memo).map(\.memo.revision)
      throw MemoPeerError(
        .notFound,
        "memo \(memo.short) has no revision \(number) on this device"
          + (known.isEmpty ? "" : " (it keeps \(known.min() ?? 0) to \(known.max() ?? 0))"),
        remedy: .showHistory(memo: memo.short))
    }
    return found
  }

  // MARK: - Restoring

  /// Makes revision `number`'s content the memo's content again, as a new revision (a new
  /// dot, signed, syncing like an edit); a deleted memo comes back. Unchanged content makes
  /// no revision.
  @discardableResult
  public func restore(_ memo: MemoID, revision number: Int64, now: Timestamp) throws -> Memo {
    try batch {
      let source = try revision(number, of: memo)
      guard !source.memo.isDeleted else {
        throw MemoPeerError(
          .invalidInput, "revision \(number) of memo \(memo.short) is its delete: it has no content to restore",
          hint: "restore one from before the delete", remedy: .showHistory(memo: memo.short))
      }
      return try restoreContent(of: source.memo, into: memo, now: now)
    }
  }

  /// `content`'s title, body, tags and private mark as a new revision of `memo`. Runs
  /// inside the caller's transaction.
  func restoreContent(of content: Memo, into memo: MemoID, now: Timestamp) throws -> Memo {
    guard let current = try loadRow(memo) else {
      throw MemoPeerError(.notFound, "no memo has the id \(memo)", remedy: .listMemos(includingTrash: false))
    }
    try refuseConflictCopy(current)
    try refuseWhileConflicted(memo, doing: "restored")
    if !current.isDeleted, current.title == content.title, current.body == content.body,
      current.tags == content.tags, current.isPrivate == content.isPrivate
    {
      return current
    }
    let next = Memo(
      id: memo, title: content.title, body: content.body, tags: content.tags, created: current.created,
      updated: max(now, current.updated), isPrivate: content.isPrivate,
      revision: try MemoRules.nextRevision(after: current.revision), origin: .replica(replicaID),
      notebook: current.notebook)
    return try storeLocalRevision(next, resolvingAll: current.isDeleted)
  }

  // MARK: - Trash

  /// The memos in the trash, newest delete first: deletes that won here within the
  /// trash's days (expired ones are dropped first), and the deletes the guard holds.
  public func trash(now: Timestamp) throws -> [TrashEntry] {
    try batch { try pruneHistory(of: nil, now: now, limits: historyLimits()) }
    var entries: [TrashEntry] = try sql {
      let read = try db.prepare("SELECT memo, deleted, author FROM trash ORDER BY deleted DESC, memo")
      var rows: [TrashEntry] = []
      while try read.step() {
        rows.append(
          TrashEntry(
            memo: try memoID(read.text(0)), title: nil, deleted: read.int64(1),
            author: read.isNull(2) ? nil : read.device(2), heldFrom: nil, notebook: nil))
      }
      return rows
    }
    for index in entries.indices {
      let last = try lastLiveRevision(of: entries[index].memo)
      entries[index].title = last?.memo.title
      entries[index].notebook = last?.memo.notebook
    }
    let held: [TrashEntry] = try sql {
      let read = try db.prepare(
        "SELECT h.memo, h.device, h.updated, m.notebook FROM sync_held h JOIN memos m ON m.id = h.memo "
          + "WHERE h.payload IS NULL AND m.deleted = 0 ORDER BY h.updated DESC, h.memo")
      var rows: [TrashEntry] = []
      while try read.step() {
        guard let device = read.device(1) else { continue }
        rows.append(
          TrashEntry(
            memo: try memoID(read.text(0)), title: nil, deleted: read.int64(2), author: nil, heldFrom: device,
            notebook: read.isNull(3) ? nil : read.notebook(3)))
      }
      return rows
    }
    for var entry in held {
      if canReadContent { entry.title = try loadRow(entry.memo)?.title }
      entries.append(entry)
    }
    return entries
  }

  /// The newest live revision of `memo` this device kept (nil while locked or when none).
  private func lastLiveRevision(of memo: MemoID) throws -> MemoRevision? {
    guard canReadContent else { return nil }
    return try history(of: memo).last { !$0.memo.isDeleted }
  }

  /// Brings a memo back from the trash: its last revision before the delete, as a new
  /// revision.
  @discardableResult
  public func restoreFromTrash(_ memo: MemoID, now: Timestamp) throws -> Memo {
    try batch {
      let inTrash = try sql {
        let read = try db.prepare("SELECT 1 FROM trash WHERE memo = ?")
        try read.bind(1, memo)
        return try read.step()
      }
      guard inTrash, let last = try lastLiveRevision(of: memo) else {
        if try isHeldDelete(memo) {
          throw MemoPeerError(
            .invalidInput, "memo \(memo.short) was not deleted here: a sync's delete of it is held back",
            hint: "it is still in the memo list", remedy: .settleHeldDeletes)
        }
        _ = try sealer()
        throw MemoPeerError(
          .notFound, "memo \(memo.short) is not in the trash",
          remedy: .listTrash(days: historyLimits().trashDays))
      }
      return try restoreContent(of: last.memo, into: memo, now: now)
    }
  }

  private func isHeldDelete(_ memo: MemoID) throws -> Bool {
    try sql {
      let read = try db.prepare("SELECT 1 FROM sync_held WHERE memo = ? AND payload IS NULL")
      try read.bind(1, memo)
      return try read.step()
    }
  }

  /// Empties the trash: the deleted memos' history goes (their tombstones stay, so the
  /// delete still syncs). Held deletes are not touched. Returns how many memos went.
  @discardableResult
  public func emptyTrash() throws -> Int {
    try batch {
      let memos: [String] = try sql {
        let read = try db.prepare("SELECT memo FROM trash")
        var rows: [String] = []
        while try read.step() { rows.append(read.text(0)) }
        return rows
      }
      for memo in memos { try sql { try forgetTrashed(memo) } }
      return memos.count
    }
  }

}

/// What `undo --device` does to one memo: the revisions `device` made since a time are
/// undone by a new revision with the content before them (`target`), or by a delete when
/// the memo had no revision before them here (or the one before was a delete).
public struct UndoStep: Sendable, Equatable {
  public var memo: MemoID
  /// The title of the memo now (empty for a memo `device` deleted).
  public var title: String
  /// The revisions of `device` undone, oldest first.
  public var undone: [MemoRevision]
  /// The revision whose content comes back; nil: the memo is deleted.
  public var target: MemoRevision?
  /// Why it cannot be undone now (conflict copies wait to be resolved); nil: it can.
  public var blocked: String?
}

extension MemoStore {
  /// Every memo whose latest revisions since `since` are by `device` (as far as this device
  /// kept them), and what undoing them would do. Reads only; needs the device key.
  public func undoPlan(device: DeviceID, since: Timestamp) throws -> [UndoStep] {
    _ = try sealer()
    let candidates: [String] = try sql {
      let read = try db.prepare(
        "SELECT id FROM memos WHERE conflict_of IS NULL AND author = ? AND updated >= ? ORDER BY updated DESC, id")
      try read.bind([.device(device), .integer(since)])
      var rows: [String] = []
      while try read.step() { rows.append(read.text(0)) }
      return rows
    }
    var steps: [UndoStep] = []
    for text in candidates {
      let memo = try memoID(text)
      var revisions = try history(of: memo)
      var undone: [MemoRevision] = []
      while let last = revisions.last, last.author == device, last.memo.updated >= since {
        undone.insert(last, at: 0)
        revisions.removeLast()
      }
      guard let current = undone.last else { continue }
      let target = revisions.last.flatMap { $0.memo.isDeleted ? nil : $0 }
      if target == nil && current.memo.isDeleted { continue }
      let copies = try heads(of: memo).filter { !$0.head.isDeleted && $0.rowID != memo.rawValue }.count
      steps.append(
        UndoStep(
          memo: memo,
          title: current.memo.isDeleted ? (undone.last { !$0.memo.isDeleted }?.memo.title ?? "") : current.memo.title,
          undone: undone, target: target,
          blocked: copies == 0 ? nil : "it has conflict copies: `memo-peer conflicts resolve \(memo.short)` first"))
    }
    return steps
  }

  /// Carries out `plan` (from `undoPlan`) in one transaction: each memo not blocked gets a
  /// new revision with its target's content, or is deleted. Returns the steps carried out.
  public func undo(_ plan: [UndoStep], now: Timestamp) throws -> [UndoStep] {
    try batch {
      var done: [UndoStep] = []
      for step in plan where step.blocked == nil {
        if let target = step.target {
          _ = try restoreContent(of: target.memo, into: step.memo, now: now)
        } else if let row = try loadRow(step.memo), !row.isDeleted {
          try delete(step.memo, now: now)
        } else {
          continue
        }
        done.append(step)
      }
      return done
    }
  }
}
