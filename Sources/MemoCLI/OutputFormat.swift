import Foundation
import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// How memos look on stdout. The JSON shapes are a stable, documented interface
/// (docs/CLI.md): fields are only ever added, and `schema` changes if one must change.
enum OutputFormat {
  static let jsonSchema = JSONOutput.schema

  /// `2026-11-29 20:15` in local time, for people.
  static func localTime(_ timestamp: Timestamp) -> String {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    return
      "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min))"
  }

  /// `2026-11-29T20:15:03.123Z`, for scripts.
  static func isoTime(_ timestamp: Timestamp) -> String {
    var seconds = time_t(timestamp / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    let millis = Int(timestamp % 1000)
    let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
  }

  private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

  /// One line of `list` / `search`: short id, time, private mark, title, tags, and the
  /// notebook when it is not the default one.
  static func line(_ memo: MemoSummary, names: Names? = nil) -> String {
    var text = memo.id.short + "  " + localTime(memo.updated) + "  " + (memo.isPrivate ? "● " : "") + title(memo.title)
    if !memo.tags.isEmpty { text += "  " + memo.tags.map { "#" + $0 }.joined(separator: " ") }
    return text + notebookSuffix(memo.notebook, names)
  }

  static func notebookSuffix(_ notebook: NotebookID?, _ names: Names?) -> String {
    guard let names, names.isOther(notebook), let name = names.notebook(notebook) else { return "" }
    return "  (in \(name.terminalSafe))"
  }

  /// One line of `list` in any lock state: a field that could not be read is replaced by a
  /// placeholder that says why, never left out silently.
  static func line(_ memo: MemoListing, names: Names? = nil) -> String {
    var text = memo.id.short + "  " + localTime(memo.updated) + "  " + (memo.isPrivate ? "● " : "")
    text += memo.title.map(title) ?? "(\(memo.isPrivate ? "private, " : "")locked)"
    if let tags = memo.tags, !tags.isEmpty { text += "  " + tags.map { "#" + $0 }.joined(separator: " ") }
    if let original = memo.conflictOf {
      text += "  [conflict copy of \(original.short)]"
    } else if memo.hasConflict {
      text += "  [conflict: see `memo-peer conflicts`]"
    }
    return text + notebookSuffix(memo.notebook, names)
  }

  /// A title in a listing: it may have come from a peer (sync, delivery).
  static func title(_ text: String) -> String { TerminalText.title(text) }

  /// A line of a memo printed to a terminal: every character the terminal would act on is
  /// escaped, but tabs, which it only draws as space, are kept; no length cap (a body's size
  /// is limited already).
  static func terminalLine(_ line: String) -> String {
    line.split(separator: "\t", omittingEmptySubsequences: false)
      .map { TerminalText.render(String($0), limit: Int.max).text }
      .joined(separator: "\t")
  }

  /// What `show` displays: the title, a line of facts, the tags, a blank line, the body.
  static func document(_ memo: Memo, names: Names? = nil) -> [String] {
    var lines = [memo.title]
    var meta = "id \(memo.id)  ·  updated \(localTime(memo.updated))  ·  revision \(memo.revision)"
    if memo.isPrivate { meta += "  ·  private" }
    if let name = names?.notebook(memo.notebook) { meta += "  ·  notebook \(name.terminalSafe)" }
    lines.append(meta)
    if !memo.tags.isEmpty { lines.append(memo.tags.map { "#" + $0 }.joined(separator: " ")) }
    lines.append("")
    var body = memo.body
    if body.hasSuffix("\n") { body.removeLast() }
    if !body.isEmpty { lines += body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    return lines
  }

  struct SummaryJSON: Encodable {
    let id: String
    let title: String
    let tags: [String]
    let created: String
    let updated: String
    let `private`: Bool
    let revision: Int64
    let body: String?
    let pinned: Bool?
    /// Fields withheld because the node is locked (`{"title": "locked", "tags": "locked"}`);
    /// their values are then empty. Absent when nothing is withheld.
    let redacted: [String: String]?
    /// On a conflict copy: the id of the memo it is a concurrent version of.
    let conflictOf: String?
    /// On `list`: the memo has conflict copies or an overruled delete.
    let conflict: Bool?
    /// The notebook's name here (null when this device has no name for it) and its id.
    let notebook: String?
    let notebookID: String?

    enum CodingKeys: String, CodingKey {
      case id, title, tags, created, updated, `private`, revision, body, pinned, redacted, conflict, notebook
      case conflictOf = "conflict_of"
      case notebookID = "notebook_id"
    }

    init(_ memo: MemoSummary, body: String? = nil, conflictOf: MemoID? = nil, names: Names? = nil) {
      id = memo.id.rawValue
      title = memo.title
      tags = memo.tags
      created = OutputFormat.isoTime(memo.created)
      updated = OutputFormat.isoTime(memo.updated)
      self.private = memo.isPrivate
      revision = memo.revision
      self.body = body
      pinned = nil
      redacted = nil
      self.conflictOf = conflictOf?.rawValue
      conflict = nil
      notebook = names?.notebook(memo.notebook)
      notebookID = memo.notebook?.rawValue
    }

    init(_ memo: MemoListing, names: Names? = nil) {
      id = memo.id.rawValue
      title = memo.title ?? ""
      tags = memo.tags ?? []
      created = OutputFormat.isoTime(memo.created)
      updated = OutputFormat.isoTime(memo.updated)
      self.private = memo.isPrivate
      revision = memo.revision
      body = nil
      pinned = memo.isPinned
      var withheld: [String: String] = [:]
      if memo.title == nil { withheld["title"] = RedactionReason.locked.rawValue }
      if memo.tags == nil { withheld["tags"] = RedactionReason.locked.rawValue }
      redacted = withheld.isEmpty ? nil : withheld
      conflictOf = memo.conflictOf?.rawValue
      conflict = memo.hasConflict
      notebook = names?.notebook(memo.notebook)
      notebookID = memo.notebook?.rawValue
    }
  }

  struct MemoListJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let memos: [SummaryJSON]
    /// Present on `list`: whether the node was locked (and so some fields are withheld).
    var locked: Bool? = nil
    /// Notebooks this device relays and cannot read: counts only (absent when none).
    var relayed: [RelayedJSON]? = nil
  }

  struct MemoJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let memo: SummaryJSON
  }

  /// The error shape, shared with the web API (MemoCore).
  typealias ErrorJSON = MemoCore.ErrorJSON

  static func json(_ value: some Encodable) -> [UInt8] { JSONOutput.encode(value) }
}
