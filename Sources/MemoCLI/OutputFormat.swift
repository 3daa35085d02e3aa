import FoundationEssentials
import MemoApp
import MemoCore
import MemoPresentation

/// How memos look on stdout. The JSON shapes are a stable, documented interface
/// (docs/CLI.md): fields are only ever added, and `schema` changes if one must change.
enum OutputFormat {
  static let jsonSchema = JSONOutput.schema

  /// `2026-11-29 20:15` in local time, for people.
  static func localTime(_ timestamp: Timestamp) -> String { TimeText.local(timestamp) }

  /// `2026-11-29T20:15:03.123Z`, for scripts.
  static func isoTime(_ timestamp: Timestamp) -> String { TimeText.iso(timestamp) }

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
      text += "  [conflict copy of \(original.short), by \(names?.author(memo.author) ?? Names.unsigned)]"
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
  static func document(_ memo: Memo, names: Names? = nil, author: DeviceID? = nil) -> [String] {
    var lines = [memo.title]
    var meta = "id \(memo.id)  ·  updated \(localTime(memo.updated))  ·  revision \(memo.revision)"
    if memo.isPrivate { meta += "  ·  private" }
    if let name = names?.notebook(memo.notebook) { meta += "  ·  notebook \(name.terminalSafe)" }
    lines.append(meta)
    lines.append(authorLine(author ?? memo.record?.author, updated: memo.updated, names: names))
    if !memo.tags.isEmpty { lines.append(memo.tags.map { "#" + $0 }.joined(separator: " ")) }
    lines.append("")
    var body = memo.body
    if body.hasSuffix("\n") { body.removeLast() }
    if !body.isEmpty { lines += body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    return lines
  }

  /// Who made a revision and when: `edited on laptop-b · 2026-12-01 20:08` (the name from
  /// the trust store, escaped; `this device` for this one's), or
  /// `unsigned (before version 3) · …` for a revision from before signing.
  static func authorLine(_ author: DeviceID?, updated: Timestamp, names: Names?) -> String {
    let who = names?.author(author) ?? (author.map { $0.short + "…" } ?? Names.unsigned)
    return (author == nil ? who : "edited on " + who) + " · " + localTime(updated)
  }

  /// The error shape, shared with the web API (MemoPresentation).
  typealias ErrorJSON = MemoPresentation.ErrorJSON

  static func json(_ value: some Encodable) -> [UInt8] { JSONOutput.encode(value) }
}
