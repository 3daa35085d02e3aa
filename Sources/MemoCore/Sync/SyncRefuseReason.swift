/// Why a side ends a sync (docs/PROTOCOL.md, "Refusals"). The first three come from an
/// answerer that will not sync now; the others from either side, about the data the
/// other sent: the refusing side commits nothing of the batch (or message) at fault.
public enum SyncRefuseReason: String, Codable, Sendable, CaseIterable {
  /// The answering node is locked: its memos cannot be read or written until unlocked.
  case locked
  /// The answering node speaks another sync version.
  case version
  /// The answering node's store failed (full disk, damaged database).
  case storage
  /// A message that does not decode as its kind (bad JSON, a batch whose lengths overrun).
  case malformed
  /// A number above its documented maximum (`SyncLimits`).
  case outOfRange = "out-of-range"
  /// A revision whose dot names the receiver's own replica: only the receiver makes those.
  case ownOrigin = "own-origin"
  /// A clock that claims to have seen a revision of the receiver it never made.
  case futureClock = "future-clock"
  /// A revision the receiver would not have written itself (not normalised, a tombstone
  /// with content, a clock that does not end at its own dot).
  case invalidRevision = "invalid-revision"
  /// More replicas than a clock, a knowledge or a node may hold (4,096).
  case tooManyReplicas = "too-many-replicas"
  /// A memo would get more than 32 conflict copies.
  case tooManyCopies = "too-many-copies"
  /// More deletes held back from one device than the guard keeps (65,536).
  case tooManyHeld = "too-many-held"
  /// A frame of another kind, or out of the session's order.
  case unexpectedFrame = "unexpected-frame"
  /// More than one device may send within a documented quota (new memos a day, sealed
  /// bytes a relay keeps of one device in one notebook): its data waits, nothing is lost.
  case overQuota = "over-quota"
  /// The refusing node removed the other from its trust store while the sync ran
  /// (`trust remove`): nothing more of it is applied there.
  case untrusted

  /// What was wrong, as a person reads it after "sent" or "refused": never a peer's bytes.
  public var badData: String {
    switch self {
    case .locked: "nothing (it is locked)"
    case .version: "a sync of another version"
    case .storage: "nothing (its store failed)"
    case .malformed: "a sync message that does not decode"
    case .outOfRange: "a number above the protocol's maximum"
    case .ownOrigin: "a revision claiming to be made by the receiving device"
    case .futureClock: "a revision claiming to have seen edits the receiving device never made"
    case .invalidRevision: "a memo revision that is not valid"
    case .tooManyReplicas: "more than 4,096 replicas"
    case .tooManyCopies: "more than 32 conflict copies of one memo"
    case .tooManyHeld: "more deletes than the guard holds back (65,536)"
    case .unexpectedFrame: "a frame out of the sync's order"
    case .overQuota: "more than one device may send (a quota: new memos a day, or a relay's bytes per device)"
    case .untrusted: "nothing more (it no longer trusts this device)"
    }
  }
}
