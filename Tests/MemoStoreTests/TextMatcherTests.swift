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
}
