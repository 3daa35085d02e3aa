/// Data a peer sent that breaks a sync rule. The receiver ends the session with `sync-refuse`
/// carrying `reason` and commits nothing of the batch (or message) at fault; both sides show
/// it. `detail` says which rule, in this program's words (numbers and field names, never a
/// peer's bytes), for logs and `--debug`.
public struct SyncViolation: Error, Equatable, Sendable, CustomStringConvertible {
  public let reason: SyncRefuseReason
  public let detail: String
  /// For `version`: the version the peer speaks, when it said (a number within 1–1000).
  public let peerVersion: Int?

  public init(_ reason: SyncRefuseReason, _ detail: String, peerVersion: Int? = nil) {
    self.reason = reason
    self.detail = detail
    self.peerVersion = peerVersion.flatMap { (1...1000).contains($0) ? $0 : nil }
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

  /// A replica id from the wire, checked: `malformed` when it is not one.
  public static func replica(_ id: String, _ field: String) throws(SyncViolation) -> ReplicaID {
    guard let replica = ReplicaID(id) else { throw SyncViolation(.malformed, "\(field) is not a replica id") }
    return replica
  }

  /// A knowledge (or clock) from a JSON message: at most 4,096 replicas, each a replica id
  /// with a sequence number.
  public static func checkedVector(_ entries: [String: UInt64], _ field: String) throws(SyncViolation)
    -> VersionVector
  {
    guard entries.count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "\(field) names \(entries.count) replicas")
    }
    var checked: [ReplicaID: UInt64] = [:]
    for (text, seq) in entries {
      try checkNumber(seq, field)
      checked[try replica(text, "a replica of \(field)")] = seq
    }
    return VersionVector(checked)
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
    public var replica: ReplicaID
    public var sequence: UInt64

    public init(replica: ReplicaID, sequence: UInt64) {
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

  /// A revision's place in history, as a revision or a record carries it in clear: its dot
  /// a sequence of 1–2^53, a clock of at most 4,096 replicas, each with a sequence of at most
  /// 2^53, that ends at its own dot (the replica ids were checked when they were decoded:
  /// they are `ReplicaID`s).
  public static func checkHistory(dot: Dot, clock: VersionVector) throws(SyncViolation) {
    guard SyncLimits.isSequence(dot.seq) else {
      throw SyncViolation(.outOfRange, "a dot's sequence is outside 1–2^53")
    }
    guard clock.entries.count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "a clock names \(clock.entries.count) replicas")
    }
    for seq in clock.entries.values {
      try checkNumber(seq, "a clock entry")
    }
    guard clock[dot.origin] == dot.seq else {
      throw SyncViolation(.invalidRevision, "a clock that does not end at its own dot")
    }
  }

  /// The receiver's own replica (`admit(_:into:)` for revisions says why): false for one of
  /// its own revisions (never stored), a refusal for one it never made or a clock beyond
  /// its sequence.
  public static func admit(dot: Dot, clock: VersionVector, into receiver: Receiver) throws(SyncViolation) -> Bool {
    if dot.origin == receiver.replica {
      guard dot.seq <= receiver.sequence else {
        // The evidence, so a refusal says what arrived and why it cannot be: a sequence of
        // this replica beyond any it ever wrote (read when the batch was decided).
        throw SyncViolation(
          .ownOrigin,
          "a revision of this replica that it never made (sequence \(dot.seq); it has written \(receiver.sequence))")
      }
      return false
    }
    guard clock[receiver.replica] <= receiver.sequence else {
      throw SyncViolation(
        .futureClock,
        "a clock beyond this replica's own sequence (it names \(clock[receiver.replica]); this replica has written "
          + "\(receiver.sequence))")
    }
    return true
  }

  // MARK: - Knowledge

  /// What a receiver adopts of the knowledge a sender claims at `sync-done`: per replica,
  /// no more than the highest sequence the receiver has seen from anyone (`horizon`: its
  /// own knowledge and the dot of every revision it stored or held, this session's
  /// batches included);
  /// replicas it has seen nothing of are ignored; its own replica is never lowered or
  /// raised by a peer.
  public static func adoptable(_ claimed: VersionVector, horizon: VersionVector, own: ReplicaID) -> VersionVector {
    var adopted: [ReplicaID: UInt64] = [:]
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
  public private(set) var known: Set<ReplicaID>
  public let maximum: Int

  public init(known: Set<ReplicaID>, maximum: Int = SyncLimits.maximumReplicas) {
    self.known = known
    self.maximum = maximum
  }

  /// Counts the replica of a revision's dot as known, or refuses when that would exceed the
  /// cap.
  public mutating func admit(_ origin: ReplicaID) throws(SyncViolation) {
    guard !known.contains(origin) else { return }
    guard known.count < maximum else {
      throw SyncViolation(.tooManyReplicas, "more than \(maximum) replicas in all")
    }
    known.insert(origin)
  }
}
