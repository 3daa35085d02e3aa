/// Case-insensitive substring search over decrypted memo text, used by `search`.
///
/// ASCII queries (the common case) are matched on raw UTF-8 bytes with ASCII case folding,
/// so a search over 100,000 memos never builds a String per memo; other queries fall back
/// to Unicode lowercasing.
public struct TextMatcher: Sendable {
  private let asciiNeedle: [UInt8]?
  private let foldedNeedle: String

  public init(query: String) {
    foldedNeedle = query.lowercased()
    asciiNeedle = query.utf8.allSatisfy { $0 < 0x80 } ? query.utf8.map(Self.foldASCII) : nil
  }

  public var isEmpty: Bool { foldedNeedle.isEmpty }

  public func matches(_ haystack: [UInt8]) -> Bool {
    if let needle = asciiNeedle { return Self.containsFolded(haystack, needle) }
    return String(decoding: haystack, as: UTF8.self).lowercased().contains(foldedNeedle)
  }

  @inline(__always) private static func foldASCII(_ byte: UInt8) -> UInt8 {
    (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
  }

  private static func containsFolded(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty else { return true }
    guard haystack.count >= needle.count else { return false }
    return haystack.withUnsafeBufferPointer { hay in
      needle.withUnsafeBufferPointer { pin in
        let first = pin[0]
        let lastStart = hay.count - pin.count
        var index = 0
        while index <= lastStart {
          if foldASCII(hay[index]) == first {
            var offset = 1
            while offset < pin.count && foldASCII(hay[index + offset]) == pin[offset] { offset += 1 }
            if offset == pin.count { return true }
          }
          index += 1
        }
        return false
      }
    }
  }
}
