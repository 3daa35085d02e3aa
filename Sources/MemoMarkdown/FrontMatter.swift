import FoundationEssentials
import MemoCore
import MemoSystem

/// A small, strict reader for the YAML-like front matter of Markdown files (the block
/// between `---` lines at the top). It reads only what memo files need: `key: value` with
/// plain, 'single-' or "double-quoted" scalars, `[a, b]` lists and `- item` lists. Anything
/// else (nesting, anchors, multi-line scalars, duplicate keys) is refused with the line
/// number, never with the text of the line, which may be memo content.
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
  /// the rest. One blank line after the closing `---` belongs to the front matter.
  public static func split(_ text: String, source: String) throws -> (FrontMatter?, body: String) {
    let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard let first = lines.first, trimmedLine(first) == "---" else { return (nil, text) }
    lines.removeFirst()
    var block: [Substring] = []
    var bytes = 0
    while true {
      guard let line = lines.first else {
        throw refusal(source, "the front matter has no closing --- line")
      }
      lines.removeFirst()
      if trimmedLine(line) == "---" || trimmedLine(line) == "..." { break }
      block.append(line)
      bytes += line.utf8.count + 1
      guard block.count <= maxLines, bytes <= maxBytes else {
        throw refusal(source, "the front matter is longer than \(maxLines) lines or \(maxBytes) bytes")
      }
    }
    if let blank = lines.first, trimmedLine(blank).isEmpty, lines.count > 1 { lines.removeFirst() }
    return (try parse(block, source: source), lines.joined(separator: "\n"))
  }

  static func parse(_ lines: [Substring], source: String) throws -> FrontMatter {
    var matter = FrontMatter()
    var openList: String?
    for (index, raw) in lines.enumerated() {
      let number = index + 2  // the opening --- is line 1
      let line = trimmedLine(raw)
      if line.isEmpty || line.hasPrefix("#") { continue }
      if raw.first == " " || raw.first == "\t" || line.hasPrefix("- ") || line == "-" {
        // An item of a block list under the key just read.
        guard let key = openList, line.hasPrefix("-") else {
          throw refusal(source, "line \(number) is indented but is not a list item (nesting is not supported)")
        }
        let item = try scalar(String(line.dropFirst()).trimmingBlanks(), source, number)
        guard case .list(var items)? = matter[key], items.count < maxListItems else {
          throw refusal(source, "line \(number): a list has more than \(maxListItems) items")
        }
        items.append(item)
        matter.set(key, .list(items))
        continue
      }
      openList = nil
      guard let colon = line.firstIndex(of: ":") else {
        throw refusal(source, "line \(number) is not `key: value`")
      }
      let key = String(line[..<colon])
      guard (1...64).contains(key.count), key.unicodeScalars.allSatisfy(isKeyCharacter) else {
        throw refusal(source, "line \(number): a key must be 1–64 letters, digits, - or _")
      }
      guard matter[key] == nil else { throw refusal(source, "line \(number): the key \(key) appears twice") }
      let rest = line[line.index(after: colon)...].trimmingBlanks()
      if rest.isEmpty {
        openList = key
        matter.set(key, .list([]))
      } else if rest.hasPrefix("[") {
        matter.set(key, .list(try flowList(rest, source, number)))
      } else if rest.hasPrefix("{") || rest.hasPrefix("&") || rest.hasPrefix("*") || rest.hasPrefix("|")
        || rest.hasPrefix(">") || rest.hasPrefix("!")
      {
        throw refusal(source, "line \(number): only plain, quoted and list values are supported")
      } else {
        matter.set(key, .text(try scalar(rest, source, number)))
      }
    }
    return matter
  }

  private mutating func set(_ key: String, _ value: Value) {
    if let index = entries.firstIndex(where: { $0.key == key }) {
      entries[index].value = value
    } else {
      entries.append((key, value))
    }
  }

  /// A plain, 'single-quoted' or "double-quoted" scalar (double quotes with JSON escapes).
  static func scalar(_ text: String, _ source: String, _ number: Int) throws -> String {
    if text.hasPrefix("\"") {
      guard text.count >= 2, text.hasSuffix("\""),
        let value = try? JSONDecoder().decode(String.self, from: Data(text.utf8))
      else { throw refusal(source, "line \(number): a double-quoted value is not closed or has a bad escape") }
      return value
    }
    if text.hasPrefix("'") {
      let inner = text.dropFirst()
      guard inner.hasSuffix("'") else { throw refusal(source, "line \(number): a single-quoted value is not closed") }
      let body = String(inner.dropLast())
      guard !body.replacing("''", with: "").contains("'") else {
        throw refusal(source, "line \(number): a single-quoted value has a stray quote")
      }
      return body.replacing("''", with: "'")
    }
    // A plain scalar ends before a ` #` comment.
    let plain = text.firstRange(of: " #").map { String(text[..<$0.lowerBound]) } ?? text
    return plain.trimmingBlanks()
  }

  /// `[a, "b, c", 'd']`: items split at commas outside quotes.
  static func flowList(_ text: String, _ source: String, _ number: Int) throws -> [String] {
    guard text.hasSuffix("]") else { throw refusal(source, "line \(number): a [list] is not closed on its line") }
    let inner = text.dropFirst().dropLast()
    var items: [String] = []
    var current = ""
    var quote: Character?
    var escaped = false
    for character in inner {
      if let open = quote {
        current.append(character)
        if open == "\"" && character == "\\" && !escaped {
          escaped = true
          continue
        }
        if character == open && !escaped { quote = nil }
        escaped = false
      } else if character == "\"" || character == "'" {
        quote = character
        current.append(character)
      } else if character == "," {
        items.append(current)
        current = ""
      } else if character == "[" || character == "]" || character == "{" || character == "}" {
        throw refusal(source, "line \(number): nested lists are not supported")
      } else {
        current.append(character)
      }
    }
    guard quote == nil else { throw refusal(source, "line \(number): a quoted item in a [list] is not closed") }
    items.append(current)
    let trimmed = items.map { $0.trimmingBlanks() }
    if trimmed == [""] { return [] }
    guard trimmed.count <= maxListItems else {
      throw refusal(source, "line \(number): a list has more than \(maxListItems) items")
    }
    return try trimmed.map { item in
      guard !item.isEmpty else { throw refusal(source, "line \(number): a [list] has an empty item") }
      return try scalar(item, source, number)
    }
  }

  private static func isKeyCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
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
