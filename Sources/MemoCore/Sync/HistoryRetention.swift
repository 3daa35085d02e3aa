/// Which superseded revisions of a memo a device keeps (docs/PROTOCOL.md, "History is shared
/// fairly"; issue 38). Oldest-first pruning let one member of a shared notebook evict every
/// other author's history of a memo by pushing more edits than the per-memo limit: 120
/// signed edits left 101 revisions, none of them the owner's. The rule here keeps, of a
/// memo's history ordered by revision number then by the order this device kept them (`id`):
///
/// 1. **own**: the newest `limit` revisions signed by this device;
/// 2. **boundaries**: the newest `limit` of the revisions whose next one (in that order) is
///    by another author — the text each author left before someone else changed it;
/// 3. **shares**: `limit` revisions picked round by round, each author's newest first: every
///    author's newest revision, then every author's second newest, and so on (within a
///    round, the newer revision first). An author with few revisions keeps all of them; one
///    that floods keeps what is left.
///
/// Everything else goes. Each set holds at most `limit`, so a memo keeps at most three times
/// `limit` whatever any number of authors do — alternating authors make every revision a
/// boundary, and still only the newest `limit` of those count. With one author it is the
/// newest `limit`, as before. The order is total (revision, then id), so every run over the
/// same entries keeps the same ones. Pure: the store reads the entries and deletes the rest.
public enum HistoryRetention {
  /// One superseded revision of a memo, as the rule sees it.
  public struct Entry<Author: Hashable & Sendable>: Hashable, Sendable {
    /// Where it is kept (unique; larger is kept later).
    public var id: Int64
    /// Its revision number.
    public var revision: Int64
    /// Who signed it; nil: unknown (unsigned, from before sync version 3). Every nil is
    /// one author.
    public var author: Author?

    public init(id: Int64, revision: Int64, author: Author?) {
      self.id = id
      self.revision = revision
      self.author = author
    }
  }

  /// The ids of `entries` the rule keeps, for a per-memo `limit` (below 0 counts as 0) on
  /// the device whose revisions are signed by `own` (nil: no author is this device's).
  public static func kept<Author>(_ entries: [Entry<Author>], limit: Int, own: Author?) -> Set<Int64> {
    let limit = max(limit, 0)
    guard entries.count > limit else { return Set(entries.map(\.id)) }
    let ordered = entries.sorted { ($0.revision, $0.id) < ($1.revision, $1.id) }
    var keep = Set<Int64>()
    if let own {
      keep.formUnion(ordered.reversed().lazy.filter { $0.author == own }.prefix(limit).map(\.id))
    }
    let boundaries = zip(ordered, ordered.dropFirst()).filter { $0.author != $1.author }.map(\.0.id)
    keep.formUnion(boundaries.suffix(limit))
    keep.formUnion(shares(ordered, limit: limit))
    return keep
  }

  /// The ids of `entries` the rule drops, smallest first.
  public static func dropped<Author>(_ entries: [Entry<Author>], limit: Int, own: Author?) -> [Int64] {
    let keep = kept(entries, limit: limit, own: own)
    return entries.map(\.id).filter { !keep.contains($0) }.sorted()
  }

  /// `limit` ids of `ordered` (oldest first) shared round by round among the authors.
  private static func shares<Author>(_ ordered: [Entry<Author>], limit: Int) -> [Int64] {
    var seen: [Author?: Int] = [:]
    var ranked: [(round: Int, position: Int, id: Int64)] = []
    for (position, entry) in ordered.enumerated().reversed() {
      let round = seen[entry.author, default: 0]
      seen[entry.author] = round + 1
      ranked.append((round, position, entry.id))
    }
    ranked.sort { ($0.round, -$0.position) < ($1.round, -$1.position) }
    return ranked.prefix(limit).map(\.id)
  }

  /// The author whose history goes first while a device keeps more bytes than its total
  /// allows: the one holding the most (ties: the smallest key). A member filling the total
  /// with its own revisions so pays with them, not with the history of others: every
  /// author keeps an equal share of the total, or all it has when that is less. Nil when
  /// no author holds any bytes.
  public static func heaviest<Author: Comparable & Hashable>(_ holdings: [Author: Int64]) -> Author? {
    holdings.filter { $0.value > 0 }.min { left, right in
      left.value != right.value ? left.value > right.value : left.key < right.key
    }?.key
  }
}
