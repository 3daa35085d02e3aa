import FoundationEssentials
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
    _ = try NotebookEntries.check(hello.notebooks ?? [])
    _ = try NotebookEntries.checkedKeys(hello.keys ?? [])
    _ = try checkedRevocations(hello.revocations ?? [])
    _ = try checkedPurges(hello.purges ?? [])
  }

  /// A hello's revocations, decoded: at most `Revocation.maximumPerHello`, each one
  /// base64 of a revocation of its one form (its signature is the store's to check).
  public static func checkedRevocations(_ texts: [String]) throws(SyncViolation) -> [Revocation] {
    try checkedStatements(texts, "revocations", maximum: Revocation.maximumPerHello, size: Revocation.maximumSize) {
      (bytes) throws(SyncViolation) in
      do throws(Revocation.FormatError) { return try Revocation.decode(bytes) } catch {
        throw SyncViolation(.malformed, error.detail)
      }
    }
  }

  /// A hello's purges, decoded, as its revocations are.
  public static func checkedPurges(_ texts: [String]) throws(SyncViolation) -> [Purge] {
    try checkedStatements(texts, "purges", maximum: Purge.maximumPerHello, size: Purge.maximumSize) {
      (bytes) throws(SyncViolation) in
      do throws(Purge.FormatError) { return try Purge.decode(bytes) } catch {
        throw SyncViolation(.malformed, error.detail)
      }
    }
  }

  /// Signed statements a hello carries as base64: counted before any is decoded.
  private static func checkedStatements<T>(
    _ texts: [String], _ what: String, maximum: Int, size: Int, decode: ([UInt8]) throws(SyncViolation) -> T
  ) throws(SyncViolation) -> [T] {
    guard texts.count <= maximum else { throw SyncViolation(.malformed, "more than \(maximum) \(what)") }
    var decoded: [T] = []
    for text in texts {
      guard text.utf8.count <= size * 2, let bytes = Data(base64Encoded: text).map(Array.init) else {
        throw SyncViolation(.malformed, "\(what) that are not base64")
      }
      decoded.append(try decode(bytes))
    }
    return decoded
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
