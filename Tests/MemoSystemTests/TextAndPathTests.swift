import MemoSystem
import XCTest

/// What replaced Foundation's NSString paths and `trimmingCharacters(in:)` behaves as they
/// did on the inputs memo-peer gives them.
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
}
