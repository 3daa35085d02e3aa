import XCTest

/// The canary checks say "not found" far more often than "found", so the search they use
/// must be shown to find: at the start, at the very end, after a false start, and not past
/// the end.
final class ByteSearchTests: XCTestCase {
  func testFindsEverywhereItIsAndNowhereElse() {
    let bytes = Array("aab canary ab canar".utf8)
    XCTAssertTrue(bytes.contains(bytes: Array("aab".utf8)))
    XCTAssertTrue(bytes.contains(bytes: Array("canary".utf8)))
    XCTAssertTrue(bytes.contains(bytes: Array("ab canar".utf8)), "at the very end, after a false start")
    XCTAssertFalse(bytes.contains(bytes: Array("canary!".utf8)))
    XCTAssertFalse(bytes.contains(bytes: Array("canars".utf8)), "not past the end")
    XCTAssertFalse(bytes.contains(bytes: []))
    XCTAssertFalse([UInt8]().contains(bytes: Array("a".utf8)))
    XCTAssertTrue([0, 0, 1].contains(bytes: [0, 1]), "NUL bytes are bytes")
  }
}
