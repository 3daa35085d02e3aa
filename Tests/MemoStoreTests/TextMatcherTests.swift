import MemoStore
import XCTest

/// `search`'s matcher over decrypted memo text.
final class TextMatcherTests: XCTestCase {
  func testMatcherIsCaseInsensitive() {
    XCTAssertTrue(TextMatcher(query: "MiLk").matches(Array("buy milk today".utf8)))
    XCTAssertTrue(TextMatcher(query: "today").matches(Array("buy milk TODAY".utf8)))
    XCTAssertFalse(TextMatcher(query: "milks").matches(Array("buy milk".utf8)))
    XCTAssertFalse(TextMatcher(query: "long query").matches(Array("short".utf8)))
    XCTAssertTrue(TextMatcher(query: "ÉTÉ").matches(Array("un été chaud".utf8)))
    XCTAssertFalse(TextMatcher(query: "hiver").matches(Array("un été chaud".utf8)))
  }

  /// The word-at-a-time scan finds what a plain folded comparison at every position finds:
  /// random text over a few letters of both cases and other bytes, every needle length
  /// across the word boundaries, matches at the start, the end and nowhere.
  func testTextMatcherAgreesWithAPlainScan() {
    func fold(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
    func plain(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
      guard hay.count >= needle.count else { return false }
      return (0...(hay.count - needle.count)).contains { start in
        needle.indices.allSatisfy { fold(hay[start + $0]) == fold(needle[$0]) }
      }
    }
    var random = SystemRandomNumberGenerator()
    let alphabet = Array("aAbB@`{[zZ 0\u{7F}".utf8) + [0xC3, 0xA9, 0xFF]
    for _ in 0..<3000 {
      let hay = (0..<Int.random(in: 0..<40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
      var needle = (0..<Int.random(in: 1..<5, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
      if Bool.random(using: &random), hay.count > 2 {
        let start = Int.random(in: 0..<hay.count, using: &random)
        needle = Array(hay[start..<min(hay.count, start + Int.random(in: 1..<12, using: &random))])
      }
      // Only ASCII needles take the byte path (and `plain` folds ASCII only).
      guard needle.allSatisfy({ $0 < 0x80 }) else { continue }
      let query = String(decoding: needle, as: UTF8.self)
      XCTAssertEqual(
        TextMatcher(query: query).matches(hay), plain(hay, needle), "\(hay) \(needle)")
    }
  }
}
