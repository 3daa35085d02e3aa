import FoundationEssentials
import MemoCore
import MemoSystem

/// A memo as a Markdown file (docs/FORMATS.md, "Markdown files"): front matter with id,
/// title, tags, times, the private mark and the revision, then the body exactly as stored.
/// Reading also takes files other programs wrote: the title from front matter or the first
/// `# ` heading, tags from front matter and `#tags` in the text, times from front matter or
/// the file's modification time.
public struct MarkdownMemo: Sendable, Equatable {
  public var id: MemoID?
  /// Nil: derived by the memo rules (from the first line of the body).
  public var title: String?
  public var body: String
  public var tags: [String]
  public var created: Timestamp?
  public var updated: Timestamp?
  public var isPrivate: Bool
  public var revision: Int64?

  /// A file is read whole only up to this size: a body of 64 KiB plus its front matter.
  public static let maxFileBytes = MemoRules.maxBodyBytes + FrontMatter.maxBytes + 1024

  public init(
    id: MemoID? = nil, title: String? = nil, body: String, tags: [String] = [], created: Timestamp? = nil,
    updated: Timestamp? = nil, isPrivate: Bool = false, revision: Int64? = nil
  ) {
    self.id = id
    self.title = title
    self.body = body
    self.tags = tags
    self.created = created
    self.updated = updated
    self.isPrivate = isPrivate
    self.revision = revision
  }

  // MARK: - Writing

  /// The file for `memo`. Strings in the front matter are JSON-quoted (a subset of YAML's
  /// double-quoted style), so any title survives the trip and pandoc reads it.
  public static func render(_ memo: Memo) -> String {
    var lines = [
      "---",
      "id: \(memo.id.rawValue)",
      "title: \(quoted(memo.title))",
      "tags: [\(memo.tags.map(quoted).joined(separator: ", "))]",
      "created: \(isoTime(memo.created))",
      "updated: \(isoTime(memo.updated))",
      "private: \(memo.isPrivate)",
      "revision: \(memo.revision)",
      "---",
      "",
    ]
    lines.append(memo.body)
    return lines.joined(separator: "\n")
  }

