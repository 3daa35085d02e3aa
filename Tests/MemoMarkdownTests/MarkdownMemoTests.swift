import MemoCore
import XCTest

@testable import MemoMarkdown

/// The Markdown file format: what memo-peer writes reads back the same; files other
/// programs wrote give titles, tags and times; hostile front matter gets a clear refusal
/// that never repeats the file's text.
final class MarkdownMemoTests: XCTestCase {
  /// Whose revisions the memos are: a Markdown file never names one.
  static let replica = ReplicaID(String(repeating: "a", count: 32))!

  func testRenderedMemoReadsBackTheSame() throws {
    let memo = Memo(
      id: MemoID(), title: "Groceries: \"weekly\" — list \\ #x", body: "---\nnot front matter\n#nottag\n\n",
      tags: ["home", "a/b.c"], created: 1_764_547_200_123, updated: 1_764_547_299_001, isPrivate: true, revision: 7,
      origin: .replica(MarkdownMemoTests.replica))
    let text = MarkdownMemo.render(memo)
    let read = try MarkdownMemo.parse(text, source: "f.md", modified: 0)
    XCTAssertEqual(
      read,
      MarkdownMemo(
        id: memo.id, title: memo.title, body: memo.body, tags: memo.tags, created: memo.created,
        updated: memo.updated, isPrivate: true, revision: 7))
  }

  func testExactMilliseconds() {
    XCTAssertEqual(MarkdownMemo.isoTime(1_764_547_200_123), "2025-12-01T00:00:00.123Z")
    XCTAssertEqual(MarkdownMemo.isoTime(0), "1970-01-01T00:00:00.000Z")
    XCTAssertEqual(MarkdownMemo.isoTime(951_782_400_999), "2000-02-29T00:00:00.999Z")
    for stamp: Timestamp in [1, 999, 1_000, 86_399_999, 1_764_547_200_123, 4_102_444_800_000] {
      XCTAssertEqual(MarkdownMemo.parseTime(MarkdownMemo.isoTime(stamp)), stamp)
    }
    XCTAssertEqual(MarkdownMemo.parseTime("2026-11-29"), 1_795_910_400_000)
    XCTAssertNil(MarkdownMemo.parseTime("yesterday"))
  }

  func testForeignFilesGiveTitleTagsAndTimes() throws {
    let plain = try MarkdownMemo.parse(
      "Intro line\n\n# The Heading ##\n\nText with #todo and #home. Not #1x? (#paren) `#code`\n```\n#fenced\n```\n",
      source: "a.md", modified: 42_000)
    XCTAssertNil(plain.id)
    XCTAssertEqual(plain.title, "The Heading")
    XCTAssertEqual(plain.tags, ["todo", "home", "1x", "paren"])
    XCTAssertEqual(plain.created, 42_000)
    XCTAssertEqual(plain.updated, 42_000)
    let jekyll = try MarkdownMemo.parse(
      "---\ntitle: 'It''s here'\ndate: 2026-11-29\ntags:\n  - one\n  - \"two\"\nlayout: post # ignored\n---\nBody #three\n",
      source: "b.md", modified: 0)
    XCTAssertEqual(jekyll.title, "It's here")
    XCTAssertEqual(jekyll.tags, ["one", "two", "three"])
    XCTAssertEqual(jekyll.created, 1_795_910_400_000)
    XCTAssertEqual(jekyll.body, "Body #three\n")
    let comma = try MarkdownMemo.parse("---\ntags: a, b\n---\nx", source: "c.md", modified: 0)
    XCTAssertEqual(comma.tags, ["a", "b"])
  }

  func testHostileFrontMatterIsRefusedWithoutItsText() {
    let secret = "SECRET-TEXT"
    let cases: [(String, String)] = [
      ("---\ntitle: \(secret)\n", "no closing --- line"),
      ("---\n\(secret)\n---\n", "line 2: front matter must be `key: value` lines"),
      ("---\ntitle: a\ntitle: \(secret)\n---\n", "line 3: the key title appears twice"),
      ("---\nmeta:\n  nested: \(secret)\n---\n", "line 3: a value is a mapping"),
      ("---\nmeta: {a: \(secret)}\n---\n", "line 2: a value is a mapping"),
      ("---\ntitle: \"\(secret)\n---\n", "line 2: found unexpected end of stream"),
      ("---\ntitle: \"\(secret) \\q\"\n---\n", "line 2: found unknown escape character"),
      ("---\ntags: [\(secret), [x]]\n---\n", "line 2: a list holds only plain values"),
      ("---\ntags:\n  - a\n  - - \(secret)\n---\n", "line 4: a list holds only plain values"),
      ("---\ntags: [\(secret)\n---\n", "line 3: did not find expected"),
      ("---\ntitle: &anchor \(secret)\n---\n", "line 2: anchors and aliases"),
      ("---\na: x\n\ntitle: *anchor\n---\n", "line 4: anchors and aliases"),
      ("---\ntitle: !secret \(secret)\n---\n", "line 2: tags (`!name`) are not supported"),
      ("---\n? [\(secret)]\n: v\n---\n", "line 2: a key must be"),
      ("---\nid: \(secret)\n---\n", "id is not a memo id"),
      ("---\ncreated: \(secret)\n---\n", "created is not a date"),
      ("---\nprivate: maybe\(secret)\n---\n", "private must be true or false"),
      ("---\nrevision: -1\n---\n", "revision must be"),
      ("---\n" + String(repeating: "k: v\n", count: 300) + "---\n", "longer than 200 lines"),
      ("---\nk: \"" + String(repeating: "x", count: 17_000) + "\"\n---\n", "16384 bytes"),
      ("---\n\(secret) key: v\n---\n", "line 2: a key must be"),
      ("---\n" + String(repeating: "k", count: 65) + ": v\n---\n", "line 2: a key must be"),
      ("---\ntags: [" + String(repeating: "a,", count: 300) + "a]\n---\n", "more than 256 items"),
      (
        "---\ntags: [\n" + String(repeating: "a, a, a,\n", count: 86) + "a]\n---\n", "line 88: a list has more than 256"
      ),
    ]
    for (text, expected) in cases {
      XCTAssertThrowsError(try MarkdownMemo.parse(text, source: "evil.md", modified: 0), expected) { error in
        let error = error as? MemoPeerError
        XCTAssertEqual(error?.code, .invalidInput, expected)
        XCTAssertTrue(error?.message.hasPrefix("evil.md: ") ?? false, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains(expected) ?? false, "\(expected): \(String(describing: error))")
        XCTAssertFalse(error?.message.contains(secret) ?? true, "never repeats the text")
      }
    }
  }

