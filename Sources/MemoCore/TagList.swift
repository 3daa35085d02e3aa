/// How a memo's tags are laid out inside their sealed field: normalised tags joined by a
/// newline, which no valid tag contains. Version 1 of the sealed tag format.
public enum TagList {
  public static func encode(_ tags: [String]) -> [UInt8] { Array(tags.joined(separator: "\n").utf8) }

  /// The tags in `bytes`, empty lines skipped (`list` decodes one list per memo, so this
  /// walks the bytes once rather than splitting into slices).
  public static func decode(_ bytes: [UInt8]) -> [String] {
    guard !bytes.isEmpty else { return [] }
    return bytes.withUnsafeBufferPointer { buffer in
      var tags: [String] = []
      var start = 0
      for index in 0...buffer.count where index == buffer.count || buffer[index] == 0x0A {
        if index > start {
          tags.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self))
        }
        start = index + 1
      }
      return tags
    }
  }
}
