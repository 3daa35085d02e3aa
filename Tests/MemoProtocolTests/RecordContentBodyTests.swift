import MemoCore
import MemoProtocol
import XCTest

/// `RecordContent.bodyRange` finds the body in opened content as `decode` reads it, for both
/// content versions, and refuses lengths that run past the end.
final class RecordContentBodyTests: XCTestCase {
  let notebook = NotebookID(String(repeating: "a", count: 32))!

  func revision(title: String, body: String) -> SyncRevision {
    SyncRevision(
      memo: MemoID(),
      head: HeadSummary(dot: Dot(origin: "p", seq: 1), clock: VersionVector(["p": 1]), revision: 3, isDeleted: false),
      created: 1, updated: 2, isPrivate: false, title: title, body: body, tags: ["x", "y"], notebook: notebook)
  }

  func body(_ content: [UInt8]) -> String? {
    content.withUnsafeBytes { bytes in
      RecordContent.bodyRange(in: bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
    }
  }

  func testTheBodyIsFoundInBothVersionsAsDecodeReadsIt() {
    for (title, text) in [("t", "a body"), ("", ""), ("ünï", String(repeating: "long body ", count: 500))] {
      let made = revision(title: title, body: text)
      XCTAssertEqual(body(RecordContent.encode(made)), text, "padded")
      XCTAssertEqual(body(RecordContent.encodeUnpadded(made)), text, "version 1")
    }
  }

  func testLengthsPastTheEndAndOtherVersionsAreRefused() {
    var content = RecordContent.encodeUnpadded(revision(title: "t", body: "a body"))
    XCTAssertNil(body(Array(content.prefix(content.count - 20))), "the body runs past the end")
    XCTAssertNil(body(Array(content.prefix(30))), "the title's length is cut")
    content[0] = 9
    XCTAssertNil(body(content), "an unknown version")
    XCTAssertNil(body([]))
    XCTAssertNil(body([RecordContent.paddedVersion, 0xFF, 0xFF, 0xFF, 0xFF]), "a padded length past the end")
  }
}
