import MemoCore

/// The checks of `SyncRules` for the clear part of a sync-version-2 record: what a blind
/// relay can check without the notebook key, and what a member checks before it opens one.
/// The same rules, and code, as for a revision (a relay is held to them as any peer is).
extension SyncRules {
  /// The clear part's numbers and names (`checkHistory`): what a blind relay can check
  /// without the key, and the decoder checks of every record.
  public static func checkNumbers(_ record: SyncRecord) throws(SyncViolation) {
    try checkHistory(dot: record.dot, clock: record.clock)
  }

  /// `admit` for a record a relay keeps sealed.
  public static func admit(_ record: SyncRecord, into receiver: Receiver) throws(SyncViolation) -> Bool {
    try admit(dot: record.dot, clock: record.clock, into: receiver)
  }

  /// A version-2 `sync-done`'s knowledge per notebook: notebook ids, at most as many as a
  /// hello may offer, each knowledge checked as the top-level one.
  static func checkNotebooks(_ done: SyncMessage.Done) throws(SyncViolation) {
    let notebooks = done.notebooks ?? [:]
    guard notebooks.count <= NotebookEntries.maximumEntries else {
      throw SyncViolation(.malformed, "a sync-done naming \(notebooks.count) notebooks")
    }
    for (id, knowledge) in notebooks {
      guard NotebookID(id) != nil else { throw SyncViolation(.malformed, "a notebook id that is not one") }
      _ = try checkedVector(knowledge, "a notebook's knowledge")
    }
  }
}
