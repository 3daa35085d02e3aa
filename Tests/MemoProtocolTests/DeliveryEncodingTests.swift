import Foundation
import MemoCore
import XCTest

@testable import MemoProtocol

/// The delivery memo's JSON is written directly (it runs for every entry of a batch on both
/// sides); it must be exactly what JSONEncoder with sorted keys makes, byte for byte, so
/// sizes and sealed payloads are the same on every path and in every version.
final class DeliveryEncodingTests: XCTestCase {
  func assertSameAsJSONEncoder(_ content: DeliveryMessage.Content, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(
      String(decoding: DeliveryMessage.encode(content), as: UTF8.self),
      String(decoding: PeerMessage.encode(content), as: UTF8.self), file: file, line: line)
    XCTAssertEqual(DeliveryMessage.decode(DeliveryMessage.encode(content)), content, file: file, line: line)
    let entry = DeliveryMessage.Batch.encodedEntry(id: "entry/\"1\"", memo: content)
    XCTAssertEqual(
      entry, PeerMessage.encode(DeliveryMessage.Deliver(id: "entry/\"1\"", memo: content)), file: file, line: line)
  }

  func testEveryASCIICharacterAndNonASCIITextAreWrittenAsJSONEncoderWritesThem() {
    let ascii = String(String.UnicodeScalarView((0..<128).compactMap(Unicode.Scalar.init)))
    for text in [ascii, "", "plain", "é ü ß — “quotes” 日本語 🙂 \u{2028}\u{2029} \u{7F} \u{FEFF}", "a\\b/c\"d\u{0}e"] {
      assertSameAsJSONEncoder(
        DeliveryMessage.Content(title: text, body: text + "\n" + text, tags: [text, "x"], isPrivate: true, sent: 0))
    }
    for sent: Int64 in [0, 1, -1, Int64(1) << 53, .max, .min] {
      assertSameAsJSONEncoder(DeliveryMessage.Content(title: "t", body: "b", tags: [], isPrivate: false, sent: sent))
    }
  }

  func testASentRevisionWithItsRecordIsWrittenAsJSONEncoderWritesIt() {
    var memo = Memo(
      id: MemoID(), title: "t", body: "b", tags: ["a"], created: 5, updated: 6, isPrivate: false, revision: 3,
      origin: .replica("o"))
    memo.clock = VersionVector()
    var content = DeliveryMessage.Content(
      title: "t/1", body: "b", tags: ["a", "b"], isPrivate: false, sent: 9,
      revision: DeliveryMessage.SentRevision(memo: memo))
    content.revision?.clock = ["aa": 1, "bb": 2]
    content.revision?.record = DeliveryMessage.SentRecord(
      notebook: "n", keyID: "k", sealed: "c2VhbGVk+/==", signature: nil, binding: "Ymlu")
    assertSameAsJSONEncoder(content)
  }

  /// A queued memo's stored JSON goes into a batch as it is only when it keeps the batch
  /// one valid JSON document; anything else is decoded and encoded again by the store.
  func testOnlyStoredJSONWithAMemosShapeIsSentAsItIs() throws {
    let content = DeliveryMessage.Content(title: "t", body: "b \u{1}\"", tags: ["x"], isPrivate: true, sent: 7)
    let stored = DeliveryMessage.encode(content)
    XCTAssertEqual(DeliveryMessage.sendableJSON(stored), stored)
    let entry = DeliveryMessage.Batch.encodedEntry(id: "e", memoJSON: stored)
    XCTAssertEqual(entry, DeliveryMessage.Batch.encodedEntry(id: "e", memo: content))
    let batch = DeliveryMessage.Batch.payload(encodedEntries: [entry, entry])
    XCTAssertEqual(
      PeerMessage.decode(DeliveryMessage.Batch.self, from: batch)?.entries.map(\.memo), [content, content])
    let refused = [
      "plain text queued before memos were JSON", #"{"body":"b","sent":1"#, #"{"body":"b","sent":"1"}"#,
      #"{"title":"no body","sent":1}"#, #"{"body":"no time"}"#, #"[{"body":"b","sent":1}]"#, "",
      #"{"body":"b","sent":1} {}"#, #"{"body":"b","sent":1.5}"#,
    ]
    for text in refused {
      XCTAssertNil(DeliveryMessage.sendableJSON(Array(text.utf8)), text)
    }
    XCTAssertNil(DeliveryMessage.sendableJSON([UInt8(ascii: "{"), 0xFF, UInt8(ascii: "}")]), "not UTF-8")
    // Another shape of a memo (keys in another order, a field this version does not know):
    // still one valid JSON object, which the receiver checks as a memo on its own.
    let other = Array(#"{"sent":1,"title":"t","body":"b","tags":[],"private":false,"later":[1]}"#.utf8)
    XCTAssertEqual(DeliveryMessage.sendableJSON(other), other)
  }

  func testRandomTextIsWrittenAsJSONEncoderWritesIt() {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<200 {
      let scalars = (0..<Int.random(in: 0..<64, using: &generator)).compactMap { _ in
        Unicode.Scalar(
          Bool.random(using: &generator)
            ? UInt32.random(in: 0..<0x80, using: &generator) : UInt32.random(in: 0x80..<0x11_0000, using: &generator))
      }
      let text = String(String.UnicodeScalarView(scalars))
      assertSameAsJSONEncoder(DeliveryMessage.Content(title: text, body: text, tags: [text], isPrivate: false, sent: 1))
    }
  }
}
