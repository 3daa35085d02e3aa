extension String {
  /// The text of a C buffer up to its first NUL (a filled-in `char[]`: a path template, an
  /// interface name, an error string), decoded as UTF-8.
  public init(nulTerminated buffer: [CChar]) {
    self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// Lowercase hexadecimal, for ids and tags.
public enum Hex {
  public static func encode(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
  }
}
