import MemoStore

/// What a change of the store asks of `serve`'s live links, decided from the store's marks
/// before and after a wake (`SyncMarks`), apart from the I/O that reads them. Both kinds
/// of change make every link sync once (the link's sync both sends and asks), but they are
/// told apart so that the daemon can say why it synced, and so that a change of membership
/// alone is never mistaken for progress: an accepted invitation stores no revision, and
/// its notebook arrives only if the link asks for it (its cursor there is nil, so the peer
/// sends the notebook whole).
enum LiveChange: Equatable, Sendable {
  /// Only progress was written (cursors, `last_synced`), or nothing: no sync is owed.
  case nothing
  /// A revision was stored here: the links send it.
  case push
  /// What this device may read changed (an accept, a share or unshare, a key generation,
  /// made here or arriving), and no revision with it: the links ask for what is newly
  /// readable.
  case catchUp

  /// The change from `seen` (nil: the daemon's first look, which owes a sync for what
  /// changed while it was not running) to `now`.
  static func between(_ seen: SyncMarks?, _ now: SyncMarks) -> LiveChange {
    guard let seen else { return .push }
    if seen.feed != now.feed { return .push }
    return seen.membership == now.membership ? .nothing : .catchUp
  }

  /// Whether the links owe a sync.
  var owesSync: Bool { self != .nothing }
}
