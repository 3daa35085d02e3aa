/// Front matter as memo-peer can hold it, read from YAML: a mapping of keys to scalars or
/// lists of scalars, checked as it is read from libyaml's events (`YAMLEventParser`).
///
/// YAML decides what the text means (quotes and their escapes, folded and block scalars,
/// flow and block lists, comments); this decides what memo-peer takes: anything it cannot
/// represent — a nested mapping, a list inside a list, an anchor or alias, an explicit tag,
/// a key that is not a word, a key given twice, more than `maxListItems` items — is refused
/// at the first such node, with its line and never its text.
enum YAMLMapping {
  /// A key's value; nil when YAML reads it as null (nothing, `~` or `null`, unquoted).
  typealias Entry = (key: String, value: FrontMatter.Value?)

  static func read(_ text: String, maxListItems: Int) throws(YAMLProblem) -> [Entry] {
    let parser = YAMLEventParser(text)
    guard try parser.next() == .streamStart else { throw YAMLProblem(line: 1, reason: "not valid YAML") }
    switch try parser.next() {
    case .streamEnd: return []  // nothing but blank lines and comments
    case .documentStart: break
    default: throw YAMLProblem(line: 1, reason: "not valid YAML")
    }
    var entries: [Entry] = []
    switch try parser.next() {
    case .mappingStart(let line, let marks):
      try check(marks, line)
      entries = try mapping(parser, maxListItems: maxListItems)
    case .scalar(let value, _, true, let marks) where isNull(value) && marks == .none:
      break  // a lone `~`: empty
    case .scalar(_, let line, _, _), .sequenceStart(let line, _), .alias(let line):
      throw YAMLProblem(line: line, reason: "front matter must be `key: value` lines")
    default: throw YAMLProblem(line: 1, reason: "not valid YAML")
    }
    guard try parser.next() == .documentEnd, try parser.next() == .streamEnd else {
      throw YAMLProblem(line: 1, reason: "not valid YAML")
    }
    return entries
  }

  private static func mapping(_ parser: YAMLEventParser, maxListItems: Int) throws(YAMLProblem) -> [Entry] {
    var entries: [Entry] = []
    var keys: Set<String> = []
    while true {
      switch try parser.next() {
      case .mappingEnd: return entries
      case .scalar(let key, let line, _, let marks):
        try check(marks, line)
        guard (1...64).contains(key.unicodeScalars.count), key.unicodeScalars.allSatisfy(isKeyCharacter) else {
          throw YAMLProblem(line: line, reason: "a key must be 1–64 letters, digits, - or _")
        }
        guard keys.insert(key).inserted else { throw YAMLProblem(line: line, reason: "the key \(key) appears twice") }
        entries.append((key, try value(parser, maxListItems: maxListItems)))
      case .alias(let line): throw aliasProblem(line)
      case .mappingStart(let line, _), .sequenceStart(let line, _):
        throw YAMLProblem(line: line, reason: "a key must be 1–64 letters, digits, - or _")
      default: throw YAMLProblem(line: 1, reason: "not valid YAML")
      }
    }
  }

  private static func value(_ parser: YAMLEventParser, maxListItems: Int) throws(YAMLProblem) -> FrontMatter.Value? {
    switch try parser.next() {
    case .scalar(let value, let line, let plain, let marks):
      try check(marks, line)
      return plain && isNull(value) ? nil : .text(value)
    case .sequenceStart(let line, let marks):
      try check(marks, line)
      var items: [String] = []
      while true {
        switch try parser.next() {
        case .sequenceEnd: return .list(items)
        case .scalar(let item, let line, let plain, let marks):
          try check(marks, line)
          if plain && isNull(item) { continue }  // `- ` with nothing: no item
          guard items.count < maxListItems else {
            throw YAMLProblem(line: line, reason: "a list has more than \(maxListItems) items")
          }
          items.append(item)
        case .alias(let line): throw aliasProblem(line)
        case .sequenceStart(let line, _), .mappingStart(let line, _):
          throw YAMLProblem(line: line, reason: "a list holds only plain values (nesting is not supported)")
        default: throw YAMLProblem(line: 1, reason: "not valid YAML")
        }
      }
    case .mappingStart(let line, _):
      throw YAMLProblem(line: line, reason: "a value is a mapping (nesting is not supported)")
    case .alias(let line): throw aliasProblem(line)
    default: throw YAMLProblem(line: 1, reason: "not valid YAML")
    }
  }

  /// Anchors and tags change what a node means in ways a memo cannot keep: refused.
  private static func check(_ marks: YAMLEvent.Marks, _ line: Int) throws(YAMLProblem) {
    if marks.anchor { throw aliasProblem(line) }
    if marks.tag { throw YAMLProblem(line: line, reason: "tags (`!name`) are not supported") }
  }

  private static func aliasProblem(_ line: Int) -> YAMLProblem {
    YAMLProblem(line: line, reason: "anchors and aliases (`&name`, `*name`) are not supported")
  }

  /// YAML's null, in its plain (unquoted) forms.
  private static func isNull(_ value: String) -> Bool {
    ["", "~", "null", "Null", "NULL"].contains(value)
  }

  private static func isKeyCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
  }
}

extension YAMLEvent.Marks {
  static let none = YAMLEvent.Marks(anchor: false, tag: false)
}
