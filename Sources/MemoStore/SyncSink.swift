import MemoCore
import MemoProtocol

/// The receiving side of one direction of a sync with one peer: applies batches, each in
/// one transaction together with the peer's new feed position, so a sync killed at any
/// point resumes after the last committed batch and never applies a head twice.
///
/// Batches move records (`SyncRecord`), notebook by notebook as the session's `SyncPlan`
/// says: a record of a notebook this device is a member of is opened with the notebook's
/// key and merged like any revision (so the guard sees a relay's deletes as it sees
/// anyone's); a record of a notebook it relays is kept sealed (`applyRelayed`); a record of
/// any other notebook is skipped. A record sealed with a key generation not here yet leaves
/// its notebook incomplete for the rest of the session: nothing more of it is applied, and
/// neither its cursor nor its knowledge moves, so it comes again.
///
/// Who wrote a record is settled before anything of it commits (sync version 3): the
/// batch's replica bindings are taken (within the peer's quota of new replicas), every
/// signature is checked under the key its replica is bound to (on every core, before the
/// batch's transaction opens; `apply`), and a record that fails, or does not open, is kept
/// aside (`quarantine`, still sealed, with the reason and this peer's name) while the rest
/// of the batch goes on: a forgery never stops the impersonated device's syncs. So is a
/// record whose clock claims edits of this device it never made (`future-clock`): its
/// signer lied about this device, and the peer may only be passing the lie on. Then every
/// record is checked, whatever the role (`SyncRules`: numbers, the receiver's own replica,
/// the replica cap; a member also checks the opened revision's shape), and a batch that
/// breaks a rule, or a limit (conflict copies, held removals, relayed heads, quotas),
/// throws `SyncViolation` with nothing of it committed.
///
/// What is decided of each record is decided apart from the store (`SyncReceivePolicy`,
/// and `RemoteMerge` for a member's merge), from facts this sink reads in bulk for each
/// batch; the sink reads, and writes what was decided.
///
/// Deletes that would turn a live memo into a deleted one, and edits that would empty a
/// memo that had a body, are held (`sync_held`) rather than applied; at the end the
/// mass-delete guard decides whether they are applied, counting them with those applied
/// from the same peer within 24 hours against the live memos before this sync: a relay
/// cannot make a member remove more than the guard allows. Only a direction that ends with
/// nothing held adopts the peer's knowledge, and only as far as `SyncRules.adoptable`
/// allows.
public final class SyncSink {
  let store: MemoStore
  /// The peer's device ID (compact form): the key of its bookkeeping.
  public let peer: DeviceID
  let peerReplica: ReplicaID
  let deleteGuard: MassDeleteGuard?
  let plan: SyncPlan
  /// New replicas this peer may introduce here (`SyncLimits.maximumReplicasPerPeer`).
  let maximumIntroduced: Int
  /// What is decided of each record, and the counts the limits weigh (held removals, the
  /// replica budget, the quotas, first fills): the facts are read here, the decisions made
  /// there (`SyncReceivePolicy`). Its receiver (this replica and its sequence) and the
  /// purged memos are read again in every batch's transaction: a revision this device
  /// commits while the session runs (a person's write, another link's sync) can come
  /// straight back over another link, and is then its own echo, skipped — not a revision
  /// it never made (`own-origin`) nor a clock claiming its future (kept aside); and a
  /// purge another session took meanwhile must not let its memos come back.
  private(set) var policy: SyncReceivePolicy
  /// Records stored by this sink, and how many it stores before it defers the listing index
  /// (`MemoStore+ListingIndex`) until it ends.
  private var storedRecords = 0
  let listingIndexDeferral: Int
  /// The replica bindings this session's batches offered so far, each verified once.
  private(set) var offered = MemoStore.OfferedBindings()
  /// The member records of the batch being applied, opened before its transaction.
  private(set) var opened: [Int: SyncRevision] = [:]
  /// Notebooks with a record that could not be opened yet (a key generation not here).
  public var incomplete: Set<NotebookID> { policy.incomplete }
  /// What this direction did so far (applied, conflicts, kept aside; held at its end).
  public var outcome: SyncMessage.Outcome { policy.outcome }

  /// `deleteGuard` nil: deletes are applied as they come (a person said so). The limits are
  /// the documented ones (`SyncLimits`, the quotas as config.json sets them when nil); tests
  /// make them small: new memos a day from this peer, new memos in a first fill, and a
  /// relay's sealed bytes per author and notebook.
  public init(
    store: MemoStore, peer: DeviceID, peerReplica: ReplicaID, deleteGuard: MassDeleteGuard?, plan: SyncPlan,
    maximumReplicas: Int = SyncLimits.maximumReplicas, maximumHeld: Int = SyncLimits.maximumHeldPerPeer,
    maximumIntroduced: Int = SyncLimits.maximumReplicasPerPeer,
    maximumNewMemos: Int? = nil, maximumFirstFill: Int? = nil,
    maximumRelayedBytes: Int64 = SyncLimits.maximumRelayedBytesPerAuthor,
    listingIndexDeferral: Int = MemoStore.listingIndexDeferral
  ) throws {
    self.listingIndexDeferral = listingIndexDeferral
    let quotas = store.syncQuotas()
    let limits = SyncReceivePolicy.Limits(
      maximumHeld: maximumHeld, maximumNewMemos: maximumNewMemos ?? quotas.newMemosPerDay,
      maximumFirstFill: maximumFirstFill ?? quotas.firstFillMemos, maximumRelayedBytes: maximumRelayedBytes)
    // Notebooks this peer sends for the first time (no position in its feed yet), counted
    // for as long as the session lasts (a live link's can last for days).
    let firstFill = Set(try plan.receiving.keys.filter { try store.syncCursor(for: peer, in: $0) == nil })
    policy = SyncReceivePolicy(
      limits: limits, receiving: plan.receiving, firstFill: firstFill, receiver: try store.receiver(),
      budget: ReplicaBudget(known: try store.knownReplicas(), maximum: maximumReplicas),
      held: try store.heldDeleteCount(peer), purged: try store.purgedMemos())
    self.maximumIntroduced = maximumIntroduced
    self.store = store
    self.peer = peer
    self.peerReplica = peerReplica
    self.deleteGuard = deleteGuard
    self.plan = plan
    try store.beginBulkWrites()
  }

