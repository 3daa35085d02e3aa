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

  /// One line of `notebook invitations`: `family (member): from server, shared by laptop-b,
  /// 3 devices · 2026-12-05 10:12` (the name only when this device can open it already).
  static func invitationLine(_ invitation: NotebookInvitation, names: Names) -> String {
    var text = "\(invitation.displayName) (\(invitation.role.rawValue)): from \(names.device(invitation.peer))"
    if let inviter = invitation.inviter, inviter != invitation.peer { text += ", shared by \(names.device(inviter))" }
    text += ", \(invitation.members) device\(invitation.members == 1 ? "" : "s") · \(localTime(invitation.received))"
    if invitation.state == .declined { text += "  [declined]" }
    return text + "\n  accept with `memo-peer notebook accept \(String(invitation.notebook.rawValue.prefix(8)))`"
  }
}
