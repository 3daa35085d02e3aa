/// The one rule for writing text that came from outside this process to a terminal.
///
/// Anyone on the LAN can publish an advertisement, and a trusted device can send names,
/// titles and ids: a value holding `ESC[8m`, a carriage return or a right-to-left override
/// could hide what the program prints next to it, or draw a forged line (a fake pairing
/// code). So every such value — TXT values, instance and host names, names peers chose,
/// delivery ids, inbox titles, error text from peers, names in the trust store (which may
/// have come from a peer) — goes through `render` before it reaches a terminal:
///
/// - C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F) are shown as
///   `\xHH`;
/// - the bidirectional overrides, embeddings and isolates (U+202A–U+202E, U+2066–U+2069),
///   the bidirectional marks (U+200E, U+200F, U+061C) and the line and paragraph separators
///   (U+2028, U+2029) are shown as `\u{HHHH}`;
/// - in a value that needed an escape, a backslash is doubled, so an escape can never be
///   confused with text that looks like one (a value with nothing to escape is shown as is);
/// - at most `limit` characters of the value are kept (then `…`), so a peer cannot flood the
///   screen.
///
/// Human output marks a value that had to be escaped (`display`), so a person sees that the
/// name is not what it seems. `--json` output keeps the exact value: JSON escapes it.
public enum TerminalText {
  /// The default cap for names and ids: longer than any valid name (63 bytes), short
  /// enough for one line.
  public static let nameLimit = 64
  /// The cap for memo titles: a valid title has at most 512 bytes, so only a value that
  /// is not a valid title is cut.
  public static let titleLimit = 512
  /// What `display` appends to a value that held characters a terminal would act on.
  public static let escapedMarker = " [escaped]"

  /// A value made safe for a terminal.
  public struct Rendering: Equatable, Sendable {
    /// The text to print: no character in it is one a terminal acts on.
    public let text: String
    /// Whether a control, bidirectional or separator character was escaped.
    public let escaped: Bool
    /// Whether the value was longer than the limit and was cut.
    public let truncated: Bool
  }

  /// Whether a terminal would act on this character rather than just draw it.
  public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true
    case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }

  /// `text` with every unsafe character escaped, cut after `limit` characters (Unicode
  /// scalars) of the original.
  public static func render(_ text: String, limit: Int = nameLimit) -> Rendering {
    let limit = max(0, limit)
    if text.utf8.count <= limit && !text.utf8.contains(where: mayStartUnsafe) {
      return Rendering(text: text, escaped: false, truncated: false)
    }
    let kept = text.unicodeScalars.prefix(limit)
    let truncated = kept.count < text.unicodeScalars.count
    let escaped = kept.contains(where: isUnsafe)
    var output = String.UnicodeScalarView()
    for scalar in kept {
      if escaped && scalar == "\\" {
        output.append(contentsOf: #"\\"#.unicodeScalars)
      } else if isUnsafe(scalar) {
        output.append(contentsOf: escape(scalar).unicodeScalars)
      } else {
        output.append(scalar)
      }
    }
    return Rendering(text: String(output) + (truncated ? "…" : ""), escaped: escaped, truncated: truncated)
  }

  /// `render(text).text`, followed by ` [escaped]` when something had to be escaped: the
  /// form every human-readable output uses.
  public static func display(_ text: String, limit: Int = nameLimit) -> String {
    let rendering = render(text, limit: limit)
    return rendering.escaped ? rendering.text + escapedMarker : rendering.text
  }

  /// A memo title as human output shows it: a valid title holds no control character, but
  /// one from a peer may hold a bidirectional override, so it gets `display` too.
  public static func title(_ text: String) -> String { display(text, limit: titleLimit) }

  /// `title(text)`'s bytes appended to `bytes`: a title with nothing to escape (the fast
  /// path, listing 100,000 titles) is copied as it is, without a new string.
  public static func appendTitle(_ text: String, to bytes: inout [UInt8]) {
    var text = text
    let copied = text.withUTF8 { utf8 in
      guard utf8.count <= titleLimit, !utf8.contains(where: mayStartUnsafe) else { return false }
      bytes.append(contentsOf: utf8)
      return true
    }
    if !copied { bytes.append(contentsOf: title(text).utf8) }
  }

  /// Whether a byte of UTF-8 may start a character `isUnsafe` refuses: C0, DEL, and the
  /// lead bytes of C1, of U+061C and of U+20xx. Text without any needs no escape.
  @inline(__always) static func mayStartUnsafe(_ byte: UInt8) -> Bool {
    byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xD8 || byte == 0xE2
  }

  /// `\x1b` for a character below U+0100, `\u{202e}` above.
  /// A word a person typed, repeated in a message only when it looks like a word of the
  /// command line (short, ASCII letters, digits, `-_.`): anything else may be memo text typed
  /// in the wrong place, and messages never repeat memo text.
  public static func echo(_ word: String) -> String {
    let looksLikeAWord =
      word.count <= 32
      && word.unicodeScalars.allSatisfy {
        $0.isASCII && ($0.properties.isAlphabetic || "0123456789-_.".unicodeScalars.contains($0))
      }
    return looksLikeAWord ? word : "(not repeated: it does not look like an option or a name)"
  }

  static func escape(_ scalar: Unicode.Scalar) -> String {
    let hex = Hex.encode(withUnsafeBytes(of: scalar.value.bigEndian) { Array($0) }.drop { $0 == 0 })
    if scalar.value < 0x100 { return #"\x"# + (hex.isEmpty ? "00" : hex) }
    return #"\u{"# + hex + "}"
  }
}

extension String {
  /// This text as a terminal may show it (`TerminalText.display`): for every value that came
  /// from outside this process.
  public var terminalSafe: String { TerminalText.display(self) }
}

/// The names people give devices, checked where they are chosen and where they are received.
public enum DeviceName {
  /// A pairing name travels in a TXT value and becomes a trust store name on the other
  /// side: at most 63 bytes of UTF-8, like a DNS label.
  public static let maximumPairingBytes = 63

  /// Whether `name` is printable text: no control, format (bidirectional, zero-width),
  /// separator, private-use, surrogate or unassigned character, nothing `TerminalText`
  /// would escape, and no space at either end.
  public static func isPrintable(_ name: String) -> Bool {
    guard !name.isEmpty, let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
      !first.properties.isWhitespace, !last.properties.isWhitespace
    else { return false }
    return name.unicodeScalars.allSatisfy { scalar in
      guard !TerminalText.isUnsafe(scalar) else { return false }
      switch scalar.properties.generalCategory {
      case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: return false
      default: return true
      }
    }
  }

  /// Whether `name` may be offered or accepted as a pairing name: printable, at most 63
  /// bytes, and not starting with a dash (it would read as an option).
  public static func isValidPairingName(_ name: String) -> Bool {
    isPrintable(name) && name.utf8.count <= maximumPairingBytes && !name.hasPrefix("-")
  }

  /// Refuses a pairing name chosen here (`pair --name`), saying what is allowed.
  public static func validatePairingName(_ name: String) throws {
    guard isValidPairingName(name) else {
      throw MemoPeerError(
        .invalidInput,
        "a pairing name must be printable text of at most \(maximumPairingBytes) bytes, without leading or trailing spaces and not starting with -",
        hint: "for example --name laptop")
    }
  }
}
