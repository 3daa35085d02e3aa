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

  /// The bytes of lowercase hex text (what `encode` writes, and nothing else: an upper-case
  /// digit or an odd length is nil, so every value has one spelling).
  public static func decode(_ text: String) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    func value(_ digit: UInt8) -> UInt8? {
      switch digit {
      case 0x30...0x39: digit - 0x30
      case 0x61...0x66: digit - 0x61 + 10
      default: nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count / 2)
    for index in stride(from: 0, to: utf8.count, by: 2) {
      guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
    }
    return bytes
  }
}
