import MemoCore

/// The checks of the sync messages themselves (`SyncRules` holds the rest).
extension SyncRules {
  // MARK: - Messages

  /// A `sync-hello` (whose version the caller has compared first, so that another version
  /// is answered with `version`, not with whatever else it changed).
  public static func check(_ hello: SyncMessage.Hello) throws(SyncViolation) {
    _ = try checkedVector(hello.knowledge, "the knowledge")
    if let cursor = hello.cursor {
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
      try checkCount(outcome.quarantined, "quarantined")
    }
  }
}