  /// The escape a real vault held, which the hand-written reader refused: `\_` in double
  /// quotes is a non-breaking space (YAML 1.1 and 1.2).
  func testDoubleQuotedEscapesReadAsYAMLDoes() throws {
    let memo = try MarkdownMemo.parse(
      "---\ntitle: \"a\\_b \\x41\\u00e9 \\N\"\ntags: [\"tab\\tx\"]\n---\nbody", source: "n.md", modified: 0)
    XCTAssertEqual(memo.title, "a\u{00A0}b A\u{00E9} \u{0085}")
    XCTAssertEqual(memo.tags, ["tab\tx"])
  }

  /// The YAML real vaults (Obsidian, Jekyll, Hugo, pandoc) write.
  func testYAMLFormsRealVaultsUse() throws {
    let text = [
      "\u{FEFF}---",
      "# a comment line",
      "\"title\": 'It''s a \"title\"'  # trailing comment",
      "'created': 2026-11-29",
      "tags:",
      "- one",
      "-   \"two\"",
      "-",
      "aliases: [x, 'y, z']",
      "cssclasses:",
      "empty: []",
      "nothing: ~",
      "summary: >",
      "  folded",
      "  text",
      "notes: |",
      "  kept",
      "  lines",
      "plain: several",
      "  words on",
      "  lines",
      "private: yes",
      "...",
      "",
      "Body",
      "kept as written",
      "",
    ].joined(separator: "\r\n")
    let memo = try MarkdownMemo.parse(text, source: "v.md", modified: 0)
    XCTAssertEqual(memo.title, "It's a \"title\"")
    XCTAssertEqual(memo.tags, ["one", "two"])
    XCTAssertEqual(memo.created, 1_795_910_400_000)
    XCTAssertTrue(memo.isPrivate)
    XCTAssertEqual(memo.body, "Body\r\nkept as written\r\n")
    let (matter, _) = try FrontMatter.split(text, source: "v.md")
    let fields = try XCTUnwrap(matter)
    XCTAssertEqual(fields["aliases"], .list(["x", "y, z"]))
    XCTAssertEqual(fields["empty"], .list([]))
    XCTAssertNil(fields["cssclasses"], "a null value is no value")
    XCTAssertNil(fields["nothing"])
    XCTAssertEqual(fields["summary"], .text("folded text\n"))
    XCTAssertEqual(fields["notes"], .text("kept\nlines\n"))
    XCTAssertEqual(fields["plain"], .text("several words on lines"))
    XCTAssertEqual(
      fields.entries.map(\.key),
      ["title", "created", "tags", "aliases", "empty", "summary", "notes", "plain", "private"])
    let (empty, body) = try FrontMatter.split("---\n# only a comment\n---\nx", source: "e.md")
    XCTAssertEqual(empty, FrontMatter())
    XCTAssertEqual(body, "x")
  }

  func testFileNamesAreSlugsWithTheShortID() {
    let memo = Memo(
      id: MemoID("3f2a9c1d-0000-4000-8000-000000000000")!, title: "Grocéries / Week 12!", body: "x", tags: [],
      created: 0, updated: 0, isPrivate: false, revision: 1, origin: .replica(MarkdownMemoTests.replica))
    XCTAssertEqual(MarkdownMemo.fileName(for: memo), "groc-ries-week-12-3f2a9c1d.md")
    var dots = memo
    dots.title = "../.."
    XCTAssertEqual(MarkdownMemo.fileName(for: dots), "memo-3f2a9c1d.md")
  }
}

/// What replaced ISO8601DateFormatter reads the times memo-peer and other programs write as
/// the formatter did.
final class MarkdownTimeTests: XCTestCase {
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
