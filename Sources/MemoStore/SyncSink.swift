import MemoCore

/// The receiving side of one direction of a sync with one peer: applies batches, each in
/// one transaction together with the peer's new feed position, so a sync killed at any
/// point resumes after the last committed batch and never applies a head twice.
///
/// Deletes that would turn a live memo into a deleted one are held (`sync_held`) rather
/// than applied; at the end the mass-delete guard decides whether they are applied. Only
/// a direction that ends with nothing held adopts the peer's knowledge.
///
/// Sync version 2 moves records (`SyncRecord`), notebook by notebook as the session's
/// `SyncPlan` says: a record of a notebook this device is a member of is opened with the
/// notebook's key and merged like any revision (so the guard sees a relay's deletes as it
/// sees anyone's); a record of a notebook it relays is kept sealed (`applyRelayed`); a
/// record of any other notebook is skipped. A record sealed with a key generation not here
/// yet leaves its notebook incomplete for the rest of the session: nothing more of it is
/// applied, and neither its cursor nor its knowledge moves, so it comes again.
public final class SyncSink {
  let store: MemoStore
  /// The peer's device ID (compact form): the key of its bookkeeping.
  public let peer: String
  let peerReplica: String
  let deleteGuard: MassDeleteGuard?
  let plan: SyncPlan
  /// Notebooks with a record that could not be opened yet (a key generation not here).
  public private(set) var incomplete: Set<NotebookID> = []
  public private(set) var outcome = SyncMessage.Outcome()

  /// `deleteGuard` nil: deletes are applied as they come (a person said so).
  public init(store: MemoStore, peer: String, peerReplica: String, deleteGuard: MassDeleteGuard?, plan: SyncPlan) {
    self.store = store
    self.peer = peer
    self.peerReplica = peerReplica
    self.deleteGuard = deleteGuard
    self.plan = plan
  }

  /// Applies one batch; returns the position to acknowledge.
  public func apply(_ batch: SyncRecordBatch.Batch, now: Timestamp) throws -> UInt64 {
    // Counted on copies, kept only when the batch commits.
    var incomplete = self.incomplete
    var outcome = self.outcome
    try store.batch {
      for record in batch.records {
        guard let role = plan.receiving[record.notebook], !incomplete.contains(record.notebook) else { continue }
        let result: ApplyResult
        switch role {
        case .relay:
          result = try store.applyRelayed(record, now: now)
        case .member:
          guard case .revision(let revision) = try store.openRecord(record) else {
            incomplete.insert(record.notebook)
            continue
          }
          result = try store.applyRemote(revision, holdingDeletesFor: deleteGuard == nil ? nil : peer)
        }
        if case .stored(let conflict) = result {
          outcome.applied += 1
          if conflict { outcome.conflicts += 1 }
        }
      }
      try moveCursors(to: batch.position, except: incomplete, now: now)
    }
    self.incomplete = incomplete
    self.outcome = outcome
    return batch.position
  }

  /// Records, for every notebook the peer sends and this device takes (and could open so
  /// far), that everything of it up to `position` of the peer's feed is here.
  private func moveCursors(to position: UInt64, except incomplete: Set<NotebookID>, now: Timestamp) throws {
    for notebook in plan.announced where plan.receiving[notebook] != nil && !incomplete.contains(notebook) {
      try store.setSyncCursor(peer, in: notebook, FeedPosition(replica: peerReplica, position: position))
    }
    try store.setSyncCursor(peer, FeedPosition(replica: peerReplica, position: position), now: now)
  }

  /// The peer sent everything: apply the held deletes if the guard allows (or none are
  /// held), and then adopt the peer's knowledge in every notebook it sent whole.
  public func finish(_ done: SyncMessage.Done, now: Timestamp) throws -> SyncMessage.Outcome {
    var outcome = self.outcome
    try store.batch {
      try moveCursors(to: done.position, except: incomplete, now: now)
      let held = try store.heldDeletes(peer)
      if !held.isEmpty {
        let live = try store.liveMemoCount()
        if let deleteGuard, !deleteGuard.allows(deletions: held.count, liveMemos: live) {
          outcome.heldDeletes = held.count
          outcome.liveMemos = live
          return
        }
        for revision in held {
          if case .stored = try store.applyRemote(revision, holdingDeletesFor: nil) { outcome.applied += 1 }
        }
        try store.dropHeldDeletes(peer)
      }
      for (text, knowledge) in done.notebooks ?? [:] {
        guard let notebook = NotebookID(text), plan.receiving[notebook] != nil, !incomplete.contains(notebook) else {
          continue
        }
        try store.learn(VersionVector(knowledge), in: notebook)
      }
      try store.markSynced(peer, now: now)
    }
    self.outcome = outcome
    return outcome
  }
}

