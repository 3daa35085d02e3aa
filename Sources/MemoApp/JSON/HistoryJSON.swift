import MemoCore
import MemoPresentation
import MemoStore

// The `--json` shapes of history, the trash and undo (docs/CLI.md, "History"), which the
// web API answers with too. Fields are only ever added.

/// One revision in `history --json`: its number, time, author, size and first line (no
/// body), and whether it is the current one or a delete.
public struct RevisionJSON: Encodable, Sendable {
  public let revision: Int64
  public let updated: String
  /// When this device replaced it (null: the current revision).
  public let superseded: String?
  public let current: Bool
  public let deleted: Bool
  /// The body's size in bytes (UTF-8).
  public let size: Int
  public let title: String
  public let firstLine: String
  public let author: AuthorJSON?
  /// The revision's dot: the replica that made it and its sequence there.
  public let dot: String

  enum CodingKeys: String, CodingKey {
    case revision, updated, superseded, current, deleted, size, title, author, dot
    case firstLine = "first_line"
  }

  public init(_ entry: MemoRevision, names: Names?) {
    revision = entry.memo.revision
    updated = TimeText.iso(entry.memo.updated)
    superseded = entry.superseded.map(TimeText.iso)
    current = entry.isCurrent
    deleted = entry.memo.isDeleted
    size = entry.memo.body.utf8.count
    title = entry.memo.title
    firstLine = HistoryText.firstLine(entry.memo)
    author = AuthorJSON(entry.author, names: names)
    dot = entry.memo.dot.map { "\($0.origin.rawValue):\($0.seq)" } ?? ""
  }
}

/// `history --json`, `GET /api/memos/ID/history`; with `--from`, what the relay sent.
public struct HistoryJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memo: String
  public let revisions: [RevisionJSON]
  public let fetched: FetchedJSON?

  /// `history --from PEER --json`: what the relay sent and what became of it.
  public struct FetchedJSON: Encodable, Sendable {
    public let from: AuthorJSON?
    public let received: Int
    public let added: Int
    public let known: Int
    public let notSuperseded: Int
    public let missingKey: Int
    public let keptAside: Int

    enum CodingKeys: String, CodingKey {
      case from, received, added, known
      case notSuperseded = "not_superseded"
      case missingKey = "missing_key"
      case keptAside = "kept_aside"
    }
  }

  public init(_ history: MemoHistory, names: Names?) {
    memo = history.memo.rawValue
    revisions = history.revisions.map { RevisionJSON($0, names: names) }
    fetched = nil
  }

  public init(_ report: HistoryFetchReport, names: Names?) {
    memo = report.history.memo.rawValue
    revisions = report.history.revisions.map { RevisionJSON($0, names: names) }
    let result = report.fetched
    fetched = FetchedJSON(
      from: AuthorJSON(report.peer.deviceID, names: names), received: report.received, added: result.added,
      known: result.known, notSuperseded: result.notSuperseded, missingKey: result.missingKey,
      keptAside: result.keptAside)
  }
}

/// `show --revision N --json`: the memo's shape (with its body) as it was in revision N,
/// plus that revision's facts.
public struct RevisionShownJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memo: MemoSummaryJSON
  public let revision: RevisionJSON

  public init(_ entry: MemoRevision, names: Names?) {
    var summary = entry.memo.summary
    summary.author = entry.author
    memo = MemoSummaryJSON(summary, body: entry.memo.body, names: names)
    revision = RevisionJSON(entry, names: names)
  }
}

/// `diff --json`, `GET /api/memos/ID/diff`: the two revisions and the lines, each
/// `{"op": "same"|"removed"|"added", "text": …}`.
public struct DiffJSON: Encodable, Sendable {
  public struct Line: Encodable, Sendable {
    public let op: String
    public let text: String
  }
  public let schema = JSONOutput.schema
  public let memo: String
  public let from: RevisionJSON
  public let to: RevisionJSON
  public let lines: [Line]

