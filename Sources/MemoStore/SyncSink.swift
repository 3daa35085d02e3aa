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
/// batch's transaction opens; `apply`), and a record that fails, or does not open, is kept aside (`quarantine`, still sealed,
/// with the reason and this peer's name) while the rest of the batch goes on: a forgery
/// never stops the impersonated device's syncs. So is a record whose clock claims edits
/// of this device it never made (`future-clock`): its signer lied about this device, and
/// the peer may only be passing the lie on. Then every record is checked, whatever the
/// role (`SyncRules`: numbers, the receiver's own replica, the replica cap; a member also
/// checks the opened revision's shape), and a batch that breaks a rule, or a limit
/// (conflict copies, held removals, relayed heads), throws `SyncViolation` with nothing of
/// it committed.
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
  /// This replica and its sequence, read again in every batch's transaction: a revision
  /// this device commits while the session runs (a person's write, another link's sync)
  /// can come straight back over another link, and is then its own echo, skipped — not a
  /// revision it never made (`own-origin`) nor a clock claiming its future (kept aside).
  /// Every rule checks what is true when it decides, not when the session began.
  private(set) var receiver: SyncRules.Receiver
  /// How many memos this direction's batches made live (new, or brought back) less those
  /// it made not live: the live memos before the sync are the count now less this, read
  /// only when the guard needs it.
  private var liveChange = 0
  private var budget: ReplicaBudget
  private var held: Int
  let maximumHeld: Int
  /// New replicas this peer may introduce here (`SyncLimits.maximumReplicasPerPeer`).
  let maximumIntroduced: Int
  /// Memos purged here, by notebook: their records are dropped on arrival. Read again when
  /// a purge was taken meanwhile (by another session), so none comes back.
  private var purged: Set<PurgedMemo>
  /// Notebooks with a record that could not be opened yet (a key generation not here).
  public private(set) var incomplete: Set<NotebookID> = []
  /// The quotas (config.json's `quotas`, else `SyncLimits`): new memos a day from this
  /// peer, new memos in a first fill, and a relay's sealed bytes per author and notebook.
  /// Tests make them small.
  let maximumNewMemos: Int
  let maximumFirstFill: Int
  let maximumRelayedBytes: Int64
  /// Notebooks this peer sends for the first time (no position in its feed yet): their
  /// new memos are not counted by the daily quota but by `maximumFirstFill`, per notebook,
  /// for as long as the session lasts (a live link's can last for days).
  private let firstFill: Set<NotebookID>
  private var filled: [NotebookID: Int] = [:]
  /// New memos from this peer today before this session, and in it so far.
  private var addedBefore: (day: Int64, count: Int)?
  private var added = 0
  /// Sealed bytes kept here per (notebook, author), read once per pair in a session.
  private var relayedBytes: [NotebookID: [DeviceID: Int64]] = [:]
  public private(set) var outcome = SyncMessage.Outcome()

  /// `deleteGuard` nil: deletes are applied as they come (a person said so). The limits are
  /// the documented ones (`SyncLimits`, the quotas as config.json sets them when nil); tests
  /// make them small.
  public init(
    store: MemoStore, peer: DeviceID, peerReplica: ReplicaID, deleteGuard: MassDeleteGuard?, plan: SyncPlan,
    maximumReplicas: Int = SyncLimits.maximumReplicas, maximumHeld: Int = SyncLimits.maximumHeldPerPeer,
    maximumIntroduced: Int = SyncLimits.maximumReplicasPerPeer,
    maximumNewMemos: Int? = nil, maximumFirstFill: Int? = nil,
    maximumRelayedBytes: Int64 = SyncLimits.maximumRelayedBytesPerAuthor
  ) throws {
    let quotas = store.syncQuotas()
    self.maximumIntroduced = maximumIntroduced
    self.maximumNewMemos = maximumNewMemos ?? quotas.newMemosPerDay
    self.maximumFirstFill = maximumFirstFill ?? quotas.firstFillMemos
    self.maximumRelayedBytes = maximumRelayedBytes
    firstFill = Set(try plan.receiving.keys.filter { try store.syncCursor(for: peer, in: $0) == nil })
    self.store = store
    self.peer = peer
    self.peerReplica = peerReplica
    self.deleteGuard = deleteGuard
    self.plan = plan
    self.maximumHeld = maximumHeld
    receiver = try store.receiver()
    budget = ReplicaBudget(known: try store.knownReplicas(), maximum: maximumReplicas)
    held = try store.heldDeleteCount(peer)
    purged = try store.purgedMemos()
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
    let prechecked = try store.precheckSignatures(of: batch.records, bindings: batch.bindings)
    return try apply(batch, now: now, prechecked: prechecked)
  }

  private func apply(
    _ batch: SyncRecordBatch.Batch, now: Timestamp, prechecked: PrecheckedSignatures
  ) throws -> UInt64 {
    // Counted on copies, kept only when the batch commits.
    var budget = self.budget
    var held = self.held
    var incomplete = self.incomplete
    var outcome = self.outcome
    var liveChange = self.liveChange
    var added = self.added
    var relayedBytes = self.relayedBytes
    var filled = self.filled
    let day = MemoStore.quotaDay(now)
    if addedBefore?.day != day { addedBefore = (day, try store.memosAdded(by: peer, day: day)) }
    let before = addedBefore?.count ?? 0
    try store.stagedBatch {
      receiver = try store.receiver()
      if try store.purgeCount() != purged.count { purged = try store.purgedMemos() }
      let refused = try store.takeBindings(batch.bindings, from: peer, quota: maximumIntroduced, now: now)
      let authorships = try store.authorships(of: batch.records, refused: refused, prechecked: prechecked)
      for (record, authorship) in zip(batch.records, authorships) {
        guard let role = plan.receiving[record.notebook], !incomplete.contains(record.notebook),
          !purged.contains(PurgedMemo(notebook: record.notebook, memo: record.memo))
        else { continue }
        // The decoder checked the clear part; checked again here, cheaply, for a batch that
        // reaches the store another way.
        try SyncRules.checkNumbers(record)
        // Who wrote it, before anything of it is believed: a record that fails is kept
        // aside, and the rest of the batch goes on (a forged revision never stops a sync).
        let author: DeviceID?
        switch authorship {
        case .author(let device): author = device
        case .refused(let reason):
          try keepAside(record, reason, now: now, in: &outcome)
          continue
        case .waiting:
          // Its author's share has not arrived here: nothing more of the notebook this
          // session, and its cursor stays, so the record comes again.
          incomplete.insert(record.notebook)
          continue
        }
        // A clock claiming edits of this device it never made is its signer's lie, which
        // the peer may only pass on (or have merged into an edit of its own): kept aside
        // too, so that a lie about this device never stops this device's syncs.
        do {
          _ = try SyncRules.admit(record, into: receiver)
        } catch let lie as SyncViolation where lie.reason == .futureClock {
          let signer = author.map { "a revision signed by \($0.short)" } ?? "an unsigned revision"
          try keepAside(record, signer + " claiming edits this device never made", now: now, in: &outcome)
          continue
        }
        try budget.admit(record.dot.origin)
        let result: ApplyResult
        switch role {
        case .relay:
          if let author {
            let kept = try relayedBytes[record.notebook]?[author] ?? store.relayedBytes(of: author, in: record.notebook)
            let total = kept + Int64(record.sealed.count)
            guard total <= maximumRelayedBytes else {
              throw SyncViolation(
                .overQuota,
                "more than \(maximumRelayedBytes / 1_048_576) MiB of sealed records by \(author.short) in notebook "
                  + "\(record.notebook.short)")
            }
            relayedBytes[record.notebook, default: [:]][author] = total
          }
          result = try store.applyRelayed(record, receiver: receiver, now: now)
        case .member:
          let opened: MemoStore.OpenedRecord
          do { opened = try store.openRecord(record, author: author) } catch let violation as SyncViolation {
            try keepAside(record, violation.detail, now: now, in: &outcome)
            continue
          }
          guard case .revision(let revision) = opened else {
            incomplete.insert(record.notebook)
            continue
          }
          try SyncRules.checkShape(revision)
          result = try store.applyRemote(revision, holdingFor: deleteGuard == nil ? nil : peer, receiver: receiver)
        }
        switch result {
        case .known: break
        case .held:
          held += 1
          guard held <= maximumHeld else {
            throw SyncViolation(.tooManyHeld, "more than \(maximumHeld) removals held back")
          }
        case .stored(let conflict, let live):
          outcome.applied += 1
          if conflict { outcome.conflicts += 1 }
          if role == .member { liveChange += live }
          if live > 0, firstFill.contains(record.notebook) {
            let count = filled[record.notebook, default: 0] + 1
            guard count <= maximumFirstFill else {
              throw SyncViolation(
                .overQuota,
                "more than \(maximumFirstFill) new memos in the first sync of notebook \(record.notebook.short) "
                  + "from one device (config.json's quotas.first_fill_memos)")
            }
            filled[record.notebook] = count
          } else if live > 0 {
            added += 1
            guard before + added <= maximumNewMemos else {
              throw SyncViolation(
                .overQuota, "more than \(maximumNewMemos) new memos from one device in a day (the rest comes tomorrow)")
            }
          }
        }
      }
      try store.recordMemosAdded(added - self.added, by: peer, day: day)
      try moveCursors(to: batch.position, except: incomplete, now: now)
    }
    self.budget = budget
    self.held = held
    self.incomplete = incomplete
    self.outcome = outcome
    self.liveChange = liveChange
    self.added = added
    self.relayedBytes = relayedBytes
    self.filled = filled
    return batch.position
  }

  /// Keeps a record that failed its checks aside, sealed as it came, with the reason.
  private func keepAside(
    _ record: SyncRecord, _ reason: String, now: Timestamp, in outcome: inout SyncMessage.Outcome
  ) throws {
    try store.quarantine(record, from: peer, reason: reason, now: now)
    outcome.quarantined += 1
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
    var outcome = self.outcome
    try store.batch {
      receiver = try store.receiver()
      try moveCursors(to: done.position, except: incomplete, now: now)
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
      for (text, knowledge) in done.notebooks ?? [:] {
        guard let notebook = NotebookID(text), plan.receiving[notebook] != nil, !incomplete.contains(notebook) else {
          continue
        }
        try store.learn(claimed: try SyncRules.checkedVector(knowledge, "a notebook's knowledge"), in: notebook)
      }
      try store.markSynced(peer, now: now)
    }
    self.outcome = outcome
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
