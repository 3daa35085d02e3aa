import MemoCore
import MemoMarkdown
import MemoNode
import MemoProtocol
import MemoStore

/// One line of a line diff: kept, removed (only in the older text) or added (only in the
/// newer).
public struct DiffLine: Sendable, Equatable {
  public enum Kind: String, Sendable { case same, removed, added }
  public var kind: Kind
  public var text: String

  public init(_ kind: Kind, _ text: String) {
    self.kind = kind
    self.text = text
  }
}

/// A line diff by the longest common subsequence of lines (with the common head and tail
/// taken off first, so an edit in a long memo costs little). The table has a cell per pair
/// of changed lines, old by new: a body of 64 KiB can have 32,768 lines, so two such
/// revisions (any device can write them) would need 4 GiB. Beyond `maximumCells` the
/// changed middle is shown removed and then added, whole: still a true diff, only not the
/// shortest.
public enum LineDiff {
  /// The most cells of the table one diff fills (4 Mi: 16 MiB).
  public static let maximumCells = 1 << 22

  public static func lines(_ text: String) -> [String] {
    var text = text
    if text.hasSuffix("\n") { text.removeLast() }
    return text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
  }

  public static func diff(_ old: String, _ new: String) -> [DiffLine] { diff(lines: lines(old), lines(new)) }

