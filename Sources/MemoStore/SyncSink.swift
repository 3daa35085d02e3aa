import MemoCore

/// The receiving side of one direction of a sync with one peer: applies batches, each in
/// one transaction together with the peer's new feed position, so a sync killed at any
/// point resumes after the last committed batch and never applies a head twice.
///
/// Every revision is checked first (`SyncRules`: the receiver's own replica, the replica
/// cap) and a batch that breaks a rule, or a limit (conflict copies, held removals),
/// throws `SyncViolation` with nothing of it committed.
///
/// Deletes that would turn a live memo into a deleted one, and edits that would empty a
/// memo that had a body, are held (`sync_held`) rather than applied; at the end the
/// mass-delete guard decides whether they are applied, counting them with those applied
/// from the same peer within 24 hours against the live memos before this sync. Only a
/// direction that ends with nothing held adopts the peer's knowledge, and only as far as
/// `SyncRules.adoptable` allows.
public final class SyncSink {
  let store: MemoStore
  /// The peer's device ID (compact form): the key of its bookkeeping.
  public let peer: String
  let peerReplica: String
  let deleteGuard: MassDeleteGuard?
  /// This replica and its sequence, as they were when the direction began (nothing this
  /// side makes during the sync is sent back in it).
  let receiver: SyncRules.Receiver
  /// How many memos this direction's batches made live (new, or brought back) less those
  /// it made not live: the live memos before the sync are the count now less this, read
  /// only when the guard needs it.
  private var liveChange = 0
  private var budget: ReplicaBudget
  private var held: Int
  let maximumHeld: Int
  public private(set) var outcome = SyncMessage.Outcome()

  /// `deleteGuard` nil: deletes are applied as they come (a person said so). The limits are
  /// the documented ones (`SyncLimits`); tests make them small.
  public init(
    store: MemoStore, peer: String, peerReplica: String, deleteGuard: MassDeleteGuard?,
    maximumReplicas: Int = SyncLimits.maximumReplicas, maximumHeld: Int = SyncLimits.maximumHeldPerPeer
  ) throws {
    self.store = store
    self.peer = peer
    self.peerReplica = peerReplica
    self.deleteGuard = deleteGuard
    self.maximumHeld = maximumHeld
    receiver = try store.receiver()
    budget = ReplicaBudget(known: try store.knownReplicas(), maximum: maximumReplicas)
    held = try store.heldDeleteCount(peer)
  }

  /// Where in the peer's feed to start: after the last batch committed here, unless the
  /// peer's database changed since.
  public func startPosition() throws -> FeedPosition? {
    try store.syncCursor(for: peer).flatMap { $0.replica == peerReplica ? $0 : nil }
  }

  /// Applies one batch; returns the position to acknowledge. Throws `SyncViolation` (and
  /// commits nothing of the batch) when a revision breaks a rule or a limit.
  public func apply(_ batch: SyncBatchCodec.Batch, now: Timestamp) throws -> UInt64 {
    // Counted on copies, kept only when the batch commits.
    var budget = self.budget
    var held = self.held
    var outcome = self.outcome
    var liveChange = self.liveChange
    try store.batch {
      for revision in batch.revisions {
        // The decoder checked the whole shape; the numbers are checked again here, cheaply,
        // for a batch that reaches the store another way.
        try SyncRules.checkNumbers(revision)
        try budget.admit(revision.head.dot.origin)
        switch try store.applyRemote(revision, holdingFor: deleteGuard == nil ? nil : peer, receiver: receiver) {
        case .known: break
        case .held:
          held += 1
          guard held <= maximumHeld else {
            throw SyncViolation(.tooManyHeld, "more than \(maximumHeld) removals held back")
          }
        case .stored(let conflict, let live):
          outcome.applied += 1
          if conflict { outcome.conflicts += 1 }
          liveChange += live
        }
      }
      try store.setSyncCursor(peer, FeedPosition(replica: peerReplica, position: batch.position), now: now)
    }
    self.budget = budget
    self.held = held
    self.outcome = outcome
    self.liveChange = liveChange
    return batch.position
  }

