/// Data a peer sent that breaks a sync rule. The receiver ends the session with `sync-refuse`
/// carrying `reason` and commits nothing of the batch (or message) at fault; both sides show
/// it. `detail` says which rule, in this program's words (numbers and field names, never a
/// peer's bytes), for logs and `--debug`.
public struct SyncViolation: Error, Equatable, Sendable, CustomStringConvertible {
  public let reason: SyncMessage.RefuseReason
  public let detail: String

  public init(_ reason: SyncMessage.RefuseReason, _ detail: String) {
    self.reason = reason
    self.detail = detail
  }

  public var description: String { "\(reason.rawValue): \(detail)" }
}

/// The checks every receiver of sync data applies (docs/PROTOCOL.md, "Limits" and
/// "Refusals"), pure so that the store, the session and a blind relay share them: range
/// checks of every number a peer sends, the receiver's own replica (only it makes its
/// revisions), how much of a peer's knowledge may be adopted, and how many replicas a node
/// tracks.
public enum SyncRules {
  // MARK: - Numbers and names

  /// A sequence number, feed position or count from the wire: at most 2^53.
  public static func checkNumber(_ value: UInt64, _ field: String) throws(SyncViolation) {
    guard value <= SyncLimits.maximumSequence else {
      throw SyncViolation(.outOfRange, "\(field) is above 2^53")
    }
  }

  /// A count a peer reports as a JSON integer (an outcome): 0 to 2^53.
  public static func checkCount(_ value: Int, _ field: String) throws(SyncViolation) {
    guard value >= 0, value <= Int(SyncLimits.maximumSequence) else {
      throw SyncViolation(.outOfRange, "\(field) is outside 0–2^53")
    }
  }

  public static func checkReplica(_ id: String, _ field: String) throws(SyncViolation) {
    guard SyncLimits.isReplicaID(id) else { throw SyncViolation(.malformed, "\(field) is not a replica id") }
  }

