import MemoCore
import XCTest

/// What replaced Foundation's NSString paths, `trimmingCharacters(in:)` and
/// ISO8601DateFormatter behaves as they did on the inputs memo-peer gives them.
final class TextAndPathTests: XCTestCase {
  func testPathPartsAsNSStringGaveThem() {
    let cases: [(String, parent: String, last: String, ext: String)] = [
      ("/a/b", "/a", "b", ""), ("/a/b/", "/a", "b", ""), ("/a", "/", "a", ""), ("/", "/", "/", ""),
      ("b", "", "b", ""), ("notes/x.md", "notes", "x.md", "md"), ("/x/.md", "/x", ".md", ""),
      ("/x//y.tar.gz", "/x", "y.tar.gz", "gz"), ("", "", "", ""),
    ]
    for (path, parent, last, ext) in cases {
      XCTAssertEqual(PathText.parent(path), parent, path)
      XCTAssertEqual(PathText.lastComponent(path), last, path)
      XCTAssertEqual(PathText.pathExtension(path), ext, path)
    }
  }

  func testTrimmingBlanksKeepsLineBreaksAndInnerSpace() {
    XCTAssertEqual(" \t a b \u{00A0}\u{2003}".trimmingBlanks(), "a b")
    XCTAssertEqual("\nx\n".trimmingBlanks(), "\nx\n")
    XCTAssertEqual("   ".trimmingBlanks(), "")
    XCTAssertEqual("\"'x'\"".trimming(["\"", "'"]), "x")
  }

  func testTimesParseAsTheFormatterDid() {
    XCTAssertEqual(MarkdownMemo.parseTime("2026-11-29T20:15:03.123Z"), 1_795_983_303_123)
    XCTAssertEqual(MarkdownMemo.parseTime("2026-11-29T20:15:03Z"), 1_795_983_303_000)
    XCTAssertEqual(MarkdownMemo.parseTime("2026-11-29T22:15:03+02:00"), 1_795_983_303_000)
    XCTAssertEqual(MarkdownMemo.parseTime("\"2026-11-29\""), 1_795_910_400_000)
    for bad in ["2026-11-29Tjunk", "junk", "", "1969-12-31T23:59:59Z", "2026-13-01"] {
      XCTAssertNil(MarkdownMemo.parseTime(bad), bad)
    }
  }
}
