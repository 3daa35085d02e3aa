/// The checks of `SyncRules` for the clear part of a sync-version-2 record: what a blind
/// relay can check without the notebook key, and what a member checks before it opens one.
/// The same rules as for a revision (a relay is held to them as any peer is).
extension SyncRules {
  /// The clear part's numbers and names: its dot a replica and a sequence of 1–2^53, a clock
  /// of at most 4,096 replicas, each a replica id with a sequence of at most 2^53, that ends
  /// at its own dot.
  public static func checkNumbers(_ record: SyncRecord) throws(SyncViolation) {
    try checkReplica(record.dot.origin, "a dot's replica")
    guard SyncLimits.isSequence(record.dot.seq) else {
      throw SyncViolation(.outOfRange, "a dot's sequence is outside 1–2^53")
    }
    guard record.clock.entries.count <= SyncLimits.maximumReplicas else {
      throw SyncViolation(.tooManyReplicas, "a clock names \(record.clock.entries.count) replicas")
    }
    for (origin, seq) in record.clock.entries {
      try checkReplica(origin, "a clock's replica")
      try checkNumber(seq, "a clock entry")
    }
    guard record.clock[record.dot.origin] == record.dot.seq else {
      throw SyncViolation(.invalidRevision, "a clock that does not end at its own dot")
    }
  }

  /// `admit` for a record a relay keeps sealed: the receiver's own revisions are never
  /// stored (false), one it never made and a clock beyond its sequence are refused.
  public static func admit(_ record: SyncRecord, into receiver: Receiver) throws(SyncViolation) -> Bool {
    if record.dot.origin == receiver.replica {
      guard record.dot.seq <= receiver.sequence else {
        throw SyncViolation(.ownOrigin, "a revision of this replica that it never made")
      }
      return false
    }
    guard record.clock[receiver.replica] <= receiver.sequence else {
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
