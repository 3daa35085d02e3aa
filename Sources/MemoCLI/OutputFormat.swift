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
    var lines = ListingLines(names: names)
    var bytes: [UInt8] = []
    lines.append(memo, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  static func notebookSuffix(_ notebook: NotebookID?, _ names: Names?) -> String {
    guard let names, names.isOther(notebook), let name = names.notebook(notebook) else { return "" }
    return "  (in \(name.terminalSafe))"
  }

  /// One line of `list` in any lock state: a field that could not be read is replaced by a
  /// placeholder that says why, never left out silently.
  static func line(_ memo: MemoListing, names: Names? = nil) -> String {
    var lines = ListingLines(names: names)
    var bytes: [UInt8] = []
    lines.append(memo, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
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

/// The lines of `list` and `search` (`OutputFormat.line`), written as bytes straight into
/// the output: building each line as a string of interpolated parts was a third of listing
/// 100,000 memos. The notebook's suffix is looked up once per run of memos in one notebook.
struct ListingLines {
  let names: Names?
  private var suffixNotebook: NotebookID?
  private var suffix: [UInt8] = []

  init(names: Names?) { self.names = names }

  /// `list`'s line (no newline).
  mutating func append(_ memo: MemoListing, to bytes: inout [UInt8]) {
    appendStart(memo.id, memo.updated, memo.isPrivate, to: &bytes)
    if let title = memo.title {
      TerminalText.appendTitle(title, to: &bytes)
    } else {
      bytes.append(contentsOf: (memo.isPrivate ? "(private, locked)" : "(locked)").utf8)
    }
    if let tags = memo.tags { Self.appendTags(tags, to: &bytes) }
    if let original = memo.conflictOf {
      bytes.append(
        contentsOf: "  [conflict copy of \(original.short), by \(names?.author(memo.author) ?? Names.unsigned)]".utf8)
    } else if memo.hasConflict {
      bytes.append(contentsOf: "  [conflict: see `memo-peer conflicts`]".utf8)
    }
    appendNotebook(memo.notebook, to: &bytes)
  }

  /// `search`'s line (no newline).
  mutating func append(_ memo: MemoSummary, to bytes: inout [UInt8]) {
    appendStart(memo.id, memo.updated, memo.isPrivate, to: &bytes)
    TerminalText.appendTitle(memo.title, to: &bytes)
    Self.appendTags(memo.tags, to: &bytes)
    appendNotebook(memo.notebook, to: &bytes)
  }

  /// `0123abcd  2026-11-29 20:15  ` and the private mark.
  private func appendStart(_ id: MemoID, _ updated: Timestamp, _ isPrivate: Bool, to bytes: inout [UInt8]) {
    var id = id.rawValue
    id.withUTF8 { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0.prefix(8))) }
    bytes.append(contentsOf: [0x20, 0x20])
    TimeText.appendLocal(updated, to: &bytes)
    bytes.append(contentsOf: [0x20, 0x20])
    if isPrivate { bytes.append(contentsOf: "● ".utf8) }
  }

  /// `  #home #todo`, nothing for no tags.
  private static func appendTags(_ tags: [String], to bytes: inout [UInt8]) {
    guard !tags.isEmpty else { return }
    bytes.append(0x20)
    for tag in tags {
      bytes.append(contentsOf: [0x20, UInt8(ascii: "#")])
      bytes.append(contentsOf: tag.utf8)
    }
  }

  private mutating func appendNotebook(_ notebook: NotebookID?, to bytes: inout [UInt8]) {
    guard let names, let notebook else { return }
    if notebook != suffixNotebook {
      suffixNotebook = notebook
      suffix = Array(OutputFormat.notebookSuffix(notebook, names).utf8)
    }
    bytes.append(contentsOf: suffix)
  }
}