  /// The peer sent everything: apply the held removals if the guard allows (or none are
  /// held), and then adopt what may be adopted of the peer's knowledge.
  public func finish(_ done: SyncMessage.Done, now: Timestamp) throws -> SyncMessage.Outcome {
    var outcome = self.outcome
    try store.batch {
      try store.setSyncCursor(peer, FeedPosition(replica: peerReplica, position: done.position), now: now)
      let removals = try store.heldDeletes(peer)
      if !removals.isEmpty {
        if let deleteGuard {
          let liveBefore = try store.liveMemoCount() - liveChange
          let recent = try store.recentRemovals(from: peer, now: now)
          guard deleteGuard.allows(removals: removals.count, liveBefore: liveBefore, recentlyApplied: recent) else {
            outcome.heldDeletes = removals.count
            outcome.liveMemos = liveBefore
            return
          }
        }
        for revision in removals {
          if case .stored = try store.applyRemote(revision, holdingFor: nil, receiver: receiver) {
            outcome.applied += 1
          }
        }
        try store.dropHeldDeletes(peer)
        if deleteGuard != nil { try store.recordRemovals(removals.count, from: peer, now: now) }
      }
      try store.learn(claimed: VersionVector(done.knowledge))
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
  /// `conflict`: it made a new conflict copy, or a delete lost to an edit; `live`: +1 when
  /// the memo became live (new, or brought back), -1 when it stopped being live, else 0.
  case stored(conflict: Bool, live: Int)
}

extension MemoStore {
  /// Merges one head from a peer (`MemoHeads.merge`), after `SyncRules`: the receiver's own
  /// revisions are never stored, a clock beyond its sequence is refused, and no memo gets
  /// more than 32 conflict copies. With `holdingFor`, a removal (a delete of a live memo, an
  /// edit that empties one) is held for that peer instead. The caller has checked the
  /// revision's shape (`SyncRules.checkShape`: the batch decoder, the delivery's
  /// `revision(of:)`, or when it was held). Runs inside the caller's transaction, O(heads of
  /// the memo) — at most 33 live heads and its tombstones.
  func applyRemote(_ revision: SyncRevision, holdingFor peer: String?, receiver: SyncRules.Receiver) throws
    -> ApplyResult
  {
    guard try SyncRules.admit(revision, into: receiver) else { return .known }
    let existing = try heads(of: revision.memo)
    let current = existing.map(\.head)
    guard case .add(let removing) = MemoHeads.merge(current, incoming: revision.head) else { return .known }
    if let peer, try removes(revision, heads: current) {
      try hold(revision, for: peer)
      return .held
    }
    let merged = MemoHeads.merged(current, incoming: revision.head)
    let copies = MemoHeads.copyCount(merged)
    guard copies <= SyncLimits.maximumConflictCopies || copies <= MemoHeads.copyCount(current) else {
      throw SyncViolation(.tooManyCopies, "memo \(revision.memo.short) would get \(copies) conflict copies")
    }
    try raiseHorizon(revision.head.dot)
    try storeHead(Self.memo(from: revision), existing: existing, removing: removing)
    let wasLive = MemoHeads.winner(current).map { !$0.isDeleted } ?? false
    let isLive = MemoHeads.winner(merged).map { !$0.isDeleted } ?? false
    return .stored(
      conflict: Self.conflictCount(merged) > Self.conflictCount(current), live: (isLive ? 1 : 0) - (wasLive ? 1 : 0))
  }

  /// Whether the guard holds `revision`: a delete that would turn a live memo into a
  /// deleted one, or an edit with an empty body that would replace a memo's body. The
  /// memo's own text is read only in the second case.
  private func removes(_ revision: SyncRevision, heads: [HeadSummary]) throws -> Bool {
    if revision.head.isDeleted { return MemoHeads.deletes(heads, incoming: revision.head) }
    guard revision.body.isEmpty, !heads.isEmpty else { return false }
    let winnerHasBody = try loadRow(revision.memo).map { !$0.isDeleted && !$0.body.isEmpty } ?? false
    return MemoHeads.empties(heads, incoming: revision.head, winnerHasBody: winnerHasBody)
  }

  /// Conflict copies, plus one for a memo that survived a concurrent delete.
  static func conflictCount(_ heads: [HeadSummary]) -> Int {
    guard let winner = MemoHeads.winner(heads) else { return 0 }
    let overruledDelete = !winner.isDeleted && heads.contains(where: \.isDeleted) ? 1 : 0
    return MemoHeads.copyCount(heads) + overruledDelete
  }

  /// A checked head from a peer as the memo row to store.
  static func memo(from revision: SyncRevision) -> Memo {
    Memo(
      id: revision.memo, title: revision.title, body: revision.body, tags: revision.tags, created: revision.created,
      updated: revision.updated, isPrivate: revision.isPrivate, revision: revision.head.revision,
      origin: revision.head.dot.origin, isDeleted: revision.head.isDeleted, dot: revision.head.dot,
      clock: revision.head.clock)
  }

  /// Live memos (not counting conflict copies): what the mass-delete guard weighs against.
  public func liveMemoCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM memos WHERE deleted = 0 AND conflict_of IS NULL")) }
  }
}

extension MemoStore {
  /// Whether memo content can be read and written now (false while the node is locked).
  public var canReadContent: Bool { contentSealer != nil }

  /// Heads in this replica's feed after `position`: an upper bound of what a sync sends.
  public func feedCount(after position: UInt64) throws -> Int {
    try sql {
      let count = try db.prepare("SELECT count(*) FROM memos WHERE feed_seq > ?")
      try count.bind(1, Int64(bitPattern: position))
      _ = try count.step()
      return Int(count.int64(0))
    }
  }
}
