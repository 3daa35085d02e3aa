import MemoCore
import XCTest

final class MemoRulesTests: XCTestCase {
  func testTitleIsDerivedFromFirstNonEmptyLine() throws {
    let draft = try MemoRules.validated(MemoDraft(title: "  ", body: "\n\n  Groceries  \nmilk"))
    XCTAssertEqual(draft.title, "Groceries")
    XCTAssertEqual(MemoRules.derivedTitle(from: ""), "Untitled")
    let long = String(repeating: "x", count: 200)
    XCTAssertEqual(MemoRules.derivedTitle(from: long).count, MemoRules.derivedTitleCharacters)
  }

  func testEmptyMemoIsRefused() {
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: "", body: ""))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
    }
  }

  func testBodyLimitIsStatedAndTextIsNotQuoted() {
    let body = String(repeating: "SECRETWORD", count: 7000)
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: "t", body: body))) { error in
      let error = error as? MemoPeerError
      XCTAssertEqual(error?.code, .tooLarge)
      XCTAssertTrue(error?.message.contains("65536") ?? false)
      XCTAssertFalse(error?.message.contains("SECRETWORD") ?? true)
    }
    XCTAssertNoThrow(try MemoRules.checkBody(String(repeating: "a", count: MemoRules.maxBodyBytes)))
  }

  func testTagsAreNormalisedAndCheckedWithoutEcho() throws {
    XCTAssertEqual(
      try MemoRules.normalizeTags(["Work", "work", " home ", "a/b.c-d_e"]), ["work", "home", "a/b.c-d_e"])
    for bad in ["", "two words", "comma,tag", String(repeating: "x", count: 65), "new\nline"] {
      XCTAssertThrowsError(try MemoRules.normalizeTags(["ok", bad])) { error in
        XCTAssertEqual((error as? MemoPeerError)?.code, .invalidInput)
        XCTAssertTrue((error as? MemoPeerError)?.message.contains("tag number 2") ?? false)
      }
    }
    XCTAssertThrowsError(try MemoRules.normalizeTags((0...32).map { "t\($0)" }))
    // Plain ASCII takes a shorter path; the rules are the same on both.
    let longest = String(repeating: "x", count: 64)
    XCTAssertEqual(try MemoRules.normalizeTags([longest, "ÉTÉ", "\u{A0}x.y\u{A0}"]), [longest, "été", "x.y"])
    XCTAssertEqual("\u{A0}title\u{85}".trimmingWhitespace, "title")
    XCTAssertEqual("\ttitle two\r\n".trimmingWhitespace, "title two")
    XCTAssertEqual("title\u{301}".trimmingWhitespace, "title\u{301}")
  }

  func testTitleMustBeOneLine() {
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: "a\u{7}b", body: "x")))
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: "a\u{7f}b", body: "x")))
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: "é\u{9f}", body: "x")))
    XCTAssertThrowsError(try MemoRules.validated(MemoDraft(title: String(repeating: "é", count: 300), body: "x"))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .tooLarge)
    }
  }

  func testInvalidUTF8NamesTheOffset() {
    let bytes: [UInt8] = Array("héllo ".utf8) + [0xFF, 0x41]
    XCTAssertThrowsError(try MemoRules.decodeUTF8(bytes, source: "stdin")) { error in
      let error = error as? MemoPeerError
      XCTAssertEqual(error?.code, .invalidUTF8)
      XCTAssertTrue(error?.message.contains("offset 7") ?? false, error?.message ?? "")
    }
    XCTAssertEqual(try MemoRules.decodeUTF8(Array("ünïcödé ✓".utf8), source: "stdin"), "ünïcödé ✓")
  }

  func testChangesApplyWithTheSameRules() throws {
    let memo = Memo(
      id: MemoID(), title: "Old", body: "body", tags: ["a"], created: 1, updated: 1, isPrivate: false, revision: 1,
      origin: .replica("r"))
    let changed = try MemoRules.applying(MemoChange(title: "", body: "New first line\nrest", tags: ["B"]), to: memo)
    XCTAssertEqual(changed.title, "New first line")
    XCTAssertEqual(changed.tags, ["b"])
    XCTAssertThrowsError(try MemoRules.applying(MemoChange(tags: ["bad tag"]), to: memo))
  }
}

final class MemoIDTests: XCTestCase {
  func testIDsAreLowercaseUUIDs() {
    let id = MemoID()
    XCTAssertEqual(id.rawValue, id.rawValue.lowercased())
    XCTAssertEqual(MemoID(id.rawValue.uppercased()), id)
    XCTAssertNil(MemoID("not-a-uuid"))
    XCTAssertEqual(id.short.count, 8)
  }

