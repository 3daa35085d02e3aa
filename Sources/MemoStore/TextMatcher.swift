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

  /// Candidates for the needle's first byte are found sixteen bytes at a time (both cases
  /// of a letter at once), then the rest is compared folded: a body without the first
  /// letter costs a few instructions per 16 bytes, not a loop over every byte (which was a
  /// third of `search`'s time).
  private static func containsFolded(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty else { return true }
    guard haystack.count >= needle.count else { return false }
    return haystack.withUnsafeBufferPointer { hay in
      needle.withUnsafeBufferPointer { pin in
        let raw = UnsafeRawPointer(hay.baseAddress!)
        let first = pin[0]
        // Setting bit 5 folds a capital letter onto its small one; other bytes must match as
        // they are.
        let fold = SIMD16<UInt8>(repeating: first >= 0x61 && first <= 0x7A ? 0x20 : 0)
        let pattern = SIMD16<UInt8>(repeating: first)
        let lastStart = hay.count - pin.count
        var index = 0
        while index <= lastStart {
          // Whole blocks with no candidate are skipped; the one with a candidate is read a
          // byte at a time.
          while index + 16 <= hay.count
            && !any((raw.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self) | fold) .== pattern)
          {
            index += 16
          }
          while index <= lastStart && foldASCII(hay[index]) != first { index += 1 }
          guard index <= lastStart else { return false }
          var offset = 1
          while offset < pin.count && foldASCII(hay[index + offset]) == pin[offset] { offset += 1 }
          if offset == pin.count { return true }
          index += 1
        }
        return false
      }
    }
  }
}