  /// A knowledge (or clock) from a JSON message: at most 4,096 replicas, each a replica id
  /// with a sequence number.
  public static func checkedVector(_ entries: [String: UInt64], _ field: String) throws(SyncViolation)
    -> VersionVector
  {
    guard entries.count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "\(field) names \(entries.count) replicas")
    }
    for (origin, seq) in entries {
      try checkReplica(origin, "a replica of \(field)")
      try checkNumber(seq, field)
    }
    return VersionVector(entries)
  }

  public static func checkTimestamp(_ value: Int64, _ field: String) throws(SyncViolation) {
    guard SyncLimits.timestamps.contains(value) else {
      throw SyncViolation(.outOfRange, "\(field) is outside 0–2^53 ms")
    }
  }

  public static func checkRevisionNumber(_ value: Int64) throws(SyncViolation) {
    guard value >= 0, value <= SyncLimits.maximumRevision else {
      throw SyncViolation(.outOfRange, "a revision number is outside 0–2^53")
    }
  }

  // MARK: - Messages

  /// A `sync-hello` (whose version the caller has compared first, so that another version
  /// is answered with `version`, not with whatever else it changed).
  public static func check(_ hello: SyncMessage.Hello) throws(SyncViolation) {
    try checkReplica(hello.replica, "the replica")
    _ = try checkedVector(hello.knowledge, "the knowledge")
    if let cursor = hello.cursor {
      try checkReplica(cursor.replica, "the cursor's replica")
      try checkNumber(cursor.position, "the cursor")
    }
    if let pending = hello.pending { try checkNumber(pending, "pending") }
  }

  public static func check(_ done: SyncMessage.Done) throws(SyncViolation) {
    try checkNumber(done.position, "the position")
    _ = try checkedVector(done.knowledge, "the knowledge")
    try checkNotebooks(done)
  }

  /// A `sync-ack`: it may acknowledge at most what was sent (`sentUpTo`).
  public static func check(_ ack: SyncMessage.Ack, sentUpTo: UInt64) throws(SyncViolation) {
    guard ack.position <= sentUpTo else {
      throw SyncViolation(.outOfRange, "an acknowledgement of more than was sent")
    }
    if let outcome = ack.outcome {
      try checkCount(outcome.applied, "applied")
      try checkCount(outcome.conflicts, "conflicts")
      try checkCount(outcome.heldDeletes, "held_deletes")
      try checkCount(outcome.liveMemos, "live_memos")
    }
  }

  // MARK: - Revisions

  /// The shape of one revision, whoever receives it: a canonical memo id (checked by the
  /// decoder), its dot a replica and a sequence number, a clock of at most 4,096 replicas
  /// whose entry for the dot's replica is exactly the dot (a revision has seen its own dot,
  /// and nothing later of its own replica), numbers in range, and content as a store writes
  /// it (normalised; a tombstone carries none).
  public static func checkShape(_ revision: SyncRevision) throws(SyncViolation) {
    try checkNumbers(revision)
    if revision.head.isDeleted {
      guard revision.title.isEmpty, revision.body.isEmpty, revision.tags.isEmpty else {
        throw SyncViolation(.invalidRevision, "a tombstone with content")
      }
    } else {
      let draft = MemoDraft(
        title: revision.title, body: revision.body, tags: revision.tags, isPrivate: revision.isPrivate)
      guard (try? MemoRules.validated(draft)) == draft else {
        throw SyncViolation(.invalidRevision, "content that is not normalised or not valid")
      }
    }
  }

  /// The shape's numbers and names alone (dot, clock, revision counter, times): what a
  /// sender checks of its own rows before sending them (their content was validated when
  /// they were stored).
  public static func checkNumbers(_ revision: SyncRevision) throws(SyncViolation) {
    let head = revision.head
    try checkHistory(dot: head.dot, clock: head.clock)
    try checkRevisionNumber(head.revision)
    try checkTimestamp(revision.created, "created")
    try checkTimestamp(revision.updated, "updated")
  }

  /// What the receiver knows of itself: its replica id and its last sequence number.
  public struct Receiver: Sendable, Equatable {
    public var replica: String
    public var sequence: UInt64

    public init(replica: String, sequence: UInt64) {
      self.replica = replica
      self.sequence = sequence
    }
  }

  /// Only the receiver makes revisions of its own replica. A revision whose dot is the
  /// receiver's and beyond its sequence was never made (refused); one at or below it is the
  /// receiver's own, which it holds or has seen superseded: an honest peer echoes it when
  /// the receiver's knowledge does not cover the rest of its clock, and a dishonest one
  /// could only forge it, so it is never stored (false: skip it). A clock that claims to
  /// have seen a revision of the receiver beyond its sequence is refused.
  public static func admit(_ revision: SyncRevision, into receiver: Receiver) throws(SyncViolation) -> Bool {
    try admit(dot: revision.head.dot, clock: revision.head.clock, into: receiver)
  }

  // MARK: - Knowledge

  /// What a receiver adopts of the knowledge a sender claims at `sync-done`: per replica,
  /// no more than the highest sequence the receiver has seen from anyone (`horizon`: its
  /// own knowledge and the dot of every revision it stored or held, this session's
  /// batches included);
  /// replicas it has seen nothing of are ignored; its own replica is never lowered or
  /// raised by a peer.
  public static func adoptable(_ claimed: VersionVector, horizon: VersionVector, own: String) -> VersionVector {
    var adopted: [String: UInt64] = [:]
    for (origin, seq) in claimed.entries where origin != own {
      let bound = horizon[origin]
      if bound > 0 { adopted[origin] = Swift.min(seq, bound) }
    }
    return VersionVector(adopted)
  }
}

/// The replicas a node tracks (those it has seen revisions of: its knowledge and horizon),
/// and their cap (4,096): a batch whose revisions would bring the count over it is refused.
public struct ReplicaBudget: Sendable {
  public private(set) var known: Set<String>
  public let maximum: Int

  public init(known: Set<String>, maximum: Int = SyncLimits.maximumReplicas) {
    self.known = known
    self.maximum = maximum
  }

  /// Counts the replica of a revision's dot as known, or refuses when that would exceed the
  /// cap.
  public mutating func admit(_ origin: String) throws(SyncViolation) {
    guard !known.contains(origin) else { return }
    guard known.count < maximum else {
      throw SyncViolation(.tooManyReplicas, "more than \(maximum) replicas in all")
    }
    known.insert(origin)
  }
}
