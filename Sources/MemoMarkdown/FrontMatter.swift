import FoundationEssentials
import MemoCore
import MemoSystem

/// The YAML front matter of Markdown files (the block between `---` lines at the top), read
/// by libyaml (`YAMLMapping`) and kept only as far as memo-peer can represent it: a mapping
/// of keys to scalars or lists of scalars. Anything else (nested mappings, lists in lists,
/// anchors and aliases, tags, a key given twice) is refused with the line number, never
/// with the text of the line, which may be memo content.
///
/// Limits: 16 KiB and 200 lines of front matter, keys of 1–64 letters, digits, `-` or `_`,
/// 256 items in a list.
public struct FrontMatter: Sendable, Equatable {
  public enum Value: Sendable, Equatable {
    case text(String)
    case list([String])
  }

  public static let maxBytes = 16 * 1024
  public static let maxLines = 200
  public static let maxListItems = 256

  /// Keys in file order, with their values.
  public private(set) var entries: [(key: String, value: Value)] = []

  public subscript(key: String) -> Value? { entries.first { $0.key == key }?.value }

  public static func == (lhs: FrontMatter, rhs: FrontMatter) -> Bool {
    lhs.entries.map(\.key) == rhs.entries.map(\.key) && lhs.entries.map(\.value) == rhs.entries.map(\.value)
  }

  /// Splits `text` into its front matter (nil when the text does not start with `---`) and
  /// the rest. One blank line after the closing `---` belongs to the front matter. Lines end
  /// with LF or CRLF (a file saved on Windows); the body is kept byte for byte.
  public static func split(_ text: String, source: String) throws -> (FrontMatter?, body: String) {
    let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    // "\r\n" is one Character in Swift: splitting at "\n" alone would never see a CRLF line.
    let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    guard let first = lines.first, trimmedLine(first) == "---" else { return (nil, text) }
    var next = 1
    var block: [Substring] = []
    var bytes = 0
    while true {
      guard next < lines.count else { throw refusal(source, "the front matter has no closing --- line") }
      let line = lines[next]
      next += 1
      if trimmedLine(line) == "---" || trimmedLine(line) == "..." { break }
      block.append(line)
      bytes += line.utf8.count + 1
      guard block.count <= maxLines, bytes <= maxBytes else {
        throw refusal(source, "the front matter is longer than \(maxLines) lines or \(maxBytes) bytes")
      }
    }
    if next < lines.count - 1, trimmedLine(lines[next]).isEmpty { next += 1 }
    let body = next < lines.count ? String(text[lines[next].startIndex...]) : ""
    return (try parse(block, source: source), body)
  }

  /// The lines between the `---` lines, read as YAML (`YAMLMapping`). Line numbers in
  /// refusals count from the file's first line, the opening `---`.
  static func parse(_ lines: [Substring], source: String) throws -> FrontMatter {
    let read: [YAMLMapping.Entry]
    do throws(YAMLProblem) {
      read = try YAMLMapping.read(lines.joined(separator: "\n"), maxListItems: maxListItems)
    } catch {
      throw refusal(source, "line \(error.line + 1): \(error.reason)")
    }
    var matter = FrontMatter()
    // A null value (`key:` with nothing, `~`) is as if the key were not there.
    for entry in read { if let value = entry.value { matter.entries.append((entry.key, value)) } }
    return matter
  }

  private static func trimmedLine(_ line: Substring) -> String {
    line.trimming([" ", "\t", "\r"])
  }

  static func refusal(_ source: String, _ problem: String) -> MemoPeerError {
    MemoPeerError(
      .invalidInput, "\(source): \(problem)",
      hint: "front matter holds `key: value` lines between --- lines (docs/FORMATS.md, Markdown files)")
  }
}
