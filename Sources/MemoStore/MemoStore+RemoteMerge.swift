import MemoCore
import MemoProtocol

/// What applying one incoming head did (`SyncApplyResult`: the receive policy counts it).
typealias ApplyResult = SyncApplyResult

extension MemoStore {
  /// Merges one head from a peer, after `SyncRules`: the receiver's own revisions are never
  /// stored, a clock beyond its sequence is refused. What is written is decided apart from
  /// the rows (`RemoteMerge.step`: known, held, stored over the heads it has seen, or
  /// refused for more than 32 conflict copies); here the heads are read and the rows
  /// written. With `holdingFor`, a removal (a delete of a live memo, an edit that empties
  /// one) is held for that peer instead. The caller has checked the revision's shape
  /// (`SyncRules.checkShape`: the batch decoder, the delivery's `revision(of:)`, or when it
  /// was held). Runs inside the caller's transaction, O(heads of the memo) — at most 33 live
  /// heads and its tombstones.
  func applyRemote(_ revision: SyncRevision, holdingFor peer: DeviceID?, receiver: SyncRules.Receiver) throws
    -> ApplyResult
  {
    guard try SyncRules.admit(revision, into: receiver) else { return .known }
    let existing = try heads(of: revision.memo)
    let step = try RemoteMerge.step(
      revision.head, bodyIsEmpty: revision.body.isEmpty, over: existing.map(\.head), memo: revision.memo,
      holding: peer != nil
    ) {
      // The memo's own text is read only for an edit that would empty it.
      try loadRow(revision.memo).map { !$0.isDeleted && !$0.body.isEmpty } ?? false
    }
    switch step {
    case .known: return .known
    case .hold:
      if let peer { try hold(revision, for: peer) }
      return .held
    case .refuse(let violation): throw violation
    case .store(let removing, let result):
      try raiseHorizon(revision.head.dot, in: revision.notebook)
      try storeHead(Self.memo(from: revision), existing: existing, removing: removing)
      return result
    }
  }

  /// A checked head from a peer as the memo row to store.
  static func memo(from revision: SyncRevision) -> Memo {
    Memo(
      id: revision.memo, title: revision.title, body: revision.body, tags: revision.tags, created: revision.created,
      updated: revision.updated, isPrivate: revision.isPrivate, revision: revision.head.revision,
      origin: .replica(revision.head.dot.origin), isDeleted: revision.head.isDeleted, dot: revision.head.dot,
      clock: revision.head.clock, notebook: revision.notebook, record: revision.record)
  }

  /// Live memos (not counting conflict copies): what the mass-delete guard weighs against.
  public func liveMemoCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM memos WHERE deleted = 0 AND conflict_of IS NULL")) }
  }
}
