/// What applying one incoming head did: what a receiver counts (applied, conflicts, new
/// memos, held removals) after the store wrote it.
public enum SyncApplyResult: Equatable, Sendable {
  case known
  case held
  /// `conflict`: it made a new conflict copy, or a delete lost to an edit; `live`: +1 when
  /// the memo became live (new, or brought back), -1 when it stopped being live, else 0.
  case stored(conflict: Bool, live: Int)
}

/// The merge decision for one head from a peer meeting a memo's heads here (`MemoHeads`),
/// apart from the rows it reads and writes, so every path is tested without a database:
/// a head a local one has seen is known (nothing to write); one that has seen local heads
/// replaces them; a concurrent one is added beside them (a conflict copy, at most 32 per
/// memo); and, while the mass-delete guard holds removals, a delete of a live memo or an
/// edit that empties one is held instead.
public enum RemoteMerge {
  /// What the store writes.
  public enum Step: Equatable, Sendable {
    /// A head here has seen it (or it is here): nothing to write.
    case known
    /// A removal the guard holds back for the peer (`sync_held`), nothing else written.
    case hold
    /// Store the head, remove the local heads with the dots in `removing` (it has seen
    /// them), and count `result`.
    case store(removing: [Dot], result: SyncApplyResult)
    /// The memo would get more conflict copies than any replica keeps.
    case refuse(SyncViolation)
  }

  /// The step for `incoming` over the memo's `heads`. `holding`: the guard holds removals
  /// (a sync with a guard); `bodyIsEmpty`: the incoming revision's body. `winnerHasBody`
  /// (whether the memo shown here has a body) costs a read of the memo, so it is asked
  /// only for a held-back candidate: a live revision with an empty body, while holding.
  public static func step(
    _ incoming: HeadSummary, bodyIsEmpty: Bool, over heads: [HeadSummary], memo: MemoID, holding: Bool,
    winnerHasBody: () throws -> Bool
  ) rethrows -> Step {
    guard case .add(let removing) = MemoHeads.merge(heads, incoming: incoming) else { return .known }
    if holding, try removes(incoming, bodyIsEmpty: bodyIsEmpty, over: heads, winnerHasBody: winnerHasBody) {
      return .hold
    }
    let merged = heads.filter { !removing.contains($0.dot) } + [incoming]
    let copies = MemoHeads.copyCount(merged)
    guard copies <= SyncLimits.maximumConflictCopies || copies <= MemoHeads.copyCount(heads) else {
      return .refuse(SyncViolation(.tooManyCopies, "memo \(memo.short) would get \(copies) conflict copies"))
    }
    let wasLive = MemoHeads.winner(heads).map { !$0.isDeleted } ?? false
    let isLive = MemoHeads.winner(merged).map { !$0.isDeleted } ?? false
    return .store(
      removing: removing,
      result: .stored(
        conflict: conflictCount(merged) > conflictCount(heads), live: (isLive ? 1 : 0) - (wasLive ? 1 : 0)))
  }

  /// The step for a sealed record a blind relay keeps (docs/PRIVACY.md, "The blind
  /// relay"), by the same head rules over the clocks of the records held for its memo: known
  /// when one has seen it, else stored over those it has seen, unless the memo would then
  /// hold `maximumHeads` concurrent records or more. A relay never holds removals (it
  /// cannot read them); a memo new here counts as one added (the per-peer quota).
  public static func relayedStep(
    _ clock: VersionVector, over heads: [(dot: Dot, clock: VersionVector)], memo: MemoID, maximumHeads: Int
  ) -> Step {
    if heads.contains(where: { $0.clock.covers(clock) }) { return .known }
    let removing = heads.filter { clock.covers($0.clock) }.map(\.dot)
    guard heads.count - removing.count < maximumHeads else {
      return .refuse(
        SyncViolation(.tooManyCopies, "memo \(memo.short) would get more than \(maximumHeads) relayed heads"))
    }
    return .store(
      removing: removing, result: .stored(conflict: heads.count - removing.count > 0, live: heads.isEmpty ? 1 : 0))
  }

  /// Whether the guard holds `incoming`: a delete that would turn a live memo into a
  /// deleted one, or an edit with an empty body that would replace a memo's body.
  private static func removes(
    _ incoming: HeadSummary, bodyIsEmpty: Bool, over heads: [HeadSummary], winnerHasBody: () throws -> Bool
  ) rethrows -> Bool {
    if incoming.isDeleted { return MemoHeads.deletes(heads, incoming: incoming) }
    guard bodyIsEmpty, !heads.isEmpty else { return false }
    return MemoHeads.empties(heads, incoming: incoming, winnerHasBody: try winnerHasBody())
  }

  /// Conflict copies, plus one for a memo that survived a concurrent delete.
  public static func conflictCount(_ heads: [HeadSummary]) -> Int {
    guard let winner = MemoHeads.winner(heads) else { return 0 }
    let overruledDelete = !winner.isDeleted && heads.contains(where: \.isDeleted) ? 1 : 0
    return MemoHeads.copyCount(heads) + overruledDelete
  }
}
