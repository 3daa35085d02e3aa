/// The rules every memo obeys, wherever it came from (keyboard, editor, archive, and later
/// a peer). Pure, so the same checks run in the CLI, the store and the sync engine.
public enum MemoRules {
  /// Largest body, in UTF-8 bytes. memo-peer is for short text memos.
  public static let maxBodyBytes = 64 * 1024
  /// Largest title, in UTF-8 bytes.
  public static let maxTitleBytes = 512
  /// Characters kept when a title is derived from the body's first line.
  public static let derivedTitleCharacters = 80
  /// Most tags on one memo.
  public static let maxTags = 32
  /// Longest tag, in characters.
  public static let maxTagCharacters = 64

  /// The revision counter of a new revision: one more than the highest of `values`, refused
  /// past 2^53 (`SyncLimits.maximumRevision`, which peers check), so a counter taken from a
  /// peer or a damaged file never overflows.
  public static func nextRevision(after values: Int64...) throws -> Int64 {
    let highest = values.max() ?? 0
    guard highest >= 0, highest < SyncLimits.maximumRevision else {
      throw MemoPeerError(
        .invalidInput, "the memo's revision counter is out of range (\(highest)), so it cannot be changed",
        remedy: .copyToNewMemo)
    }
    return highest + 1
  }

  /// Checks and normalises a draft: derives a missing title from the body, normalises
  /// tags, enforces limits. Errors never quote the memo's text.
  public static func validated(_ draft: MemoDraft) throws -> MemoDraft {
    var result = draft
    try checkBody(draft.body)
    let title = draft.title.trimmingWhitespace
    result.title = title.isEmpty ? derivedTitle(from: draft.body) : title
    try checkTitle(result.title)
    result.tags = try normalizeTags(draft.tags)
    if draft.body.isEmpty && title.isEmpty {
      throw MemoPeerError(
        .invalidInput, "the memo is empty", hint: "give it a body on stdin or a --title")
    }
    return result
  }

  /// Applies a change to a memo's content, with the same checks as a new memo.
  public static func applying(_ change: MemoChange, to memo: Memo) throws -> Memo {
    var result = memo
    if let body = change.body {
      try checkBody(body)
      result.body = body
    }
    if let title = change.title {
      let trimmed = title.trimmingWhitespace
      result.title = trimmed.isEmpty ? derivedTitle(from: result.body) : trimmed
      try checkTitle(result.title)
    }
    if let tags = change.tags { result.tags = try normalizeTags(tags) }
    if let isPrivate = change.isPrivate { result.isPrivate = isPrivate }
    return result
  }

  public static func checkBody(_ body: String) throws {
    let size = body.utf8.count
    guard size <= maxBodyBytes else {
      throw MemoPeerError(
        .tooLarge, "the memo body is \(size) bytes; the limit is \(maxBodyBytes) bytes (64 KiB)",
        hint: "split it into several memos")
    }
  }

  public static func checkTitle(_ title: String) throws {
    guard title.utf8.count <= maxTitleBytes else {
      throw MemoPeerError(
        .tooLarge, "the title is \(title.utf8.count) bytes; the limit is \(maxTitleBytes) bytes",
        hint: "use a shorter --title")
    }
    // Printable ASCII has no control character; anything else is looked up per scalar.
    let printable = title.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
    guard printable || !title.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
      throw MemoPeerError(
        .invalidInput, "the title contains a line break or control character",
        hint: "a title is one line of text")
    }
  }

  /// The first non-empty line of the body, shortened; "Untitled" for an empty body.
  public static func derivedTitle(from body: String) -> String {
    for line in body.split(whereSeparator: \.isNewline) {
      let trimmed = String(line).trimmingWhitespace
      guard !trimmed.isEmpty else { continue }
      let cleaned = String(
        trimmed.unicodeScalars.filter { $0.properties.generalCategory != .control })
      if cleaned.count <= derivedTitleCharacters { return cleaned }
      return String(cleaned.prefix(derivedTitleCharacters - 1)) + "…"
    }
    return "Untitled"
  }

  /// Lowercases tags, drops duplicates (keeping order), and checks each: 1–64 letters,
  /// digits or `- _ . /`. Tags are never quoted back in errors.
  public static func normalizeTags(_ tags: [String]) throws -> [String] {
    var seen = Set<String>()
    var result: [String] = []
    for (index, raw) in tags.enumerated() {
      // A tag already in its normal form in ASCII (the usual) is taken as it is: trimming
      // and lowercasing would not change it, and every byte is a letter, digit or - _ . /.
      let plain = raw.utf8.count <= maxTagCharacters && !raw.isEmpty && raw.utf8.allSatisfy(Self.isPlainTagByte)
      let tag = plain ? raw : raw.trimmingWhitespace.lowercased()
      let valid =
        plain
        || (!tag.isEmpty && tag.count <= maxTagCharacters
          && tag.allSatisfy { $0.isLetter || $0.isNumber || "-_./".contains($0) })
      guard valid else {
        throw MemoPeerError(
          .invalidInput, "tag number \(index + 1) is not a valid tag",
          hint: "tags are 1–\(maxTagCharacters) letters, digits or - _ . / (no spaces or commas)")
      }
      if seen.insert(tag).inserted { result.append(tag) }
    }
    guard result.count <= maxTags else {
      throw MemoPeerError(.tooLarge, "a memo can have at most \(maxTags) tags")
    }
    return result
  }

  /// A lowercase ASCII letter, a digit, or one of `- _ . /`.
  private static func isPlainTagByte(_ byte: UInt8) -> Bool {
    (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x5f || byte == 0x2e
      || byte == 0x2f
  }

  /// Decodes bytes that must be UTF-8 (stdin, an edited file), naming the byte offset of
  /// the first invalid sequence rather than the text around it.
  public static func decodeUTF8(_ bytes: [UInt8], source: String) throws -> String {
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    var offset = 0
    var scalars = String.UnicodeScalarView()
    while true {
      switch decoder.decode(&iterator) {
      case .scalarValue(let scalar):
        scalars.append(scalar)
        offset += UTF8.width(scalar)
      case .emptyInput:
        return String(scalars)
      case .error:
        throw MemoPeerError(
          .invalidUTF8, "\(source) is not valid UTF-8 (first bad byte near offset \(offset))",
          hint: "memos are UTF-8 text; convert the input first, e.g. with iconv")
      }
    }
  }
}

extension String {
  /// The string without leading and trailing white space and newlines.
  public var trimmingWhitespace: String {
    // Text that starts and ends with ASCII other than whitespace (tab to carriage return,
    // space) has nothing to trim: no scalar property look-ups.
    let isSpace = { (byte: UInt8) in byte == 0x20 || (byte >= 0x09 && byte <= 0x0d) }
    if let first = utf8.first, let last = utf8.last, first < 0x80, last < 0x80, !isSpace(first), !isSpace(last) {
      return self
    }
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
      let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
    else { return "" }
    return String(scalars[first...last])
  }
}
