import MemoCore

/// Which version a person keeps when resolving a conflict.
public enum ConflictChoice: String, Sendable, CaseIterable {
  /// The memo as it stands (the conflict copy goes; a delete that lost stays undone).
  case a = "A"
  /// The conflict copy's version becomes the memo (for an overruled delete: delete it).
  case b = "B"
  /// Both: the memo stays, the copy becomes a memo of its own.
  case both
}

/// A memo that needs a person: it has conflict copies, or it was deleted on another device
/// while edited here (the edit won).
public struct ConflictEntry: Sendable, Equatable {
  public var memo: MemoID
  public var title: String
  public var copies: [MemoSummary]
  public var overruledDelete: Bool
  /// Who signed the memo's current revision (each copy's `author` says who signed it).
  public var author: DeviceID?
}

/// What `conflicts resolve` did.
public struct ConflictResolution: Sendable, Equatable {
  public var memo: MemoID
  /// Memos made from copies: the named one with `--keep both`, and any other copies.
  public var newMemos: [MemoID]
  public var deleted: Bool
}

extension MemoStore {
  /// Every memo with conflict copies or an overruled delete, by memo id.
  public func conflicts() throws -> [ConflictEntry] {
    var result: [ConflictEntry] = []
    for id in try conflictedMemoIDs().sorted() {
      guard let memo = try loadRow(id), !memo.isDeleted else { continue }
      var copies: [MemoSummary] = []
      var overruled = false
      for row in try heads(of: id) where row.rowID != id.rawValue {
        if row.head.isDeleted {
          overruled = true
        } else if let copyID = MemoID(canonical: row.rowID), let copy = try loadRow(copyID) {
          copies.append(copy.summary)
        }
      }
      guard !copies.isEmpty || overruled else { continue }
      result.append(
        ConflictEntry(
          memo: id, title: memo.title, copies: copies, overruledDelete: overruled, author: memo.record?.author))
    }
    return result
  }

  /// The memo ids that have a conflict, for marking `list` (cheap: reads the copy index).
  public func conflictedMemoIDs() throws -> Set<MemoID> {
    try sql {
      let query = try db.prepare("SELECT DISTINCT conflict_of FROM memos WHERE conflict_of IS NOT NULL")
      var ids: Set<MemoID> = []
      while try query.step() { ids.insert(try memoID(query.text(0))) }
      return ids
    }
  }

  /// Settles a conflict, named by its copy's id, or by the memo's id when it has one copy
  /// or an overruled delete. The result is a new revision that has seen every head of the
  /// memo, so it replicates like any edit. Copies other than the one named (three devices
  /// edited at once) become memos of their own: nothing is dropped that nobody chose.
  @discardableResult
  public func resolveConflict(_ id: MemoID, keep choice: ConflictChoice, now: Timestamp) throws
    -> ConflictResolution
  {
    try batch {
      guard let named = try loadRow(id), !named.isDeleted else {
        throw MemoPeerError(.notFound, "no memo has the id \(id)", remedy: .listConflicts)
      }
      let memoID = named.conflictOf ?? id
      let memo = try self.memo(memoID)
      let others = try heads(of: memoID).filter { $0.rowID != memoID.rawValue }
      let liveCopies = try others.filter { !$0.head.isDeleted }.compactMap { row in
        try MemoID(canonical: row.rowID).flatMap { try loadRow($0) }
      }
      let copy: Memo?
      if named.conflictOf != nil {
        copy = named
      } else if liveCopies.count > 1 {
        throw MemoPeerError(
          .ambiguousID, "memo \(memoID.short) has \(liveCopies.count) conflict copies; name the one to resolve",
          remedy: .listConflicts)
      } else {
        copy = liveCopies.first
      }
      guard copy != nil || others.contains(where: \.head.isDeleted) else {
        throw MemoPeerError(
          .notFound, "memo \(memoID.short) has no conflict", remedy: .listConflicts)
      }
      var next = memo
      next.revision = try MemoRules.nextRevision(after: memo.revision, copy?.revision ?? 0)
      next.updated = max(now, memo.updated)
      if let copy, choice == .b {
        next.title = copy.title
        next.body = copy.body
        next.tags = copy.tags
        next.isPrivate = copy.isPrivate
      } else if copy == nil, choice == .b {
        // An overruled delete: B carries the delete out.
        next = Memo(
          id: memoID, title: "", body: "", tags: [], created: memo.created, updated: next.updated,
          isPrivate: memo.isPrivate, revision: next.revision, origin: .replica(replicaID), isDeleted: true,
          notebook: memo.notebook)
      }
      try storeLocalRevision(next, resolvingAll: true)
      var newMemos: [MemoID] = []
      for other in liveCopies where other.id != copy?.id || choice == .both {
        newMemos.append(
          try create(
            MemoDraft(title: other.title, body: other.body, tags: other.tags, isPrivate: other.isPrivate), now: now,
            in: memo.notebook
          ).id)
      }
      return ConflictResolution(memo: memoID, newMemos: newMemos, deleted: next.isDeleted)
    }
  }
}