  func testPrefixesAreHexAndNeverEchoed() throws {
    XCTAssertEqual(try IDPrefix("AB12-").rawValue, "ab12-")
    for bad in ["", "xyz", "ab*", String(repeating: "a", count: 37), "my secret"] {
      XCTAssertThrowsError(try IDPrefix(bad)) { error in
        XCTAssertFalse(bad.count > 3 && (error as? MemoPeerError)?.message.contains(bad) == true)
      }
    }
  }
}

final class TagListTests: XCTestCase {
  func testTagListRoundTrips() {
    XCTAssertEqual(TagList.decode(TagList.encode(["a", "b/c"])), ["a", "b/c"])
    XCTAssertEqual(TagList.decode(Array("\n\nhome\n\nété\n".utf8)), ["home", "été"])
    XCTAssertEqual(TagList.decode(Array("\n".utf8)), [])
    XCTAssertEqual(TagList.decode([]), [])
    XCTAssertEqual(TagList.decode(TagList.encode([])), [])
  }
}

final class SealingContextTests: XCTestCase {
  func testContextsDifferByIDFieldRevisionAndPeer() {
    let a = MemoID()
    let b = MemoID()
    let contexts = [
      SealingContext.memoField(.title, id: a, revision: 1), SealingContext.memoField(.body, id: a, revision: 1),
      SealingContext.memoField(.title, id: a, revision: 2), SealingContext.memoField(.title, id: b, revision: 1),
      SealingContext.outboxEntry(id: "e", recipient: "p"), SealingContext.outboxEntry(id: "e", recipient: "q"),
      SealingContext.inboxEntry(id: "e", sender: "p"), SealingContext.keyCheck,
    ]
    XCTAssertEqual(Set(contexts).count, contexts.count)
  }

  /// Every memo ever sealed is opened with these bytes (docs/FORMATS.md): they must not drift.
  func testMemoFieldIsTheGenericFormByteForByte() {
    let id = MemoID(canonical: "3f2a9c1d-0000-4000-8000-00000000abcd")!
    // One buffer reused across memos, fields and revisions, as `list` and `search` use it.
    var reused: [UInt8] = []
    var buffer = SealingContext.MemoFieldBuffer()
    for id in [id, MemoID(), id] {
      for field in SealingContext.MemoField.allCases {
        for revision: Int64 in [1, 9, 10, 42, 0, -1, 9_007_199_254_740_992, .max, .min] {
          let expected = Array("memo-peer/1\0memo\0\(id.rawValue)\0\(field.rawValue)\0\(revision)".utf8)
          XCTAssertEqual(SealingContext.memoField(field, id: id, revision: revision), expected)
          SealingContext.memoField(field, id: id, revision: revision, into: &reused)
          XCTAssertEqual(reused, expected)
          buffer.set(field, id: id, revision: revision)
          XCTAssertEqual(buffer.bytes, expected)
        }
      }
    }
  }

  /// Every record is sealed and signed over these bytes (docs/PROTOCOL.md, "Records"): the
  /// clear fields, then the clock as u32 count and, by origin, u32 length, origin, u64 seq.
  func testRecordContextIsTheDocumentedLayoutByteForByte() throws {
    let notebook = try XCTUnwrap(NotebookID(String(repeating: "ab", count: 16)))
    let memo = MemoID(canonical: "3f2a9c1d-0000-4000-8000-00000000abcd")!
    let low = try XCTUnwrap(ReplicaID(String(repeating: "1", count: 32)))
    let high = try XCTUnwrap(ReplicaID(String(repeating: "f", count: 32)))
    let origin = String(repeating: "1", count: 32)
    let clear = "memo-peer/1\0record\0\(notebook.rawValue)\0key7\0\(memo.rawValue)\0\(origin)\0"
    let entry = { (replica: ReplicaID, seq: UInt8) -> [UInt8] in
      [0, 0, 0, 32] + Array(replica.rawValue.utf8) + [0, 0, 0, 0, 0, 0, 0, seq]
    }
    let one = VersionVector([low: 9])
    XCTAssertEqual(
      SealingContext.record(notebook: notebook, keyID: "key7", memo: memo, dot: Dot(origin: low, seq: 9), clock: one),
      Array((clear + "9\0").utf8) + [0, 0, 0, 1] + entry(low, 9))
    XCTAssertEqual(one.encoded(), [0, 0, 0, 1] + entry(low, 9))
    let two = VersionVector([high: 3, low: 9])
    XCTAssertEqual(
      SealingContext.record(
        notebook: notebook, keyID: "key7", memo: memo, dot: Dot(origin: low, seq: 300), clock: two),
      Array((clear + "300\0").utf8) + [0, 0, 0, 2] + entry(low, 9) + entry(high, 3))
    XCTAssertEqual(VersionVector(encoded: two.encoded()), two)
    XCTAssertEqual(VersionVector().encoded(), [0, 0, 0, 0])
  }
}