/// What applying one incoming head did.
enum ApplyResult: Equatable {
  case known
  case held
  /// `conflict`: it made a new conflict copy, or a delete lost to an edit.
  case stored(conflict: Bool)
}

extension MemoStore {
  /// Merges one head from a peer (`MemoHeads.merge`). With `holdingDeletesFor`, a delete
  /// that would remove a live memo is held for that peer instead. Runs inside the caller's
  /// transaction.
  func applyRemote(_ revision: SyncRevision, holdingDeletesFor peer: String?) throws -> ApplyResult {
    let existing = try heads(of: revision.memo)
    let current = existing.map(\.head)
    guard case .add(let removing) = MemoHeads.merge(current, incoming: revision.head) else { return .known }
    if let peer, MemoHeads.deletes(current, incoming: revision.head) {
      try hold(revision, for: peer)
      return .held
    }
    let memo = try Self.validated(revision)
    let before = Self.conflictCount(current)
    try storeHead(memo, existing: existing, removing: removing)
    let after = Self.conflictCount(MemoHeads.merged(current, incoming: revision.head))
    return .stored(conflict: after > before)
  }

  /// Conflict copies, plus one for a memo that survived a concurrent delete.
  static func conflictCount(_ heads: [HeadSummary]) -> Int {
    guard let winner = MemoHeads.winner(heads) else { return 0 }
    let copies = heads.filter { !$0.isDeleted && $0.dot != winner.dot }.count
    let overruledDelete = !winner.isDeleted && heads.contains(where: \.isDeleted) ? 1 : 0
    return copies + overruledDelete
  }

  /// A head from a peer as a memo to store (in its notebook), refused unless it is exactly
  /// what this replica would have stored itself (so every replica holds the same bytes).
  static func validated(_ revision: SyncRevision) throws -> Memo {
    let draft = MemoDraft(
      title: revision.title, body: revision.body, tags: revision.tags, isPrivate: revision.isPrivate)
    if revision.head.isDeleted {
      guard revision.title.isEmpty, revision.body.isEmpty, revision.tags.isEmpty else { throw invalidRevision }
    } else {
      guard (try? MemoRules.validated(draft)) == draft else { throw invalidRevision }
    }
    return Memo(
      id: revision.memo, title: revision.title, body: revision.body, tags: revision.tags, created: revision.created,
      updated: revision.updated, isPrivate: revision.isPrivate, revision: revision.head.revision,
      origin: revision.head.dot.origin, isDeleted: revision.head.isDeleted, dot: revision.head.dot,
      clock: revision.head.clock, notebook: revision.notebook)
  }

  static let invalidRevision = MemoPeerError(
    .invalidInput,
    "a peer sent a memo revision that is not valid; the sync stopped and nothing of that batch was stored",
    hint: "update memo-peer on both devices")

  /// Live memos (not counting conflict copies): what the mass-delete guard weighs against.
  public func liveMemoCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM memos WHERE deleted = 0 AND conflict_of IS NULL")) }
  }
}

extension MemoStore {
  /// Whether memo content can be read and written now (false while the node is locked).
  public var canReadContent: Bool { contentSealer != nil }

  /// Rows in this replica's feed after `position` (memos and relayed records): an upper
  /// bound of what a sync sends.
  public func feedCount(after position: UInt64) throws -> Int {
    try sql {
      let count = try db.prepare(
        "SELECT (SELECT count(*) FROM memos WHERE feed_seq > ?1) + (SELECT count(*) FROM relayed WHERE feed_seq > ?1)")
      try count.bind(1, Int64(bitPattern: position))
      _ = try count.step()
      return Int(count.int64(0))
    }
  }
}