  deinit { endBulkWrites() }

  /// The connection's receiving settings end with the direction (or the sink).
  private var bulkWritesEnded = false
  private func endBulkWrites() {
    guard !bulkWritesEnded else { return }
    bulkWritesEnded = true
    store.endBulkWrites()
  }

  /// Applies one batch; returns the position to acknowledge. Throws `SyncViolation` (and
  /// commits nothing of the batch) when a record breaks a rule or a limit.
  ///
  /// The signatures are checked first, on every core, and only then is the batch stored,
  /// in one transaction that holds the write lock for as long as writing takes and waits
  /// on nothing (`PrecheckedSignatures`: a daemon stopped while it waited for the checks
  /// kept every person's command from writing, issue 39). A forged record is known before
  /// anything of the batch is written, so it is kept aside in the one pass and never
  /// counts towards a rule or a limit, whatever it is; the rest of the batch is stored.
  public func apply(_ batch: SyncRecordBatch.Batch, now: Timestamp) throws -> UInt64 {
    let pending = try store.startSignatureChecks(of: batch.records, bindings: batch.bindings, offered: &offered)
    // While other threads check the signatures, this one opens the member records: the two
    // overlap, and the transaction does neither.
    opened = preopen(batch.records)
    defer { opened = [:] }
    return try apply(batch, now: now, prechecked: pending.wait())
  }

  /// The records of `batch` this device opens as a member, opened (without their author,
  /// which the checks settle): by index in the batch. One that does not open is left to the
  /// transaction, which opens it again and decides.
  private func preopen(_ records: [SyncRecord]) -> [Int: SyncRevision] {
    var opened: [Int: SyncRevision] = [:]
    for (index, record) in records.enumerated() where plan.receiving[record.notebook] == .member {
      if case .revision(let revision)? = try? store.openRecord(record) { opened[index] = revision }
    }
    return opened
  }

  private func apply(
    _ batch: SyncRecordBatch.Batch, now: Timestamp, prechecked: PrecheckedSignatures
  ) throws -> UInt64 {
    let day = MemoStore.quotaDay(now)
    if policy.day?.day != day { policy.startDay(day, before: try store.memosAdded(by: peer, day: day)) }
    // Decided on a copy, kept only when the batch commits.
    var policy = self.policy
    try store.stagedBatch {
      let authorships = try readFacts(of: batch, prechecked: prechecked, into: &policy, now: now)
      for (index, (record, authorship)) in zip(batch.records, authorships).enumerated() {
        try take(record, authorship, opened: opened[index], &policy, now: now)
      }
      try store.recordMemosAdded(policy.added - self.policy.added, by: peer, day: day)
      try moveCursors(to: batch.position, except: policy.incomplete, now: now)
    }
    self.policy = policy
    let before = storedRecords
    storedRecords += batch.records.count
    // The batch is committed: a failure to defer only leaves the index as it is.
    if before < listingIndexDeferral, storedRecords >= listingIndexDeferral { try? store.deferListingIndex() }
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

  /// The peer sent everything: apply the held removals if the guard allows (or none are
  /// held), and then adopt what may be adopted of the peer's knowledge in every notebook it
  /// sent whole.
  public func finish(_ done: SyncMessage.Done, now: Timestamp) throws -> SyncMessage.Outcome {
    var outcome = policy.outcome
    try store.batch {
      let receiver = try store.receiver()
      try moveCursors(to: done.position, except: incomplete, now: now)
      let removals = try store.heldDeletes(peer)
      if !removals.isEmpty {
        if let deleteGuard {
          let liveBefore = try store.liveMemoCount() - policy.liveChange
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
      for (text, knowledge) in done.notebooks ?? [:] {
        guard let notebook = NotebookID(text), plan.receiving[notebook] != nil, !incomplete.contains(notebook) else {
          continue
        }
        try store.learn(claimed: try SyncRules.checkedVector(knowledge, "a notebook's knowledge"), in: notebook)
      }
      try store.markSynced(peer, now: now)
    }
    policy.outcome = outcome
    endBulkWrites()
    return outcome
  }
}

extension MemoStore {
  /// Whether memo content can be read and written now (false while the node is locked).
  public var canReadContent: Bool { contentSealer != nil }

  /// Rows in this replica's feed after `position` (memos and relayed records): an upper
  /// bound of what a sync sends.
  public func feedCount(after position: UInt64) throws -> Int {
    try flushStaged()
    return try sql {
      let count = try db.prepare(
        "SELECT (SELECT count(*) FROM memos WHERE feed_seq > ?1) + (SELECT count(*) FROM relayed WHERE feed_seq > ?1)")
      try count.bind(1, Int64(bitPattern: position))
      _ = try count.step()
      return Int(count.int64(0))
    }
  }
}
