import MemoCore

/// Who wrote a record, or why it is refused (docs/design/sync-v3.md, section 3): what the
/// store's signature checks say of each record of a batch.
public enum SyncAuthorship: Equatable, Sendable {
  /// Signed by this device (nil: unsigned, within the legacy ceiling).
  case author(DeviceID?)
  case refused(String)
  /// Signed by a device the notebook's log here says nothing of yet (the op that shares
  /// it has not arrived): the record comes again once it has.
  case waiting
}

/// What opening a member's record gave, as the receive policy weighs it.
public enum SyncOpenedRecord: Equatable, Sendable {
  case revision(SyncRevision)
  /// Sealed with a key generation not here yet.
  case missingKey
  /// It does not open with the key it names, or its content does not decode.
  case unreadable(SyncViolation)
}

/// A memo a purge named, in the notebook it named: what a later record must match to be
/// dropped on arrival.
public struct PurgedMemo: Hashable, Sendable {
  public let notebook: NotebookID
  public let memo: MemoID

  public init(notebook: NotebookID, memo: MemoID) {
    self.notebook = notebook
    self.memo = memo
  }
}

/// What a receiver does with one record of a batch (`SyncReceivePolicy`).
public enum SyncReceiveDecision: Equatable, Sendable {
  /// Why a record is passed over: nothing of it is stored, and it stops nothing.
  public enum Skip: Equatable, Sendable {
    /// A notebook this device does not take from the peer.
    case notTaken
    /// Its notebook could not be opened earlier in the session (it comes again).
    case incomplete
    /// A memo purged here.
    case purged
    /// One of this device's own revisions coming back (never stored, never a refusal).
    case echo
    /// Its author's share has not arrived: its notebook is incomplete from now on.
    case waiting
    /// Sealed with a key generation not here yet: its notebook is incomplete from now on.
    case missingKey
  }

  case skip(Skip)
  /// Kept aside (quarantined, sealed as it came) with the reason; the batch goes on.
  case keepAside(String)
  /// Stored as `role` says: a member opens and merges it, a relay keeps it sealed.
  /// `author`: the device whose signature it carries (nil: unsigned).
  case apply(NotebookRole, author: DeviceID?)
  /// The batch breaks a rule or a limit: nothing of it commits.
  case refuse(SyncViolation)
}