  public static func diff(lines old: [String], _ new: [String]) -> [DiffLine] {
    var head = 0
    while head < old.count, head < new.count, old[head] == new[head] { head += 1 }
    var tail = 0
    while tail < old.count - head, tail < new.count - head, old[old.count - 1 - tail] == new[new.count - 1 - tail] {
      tail += 1
    }
    let a = Array(old[head..<(old.count - tail)])
    let b = Array(new[head..<(new.count - tail)])
    var result = old[..<head].map { DiffLine(.same, $0) }
    let tailLines = old[(old.count - tail)...].map { DiffLine(.same, $0) }
    guard (a.count + 1) * (b.count + 1) <= maximumCells else {
      return result + a.map { DiffLine(.removed, $0) } + b.map { DiffLine(.added, $0) } + tailLines
    }
    // lengths[i][j]: the longest common subsequence of a[i...] and b[j...].
    var lengths = [[Int32]](repeating: [Int32](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in stride(from: a.count - 1, through: 0, by: -1) {
      for j in stride(from: b.count - 1, through: 0, by: -1) {
        lengths[i][j] = a[i] == b[j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
      }
    }
    var i = 0
    var j = 0
    while i < a.count || j < b.count {
      if i < a.count, j < b.count, a[i] == b[j] {
        result.append(DiffLine(.same, a[i]))
        i += 1
        j += 1
      } else if i < a.count, j == b.count || lengths[i + 1][j] >= lengths[i][j + 1] {
        // Removed lines before the added ones that replace them, as diff(1) shows them.
        result.append(DiffLine(.removed, a[i]))
        i += 1
      } else {
        result.append(DiffLine(.added, b[j]))
        j += 1
      }
    }
    return result + tailLines
  }
}

/// `history`: the revisions of one memo this device kept, oldest first.
public struct MemoHistory: Sendable {
  public var memo: MemoID
  public var revisions: [MemoRevision]
}

/// `history --from`: what a relay sent and what of it this device kept, then the history.
public struct HistoryFetchReport: Sendable {
  /// The device asked.
  public var peer: TrustedPeer
  /// Sealed revisions it sent.
  public var received: Int
  public var fetched: FetchedHistory
  /// The memo's history here afterwards.
  public var history: MemoHistory
}

/// `diff`: two revisions of a memo and the line diff of their bodies.
public struct MemoDiff: Sendable {
  public var memo: MemoID
  public var from: MemoRevision
  public var to: MemoRevision
  public var lines: [DiffLine]
}

/// `undo --device`: what would be (or was) undone.
public struct UndoReport: Sendable {
  public var device: DeviceID
  public var since: Timestamp
  public var steps: [UndoStep]
  /// Whether the steps were carried out (`--yes`), or only listed.
  public var applied: Bool
}

/// History, restore, the trash and undo (docs/CLI.md, "History").
public struct HistoryUseCases {
  let app: App

  /// The revisions of a memo (deleted ones too) this device kept.
  public func history(_ reference: String) throws -> MemoHistory {
    try app.requireUnlocked()
    let store = try app.store()
    let id = try store.resolveAny(reference)
    return MemoHistory(memo: id, revisions: try store.history(of: id))
  }

  /// Asks the trusted device `peer` (a relay of the memo's notebook) for the sealed
  /// revisions of the memo it kept, and keeps as history those that pass every check a
  /// synced record passes and that the current revision here supersedes. Connects as
  /// `ping` does (consent, waiting up to `timeout` seconds and telling `onState`).
  public func fetch(
    _ reference: String, from peer: String, timeout: Double, prompt: any Prompt,
    onState: @escaping @Sendable (String) -> Void = { _ in }
  ) throws -> HistoryFetchReport {
    try app.requireUnlocked()
    let store = try app.store()
    let id = try store.resolveAny(reference)
    guard let notebook = try store.history(of: id).last?.memo.notebook else {
      throw MemoPeerError(
        .notFound, "memo \(id.short) is in no notebook here, so no relay keeps its history",
        hint: "`memo-peer history \(id.short)` lists what this device kept")
    }
    let (device, answer) = try app.network.withLink(to: peer, timeout: timeout, prompt: prompt, onState: onState) {
      trusted, link, watch in
      do throws(TransportError) {
        // The answer's own time, from the connection on: what it took to find PEER does
        // not shorten it.
        let deadline = Deadline.after(seconds: max(timeout, 10))
        return (trusted, try PeerHistoryFetch.run(over: link, memo: id, notebook: notebook, before: deadline))
      } catch {
        if watch.fired { throw LockWatch.lockedDuring("the history fetch") }
        throw MemoPeerError(
          .connection, "\(trusted.displayName) did not send the history of memo \(id.short): \(error.detail)",
          hint: "ask a device that relays the memo's notebook (`memo-peer notebook show` names them); "
            + "one of an older version does not serve history", diagnostics: error.description)
      }
    }
    let fetched = try store.takeFetchedHistory(
      answer.records, bindings: answer.bindings, of: id, in: notebook, from: device.deviceID, now: app.now)
    return HistoryFetchReport(
      peer: device, received: answer.records.count, fetched: fetched,
      history: MemoHistory(memo: id, revisions: try store.history(of: id)))
  }

  /// Revision `number` of a memo.
  public func revision(_ reference: String, _ number: Int64) throws -> MemoRevision {
    try app.requireUnlocked()
    let store = try app.store()
    return try store.revision(number, of: try store.resolveAny(reference))
  }

  /// The diff from revision `from` (default: the one before `to`) to `to` (default: the
  /// current one).
  public func diff(_ reference: String, from: Int64? = nil, to: Int64? = nil) throws -> MemoDiff {
    let history = try self.history(reference)
    let store = try app.store()
    let newer =
      try to.map { try store.revision($0, of: history.memo) } ?? history.revisions[history.revisions.count - 1]
    let older: MemoRevision
    if let from {
      older = try store.revision(from, of: history.memo)
    } else {
      guard let index = history.revisions.lastIndex(of: newer), index > 0 else {
        throw MemoPeerError(
          .notFound, "memo \(history.memo.short) has no revision before \(newer.memo.revision) on this device",
          hint: "`memo-peer history \(history.memo.short)` lists the revisions kept here")
      }
      older = history.revisions[index - 1]
    }
    return MemoDiff(
      memo: history.memo, from: older, to: newer, lines: LineDiff.diff(older.memo.body, newer.memo.body))
  }

  /// The diff from a memo's current revision (A) to one of its conflict copies' (B), as
  /// the page's conflict view shows the two sides. A `copy` that is not a conflict copy of
  /// this memo is not found.
  public func diff(_ reference: String, copy: String) throws -> MemoDiff {
    try app.requireUnlocked()
    let store = try app.store()
    let memo = try store.memo(try store.resolve(reference))
    let other = try store.memo(try store.resolve(copy))
    guard memo.conflictOf == nil, other.conflictOf == memo.id else {
      throw MemoPeerError(
        .notFound, "memo \(other.id.short) is not a conflict copy of memo \(memo.id.short)",
        hint: "`memo-peer conflicts` lists each memo's copies")
    }
    return MemoDiff(
      memo: memo.id, from: MemoRevision(current: memo), to: MemoRevision(current: other),
      lines: LineDiff.diff(memo.body, other.body))
  }

  /// Makes revision `number`'s content the memo's again, as a new revision.
  public func restore(_ reference: String, revision number: Int64) throws -> Memo {
    try app.requireUnlocked()
    let store = try app.store()
    return try store.restore(try store.resolveAny(reference), revision: number, now: app.now)
  }

  /// The trash, newest first.
  public func trash() throws -> [TrashEntry] {
    try app.requireUnlocked()
    return try app.store().trash(now: app.now)
  }

  /// Brings a memo back from the trash.
  public func restoreFromTrash(_ reference: String) throws -> Memo {
    try app.requireUnlocked()
    let store = try app.store()
    return try store.restoreFromTrash(try store.resolveAny(reference), now: app.now)
  }

  /// Empties the trash; `confirm` gets how many memos would go and says whether to go on
  /// (nil: no question). Returns how many went.
  public func emptyTrash(confirm: ((Int) throws -> Bool)? = nil) throws -> Int {
    let entries = try trash().filter { $0.heldFrom == nil }
    if let confirm, !entries.isEmpty {
      guard try confirm(entries.count) else { throw MemoPeerError(.cancelled, "the trash was not emptied") }
    }
    return try app.store().emptyTrash()
  }

  /// Deletes a memo with its history and trash entry here, and signs the purge that every
  /// member and relay of its notebook applies at its next sync. Returns the memo and its
  /// notebook (nil: in none, so nothing is sent).
  public func purge(_ reference: String, confirm: ((MemoID) throws -> Bool)? = nil) throws
    -> (memo: MemoID, notebook: NotebookID?)
  {
    try app.requireUnlocked()
    let store = try app.store()
    let id = try store.resolveAny(reference)
    try store.checkChangeable(id)
    if let confirm {
      guard try confirm(id) else { throw MemoPeerError(.cancelled, "nothing was purged") }
    }
    return (id, try store.purge(id, now: app.now))
  }

  /// The memos whose latest revisions since `since` are by the trusted device `peer` (a
  /// name or device-ID prefix, or a full device ID); with `apply`, each restored to the
  /// revision before them (or deleted, when `peer` made it), as new revisions.
  public func undo(device peer: String, since text: String, apply: Bool) throws -> UndoReport {
    try app.requireUnlocked()
    let device: DeviceID
    if let id = DeviceID(peer) {
      device = id
    } else {
      device = try app.trustStore.load().find(peer).deviceID
    }
    let since = try Self.time(text, now: app.now)
    let store = try app.store()
    let plan = try store.undoPlan(device: device, since: since)
    let steps = apply ? try store.undo(plan, now: app.now) + plan.filter { $0.blocked != nil } : plan
    return UndoReport(device: device, since: since, steps: steps, applied: apply)
  }

  /// A time as `--since` takes it: ISO 8601 (`2026-12-01T20:00:00Z`, or a date: midnight
  /// UTC), or a time ago (`90m`, `12h`, `3d`).
  public static func time(_ text: String, now: Timestamp) throws -> Timestamp {
    if let unit = text.last, let count = Int64(text.dropLast()), count >= 0, count <= 36_500 * 24 * 60 {
      let minute: Int64 = 60_000
      switch unit {
      case "m": return now - count * minute
      case "h": return now - count * 60 * minute
      case "d": return now - count * 24 * 60 * minute
      default: break
      }
    }
    guard let time = MarkdownMemo.parseTime(text) else {
      throw MemoPeerError(
        .invalidInput, "\(TerminalText.echo(text)) is not a time",
        hint: "give ISO 8601 (2026-12-01T20:00:00Z, or 2026-12-01) or a time ago (90m, 12h, 3d)")
    }
    return time
  }
}

extension App {
  public var history: HistoryUseCases { HistoryUseCases(app: self) }
}