  /// `groceries-3f2a9c1d.md`: a slug of the title (ASCII letters and digits, at most 48
  /// characters) and the short id, so names are readable and never collide.
  public static func fileName(for memo: Memo) -> String {
    var slug = ""
    for scalar in memo.title.lowercased().unicodeScalars {
      if scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) {
        slug.unicodeScalars.append(scalar)
      } else if !slug.isEmpty && !slug.hasSuffix("-") {
        slug += "-"
      }
      if slug.count >= 48 { break }
    }
    while slug.hasSuffix("-") { slug.removeLast() }
    return (slug.isEmpty ? "memo" : slug) + "-" + memo.id.short + ".md"
  }

  // MARK: - Reading

  /// Reads a file's text. `source` names the file in errors; `modified` (ms) stands in for
  /// missing times. Nothing of the text is ever repeated in an error.
  public static func parse(_ text: String, source: String, modified: Timestamp) throws -> MarkdownMemo {
    let (matter, body) = try FrontMatter.split(text, source: source)
    var memo = MarkdownMemo(body: body)
    let fields = matter ?? FrontMatter()
    if let value = fields["id"] {
      guard case .text(let text) = value, let id = MemoID(text) else {
        throw FrontMatter.refusal(source, "id is not a memo id (a UUID)")
      }
      memo.id = id
    }
    if let value = fields["title"] {
      guard case .text(let title) = value else { throw FrontMatter.refusal(source, "title is a list") }
      memo.title = title.isEmpty ? nil : title
    }
    if memo.title == nil { memo.title = heading(in: body) }
    switch fields["tags"] {
    case .text(let text)?: memo.tags = text.split(separator: ",").map { $0.trimmingBlanks() }
    case .list(let items)?: memo.tags = items
    case nil: break
    }
    // A file memo-peer wrote carries its tags exactly; elsewhere `#tags` in the text count.
    if memo.id == nil { memo.tags += hashtags(in: body) }
    memo.created = try time(fields, ["created", "date"], source) ?? modified
    memo.updated = try time(fields, ["updated", "modified", "lastmod"], source) ?? memo.created
    if let value = fields["private"] {
      guard case .text(let text) = value, let flag = ["true": true, "yes": true, "false": false, "no": false][text]
      else { throw FrontMatter.refusal(source, "private must be true or false") }
      memo.isPrivate = flag
    }
    if let value = fields["revision"] {
      guard case .text(let text) = value, let revision = Int64(text), revision >= 1,
        revision <= SyncLimits.maximumRevision
      else {
        throw FrontMatter.refusal(source, "revision must be a whole number from 1 to 2^53")
      }
      memo.revision = revision
    }
    return memo
  }

  /// The text of the first `# ` heading outside code blocks, without closing hashes.
  static func heading(in body: String) -> String? {
    var inCode = false
    for line in body.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") || line.hasPrefix("~~~") { inCode.toggle() }
      guard !inCode, line.hasPrefix("# ") else { continue }
      var text = line.dropFirst(2).trimmingBlanks()
      while text.hasSuffix("#") { text.removeLast() }
      text = text.trimmingBlanks()
      if !text.isEmpty { return text }
    }
    return nil
  }

  /// `#tags` in the text (outside code blocks and inline code): a `#` at the start of a word
  /// followed by a letter or digit, up to the first character a tag cannot hold. Trailing
  /// `.` and `/` are punctuation. Words that are not valid tags are left out.
  static func hashtags(in body: String) -> [String] {
    var tags: [String] = []
    var inCode = false
    for line in body.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") || line.hasPrefix("~~~") { inCode.toggle() }
      if inCode { continue }
      var previous: Character = " "
      var inlineCode = false
      var index = line.startIndex
      while index < line.endIndex {
        let character = line[index]
        if character == "`" { inlineCode.toggle() }
        if !inlineCode && character == "#" && (previous.isWhitespace || previous == "(") {
          var end = line.index(after: index)
          while end < line.endIndex, line[end].isLetter || line[end].isNumber || "-_./".contains(line[end]) {
            end = line.index(after: end)
          }
          var tag = String(line[line.index(after: index)..<end])
          while tag.hasSuffix(".") || tag.hasSuffix("/") { tag.removeLast() }
          if let first = tag.first, first.isLetter || first.isNumber, tag.count <= MemoRules.maxTagCharacters {
            tags.append(tag)
          }
          index = end
          previous = "#"
          continue
        }
        previous = character
        index = line.index(after: index)
      }
    }
    return tags
  }

  private static func time(_ fields: FrontMatter, _ keys: [String], _ source: String) throws -> Timestamp? {
    guard let key = keys.first(where: { fields[$0] != nil }) else { return nil }
    guard case .text(let text)? = fields[key], let time = parseTime(text) else {
      throw FrontMatter.refusal(
        source, "\(key) is not a date (use ISO 8601: 2026-11-29T20:15:03Z, or 2026-11-29)")
    }
    return time
  }

  /// ISO 8601 with or without fractional seconds, or a date alone (midnight UTC); years
  /// 1970 to 9999.
  public static func parseTime(_ text: String) -> Timestamp? {
    let text = text.trimming(["\"", "'", " "])
    // With or without fractional seconds (any offset), or a date alone.
    let date =
      (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
      ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
      ?? (text.utf8.count == 10 ? try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day()) : nil)
    if let date {
      let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
      guard milliseconds >= 0, milliseconds < 253_402_300_800_000 else { return nil }
      return Timestamp(milliseconds)
    }
    return nil
  }

  /// `2026-11-29T20:15:03.123Z`, exact to the millisecond (integer arithmetic: a formatter
  /// working in floating-point seconds can print .122 for .123).
  public static func isoTime(_ timestamp: Timestamp) -> String {
    let milliseconds = ((timestamp % 1000) + 1000) % 1000
    let seconds = (timestamp - milliseconds) / 1000
    let secondsOfDay = ((seconds % 86400) + 86400) % 86400
    // Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted).
    let days = (seconds - secondsOfDay) / 86400 + 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let shiftedMonth = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
    let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func pad(_ value: Int64, _ width: Int) -> String {
      let digits = String(value)
      return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondsOfDay / 3600, 2)):"
      + "\(pad(secondsOfDay / 60 % 60, 2)):\(pad(secondsOfDay % 60, 2)).\(pad(milliseconds, 3))Z"
  }

  static func quoted(_ text: String) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
  }
}
