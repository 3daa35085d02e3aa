import MemoApp
import MemoCore
import MemoStore

/// How notebooks look on stdout (docs/CLI.md, "JSON output").
extension OutputFormat {
  /// `notebook 3f2a9c1d…: 812 sealed revisions, relay for laptop-b, laptop-c`.
  static func relayedLine(_ summary: NotebookSummary, names: Names) -> String {
    let count = summary.sealedRevisions
    var text = "\(summary.notebook.displayName): \(count) sealed revision\(count == 1 ? "" : "s")"
    // Sorted: the same line on every run, whatever order the members joined in.
    let members = summary.members.map { names.device($0.device) }.sorted()
    if !members.isEmpty { text += ", relay for " + members.joined(separator: ", ") }
    return text
  }

  /// One line of `notebook list`.
  static func notebookLine(_ summary: NotebookSummary, names: Names) -> String {
    guard summary.notebook.role == .member else { return relayedLine(summary, names: names) }
    var text = summary.notebook.displayName
    if summary.notebook.isDefault { text += " (default)" }
    text += ": \(summary.memos) memo\(summary.memos == 1 ? "" : "s")"
    let shared = summary.members.map { "\(names.device($0.device)) (\($0.role.rawValue))" }
    text += shared.isEmpty ? ", not shared" : ", shared with " + shared.joined(separator: ", ")
    return text
  }
}