  public init(_ diff: MemoDiff, names: Names?) {
    memo = diff.memo.rawValue
    from = RevisionJSON(diff.from, names: names)
    to = RevisionJSON(diff.to, names: names)
    lines = diff.lines.map { Line(op: $0.kind.rawValue, text: $0.text) }
  }
}

/// `trash --json`, `GET /api/trash`.
public struct TrashJSON: Encodable, Sendable {
  public struct Entry: Encodable, Sendable {
    public let memo: String
    /// The title before the delete (empty when unknown).
    public let title: String
    public let deleted: String
    /// Who signed the delete (null: unsigned, or a held delete).
    public let deletedBy: AuthorJSON?
    /// For a delete the mass-delete guard holds: the peer it came from (the memo is still
    /// here); null for a delete that took effect.
    public let heldFrom: AuthorJSON?
    public let notebook: String?
    public let notebookID: String?

    enum CodingKeys: String, CodingKey {
      case memo, title, deleted, notebook
      case deletedBy = "deleted_by"
      case heldFrom = "held_from"
      case notebookID = "notebook_id"
    }

    init(_ entry: TrashEntry, names: Names?) {
      memo = entry.memo.rawValue
      title = entry.title ?? ""
      deleted = TimeText.iso(entry.deleted)
      deletedBy = AuthorJSON(entry.author, names: names)
      heldFrom = AuthorJSON(entry.heldFrom, names: names)
      notebook = names?.notebook(entry.notebook)
      notebookID = entry.notebook?.rawValue
    }
  }
  public let schema = JSONOutput.schema
  public let trash: [Entry]

  public init(_ entries: [TrashEntry], names: Names?) { trash = entries.map { Entry($0, names: names) } }
}

/// `trash empty --json`.
public struct TrashEmptiedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let emptied: Int

  public init(emptied: Int) { self.emptied = emptied }
}

/// `delete --purge --json`.
public struct PurgedMemoJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let purged: String
  /// The notebook whose members and relays get the signed purge (absent: none).
  public let notebook: String?

  public init(purged: MemoID, notebook: NotebookID?) {
    self.purged = purged.rawValue
    self.notebook = notebook?.rawValue
  }
}

/// `undo --device --json`: each memo, the revisions undone and what comes back.
public struct UndoJSON: Encodable, Sendable {
  public struct Step: Encodable, Sendable {
    public let memo: String
    public let title: String
    public let undone: [RevisionJSON]
    /// The revision whose content comes back (null: the memo is deleted).
    public let restores: RevisionJSON?
    /// Why it was left alone (null: it is, or was, undone).
    public let blocked: String?
  }
  public let schema = JSONOutput.schema
  public let device: AuthorJSON?
  public let since: String
  /// False: a dry run (nothing changed); true: the steps not blocked were carried out.
  public let applied: Bool
  public let memos: [Step]

  public init(_ report: UndoReport, names: Names?) {
    device = AuthorJSON(report.device, names: names)
    since = TimeText.iso(report.since)
    applied = report.applied
    memos = report.steps.map { step in
      Step(
        memo: step.memo.rawValue, title: step.title, undone: step.undone.map { RevisionJSON($0, names: names) },
        restores: step.target.map { RevisionJSON($0, names: names) }, blocked: step.blocked)
    }
  }
}

/// Texts shared by the CLI and the JSON shapes.
public enum HistoryText {
  /// A revision's first line: its body's first non-empty line (the title for an empty
  /// body), `(deleted)` for a delete. Not escaped: the CLI escapes it for a terminal.
  public static func firstLine(_ memo: Memo) -> String {
    if memo.isDeleted { return "(deleted)" }
    let line = memo.body.split(separator: "\n").map(String.init).first { !$0.trimmingWhitespace.isEmpty }
    return line ?? memo.title
  }
}
