/// JSON strings written straight into bytes, as Foundation's JSONEncoder writes them, for
/// the writers that skip the encoder on hot paths (`list --json`, the delivery memo) and must
/// stay byte for byte what it would have made (their tests compare the two).
public enum JSONStringBytes {
  private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

  /// `text` as a quoted JSON string: `"` and `\` escaped, control characters in the short
  /// forms where JSON has them and else as `\u00xx`, `/` as `\/` when `escapingSlashes`
  /// (JSONEncoder's default; `.withoutEscapingSlashes` leaves it), everything else as UTF-8.
  public static func append(_ text: String, to bytes: inout [UInt8], escapingSlashes: Bool) {
    let quote = UInt8(ascii: "\"")
    let backslash = UInt8(ascii: "\\")
    let slash = UInt8(ascii: "/")
    bytes.append(quote)
    var text = text
    text.withUTF8 { utf8 in
      // Runs of bytes that need no escape are copied at once.
      var start = 0
      for index in utf8.indices {
        let byte = utf8[index]
        guard byte < 0x20 || byte == quote || byte == backslash || (escapingSlashes && byte == slash) else {
          continue
        }
        if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
        start = index + 1
        switch byte {
        case quote, backslash, slash: bytes += [backslash, byte]
        case 0x08: bytes += [backslash, UInt8(ascii: "b")]
        case 0x0C: bytes += [backslash, UInt8(ascii: "f")]
        case 0x0A: bytes += [backslash, UInt8(ascii: "n")]
        case 0x0D: bytes += [backslash, UInt8(ascii: "r")]
        case 0x09: bytes += [backslash, UInt8(ascii: "t")]
        default:
          bytes += [backslash, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
        }
      }
      if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
    }
    bytes.append(quote)
  }
}
