/// The checks of `SyncRules` for the clear part of a sync-version-2 record: what a blind
/// relay can check without the notebook key, and what a member checks before it opens one.
/// The same rules, and code, as for a revision (a relay is held to them as any peer is).
extension SyncRules {
  /// The clear part's numbers and names (`checkHistory`): what a blind relay can check
  /// without the key, and the decoder checks of every record.
  public static func checkNumbers(_ record: SyncRecord) throws(SyncViolation) {
    try checkHistory(dot: record.dot, clock: record.clock)
  }

  /// A revision's place in history, as a revision or a record carries it in clear: its dot
  /// a replica and a sequence of 1–2^53, a clock of at most 4,096 replicas, each a replica id
  /// with a sequence of at most 2^53, that ends at its own dot.
  static func checkHistory(dot: Dot, clock: VersionVector) throws(SyncViolation) {
    try checkReplica(dot.origin, "a dot's replica")
    guard SyncLimits.isSequence(dot.seq) else {
      throw SyncViolation(.outOfRange, "a dot's sequence is outside 1–2^53")
    }
    guard clock.entries.count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "a clock names \(clock.entries.count) replicas")
    }
    for (origin, seq) in clock.entries {
      try checkReplica(origin, "a clock's replica")
      try checkNumber(seq, "a clock entry")
    }
    guard clock[dot.origin] == dot.seq else {
      throw SyncViolation(.invalidRevision, "a clock that does not end at its own dot")
    }
  }

  /// `admit` for a record a relay keeps sealed.
  public static func admit(_ record: SyncRecord, into receiver: Receiver) throws(SyncViolation) -> Bool {
    try admit(dot: record.dot, clock: record.clock, into: receiver)
  }

  /// The receiver's own replica (`admit(_:into:)` for revisions says why): false for one of
  /// its own revisions (never stored), a refusal for one it never made or a clock beyond
  /// its sequence.
  static func admit(dot: Dot, clock: VersionVector, into receiver: Receiver) throws(SyncViolation) -> Bool {
    if dot.origin == receiver.replica {
      guard dot.seq <= receiver.sequence else {
        throw SyncViolation(.ownOrigin, "a revision of this replica that it never made")
      }
      return false
    }
    guard clock[receiver.replica] <= receiver.sequence else {
      throw SyncViolation(.futureClock, "a clock beyond this replica's own sequence")
    }
    return true
  }

  /// A version-2 `sync-done`'s knowledge per notebook: notebook ids, at most as many as a
  /// hello may offer, each knowledge checked as the top-level one.
  static func checkNotebooks(_ done: SyncMessage.Done) throws(SyncViolation) {
    let notebooks = done.notebooks ?? [:]
    guard notebooks.count <= NotebookOffers.maximumOffers else {
      throw SyncViolation(.malformed, "a sync-done naming \(notebooks.count) notebooks")
    }
    for (id, knowledge) in notebooks {
      guard NotebookID(id) != nil else { throw SyncViolation(.malformed, "a notebook id that is not one") }
      _ = try checkedVector(knowledge, "a notebook's knowledge")
    }
  }
}
