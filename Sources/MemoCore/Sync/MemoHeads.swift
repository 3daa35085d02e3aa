/// What the merge needs to know of one revision of a memo: no content, only its place in
/// the memo's history.
public struct HeadSummary: Equatable, Sendable {
  public var dot: Dot
  public var clock: VersionVector
  /// The memo's edit counter at this revision (shown to people; bound into sealing).
  public var revision: Int64
  public var isDeleted: Bool

  public init(dot: Dot, clock: VersionVector, revision: Int64, isDeleted: Bool) {
    self.dot = dot
    self.clock = clock
    self.revision = revision
    self.isDeleted = isDeleted
  }
}

/// The replication rule for one memo (docs/PROTOCOL.md, "Sync"): a replica keeps every
/// revision of a memo that no other revision it holds has seen — its *heads*. Merging is
/// "add the incoming revision, drop whatever it has seen", which gives the same heads
/// whatever order revisions arrive in, however often: replicas that have exchanged
/// everything hold the same heads, so they show the same memo.
///
/// One head is the memo (the *winner*); every other live head is a conflict copy, shown
/// next to it until a person resolves it. Tombstone heads are never shown: a delete that
/// is concurrent with an edit loses to it, and the memo is flagged instead.
public enum MemoHeads {
  /// What merging one incoming revision does.
  public enum Outcome: Equatable, Sendable {
    /// A revision held here has seen it (or it is already here): nothing to do.
    case known
    /// Store it, and remove the local heads with these dots (it has seen them).
    case add(removing: [Dot])
  }

  public static func merge(_ heads: [HeadSummary], incoming: HeadSummary) -> Outcome {
    if heads.contains(where: { $0.clock.covers(incoming.clock) }) { return .known }
    return .add(removing: heads.filter { incoming.clock.covers($0.clock) }.map(\.dot))
  }

  /// The heads after merging (for callers and tests that hold them in memory).
  public static func merged(_ heads: [HeadSummary], incoming: HeadSummary) -> [HeadSummary] {
    switch merge(heads, incoming: incoming) {
    case .known: return heads
    case .add(let removing): return heads.filter { !removing.contains($0.dot) } + [incoming]
    }
  }

  /// The head that is the memo: a live head before any tombstone, then the higher
  /// revision, then the higher dot. Depends only on the heads themselves, so every
  /// replica picks the same one.
  public static func winner(_ heads: [HeadSummary]) -> HeadSummary? {
    heads.max { rank($0) < rank($1) }
  }

  private static func rank(_ head: HeadSummary) -> (Int, Int64, UInt64, ReplicaID) {
    (head.isDeleted ? 0 : 1, head.revision, head.dot.seq, head.dot.origin)
  }

  /// Whether adding `incoming` would turn a live memo into a deleted one: what the
  /// mass-delete guard counts.
  public static func deletes(_ heads: [HeadSummary], incoming: HeadSummary) -> Bool {
    guard incoming.isDeleted, let before = winner(heads), !before.isDeleted else { return false }
    return winner(merged(heads, incoming: incoming))?.isDeleted ?? false
  }

  /// Whether adding `incoming`, a live revision with an empty body, would put it in the
  /// place of a winner that has a body (`winnerHasBody`): an edit that empties a memo, which
  /// the mass-delete guard holds like a delete. A concurrent one that only becomes a
  /// conflict copy leaves the memo's text where it was.
  public static func empties(_ heads: [HeadSummary], incoming: HeadSummary, winnerHasBody: Bool) -> Bool {
    guard !incoming.isDeleted, winnerHasBody, let before = winner(heads), !before.isDeleted else { return false }
    return winner(merged(heads, incoming: incoming))?.dot == incoming.dot
  }

  /// The conflict copies among `heads`: the live heads other than the winner.
  public static func copyCount(_ heads: [HeadSummary]) -> Int {
    guard let winner = winner(heads) else { return 0 }
    return heads.filter { !$0.isDeleted && $0.dot != winner.dot }.count
  }

  /// The version vector of a new local revision of the memo: it has seen the winner and
  /// every tombstone head (an edit after a concurrent delete settles the delete), but not
  /// the other live heads, which stay conflict copies until resolved.
  public static func clockForLocalRevision(_ heads: [HeadSummary], resolvingAll: Bool) -> VersionVector {
    let winner = winner(heads)
    var clock = VersionVector()
    for head in heads where resolvingAll || head.isDeleted || head.dot == winner?.dot { clock.merge(head.clock) }
    return clock
  }
}

/// The mass-delete guard (docs/PROTOCOL.md, "Mass-delete guard"): deletes from one peer —
/// and edits that empty a memo that had a body — that would remove more than `percent` of
/// the receiver's live memos, and at least `minimum` of them, are held back until a person
/// decides. A device whose store was wiped must not empty every other device.
///
/// What it weighs: the removals of this sync plus those applied from the same peer without
/// asking within the window (24 h), against the live memos before this sync plus those
/// same removals (so nine deletes a sync, repeated, add up), never against a count the
/// peer's own batches could have raised.
public struct MassDeleteGuard: Equatable, Sendable {
  public var percent: Int
  public var minimum: Int

  public init(percent: Int = 50, minimum: Int = 10) {
    self.percent = percent
    self.minimum = minimum
  }

  /// Whether `removals` may be applied without asking, given the live memos before the sync
  /// and the removals from the same peer applied within the window.
  public func allows(removals: Int, liveBefore: Int, recentlyApplied: Int = 0) -> Bool {
    let total = removals.addingReportingOverflow(recentlyApplied)
    if total.overflow { return false }
    if total.partialValue < minimum { return true }
    let baseline = liveBefore.addingReportingOverflow(recentlyApplied)
    let removed = total.partialValue.multipliedReportingOverflow(by: 100)
    let allowed = baseline.partialValue.multipliedReportingOverflow(by: percent)
    guard !baseline.overflow, !removed.overflow, !allowed.overflow else { return false }
    return removed.partialValue <= allowed.partialValue
  }

  /// The removals applied from one peer within the window before `now`, from the ledger of
  /// `(time, count)` entries (entries in the future count too: a clock set back must not
  /// wipe the ledger).
  public static func recent(_ ledger: [(time: Int64, count: Int)], now: Int64, window: Int64 = SyncLimits.guardWindow)
    -> Int
  {
    let start = now.subtractingReportingOverflow(window)
    return ledger.reduce(0) { sum, entry in
      guard start.overflow || entry.time > start.partialValue else { return sum }
      let next = sum.addingReportingOverflow(Swift.max(0, entry.count))
      return next.overflow ? Int.max : next.partialValue
    }
  }
}
