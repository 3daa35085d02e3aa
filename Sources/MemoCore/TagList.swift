/// How a memo's tags are laid out inside their sealed field: normalised tags joined by a
/// newline, which no valid tag contains. Version 1 of the sealed tag format.
public enum TagList {
  public static func encode(_ tags: [String]) -> [UInt8] { Array(tags.joined(separator: "\n").utf8) }

  public static func decode(_ bytes: [UInt8]) -> [String] {
    guard !bytes.isEmpty else { return [] }
    return bytes.split(separator: 0x0A, omittingEmptySubsequences: true).map {
      String(decoding: $0, as: UTF8.self)
    }
  }
}
