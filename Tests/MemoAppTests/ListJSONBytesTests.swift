import Foundation
import MemoApp
import MemoCore
import MemoPresentation
import XCTest

/// `list --json` and `search --json` write each memo without JSONEncoder; the bytes must be
/// the encoder's, byte for byte (the stable `--json` interface, docs/CLI.md).
final class ListJSONBytesTests: XCTestCase {
  func names() -> (Names, [NotebookID], [DeviceID]) {
    var names = Names(store: nil, trust: nil)
    let home = NotebookID("00112233445566778899aabbccddeeff")!
    let work = NotebookID("ffeeddccbbaa99887766554433221100")!
    let unknown = NotebookID("0123456789abcdef0123456789abcdef")!
    names.notebooks[home] = Notebook(
      id: home, name: "home", role: .member, created: 0, isDefault: true)
    names.notebooks[work] = Notebook(id: work, name: "work/\"q\" \u{1}", role: .member, created: 0)
    let me = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
    let peer = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!
    let stranger = DeviceID(bytes: [UInt8](repeating: 3, count: 32))!
    names.me = me
    names.devices[peer] = "laptop \"b\"/\u{7F}"
    return (names, [home, work, unknown], [me, peer, stranger])
  }

  static let ascii = String(String.UnicodeScalarView((0..<128).compactMap(Unicode.Scalar.init)))
  static let texts = [
    ascii, "", "plain", "é ü ß — “quotes” 日本語 🙂 \u{2028}\u{2029} \u{7F} \u{FEFF}",
    "a\\b/c\"d\u{0}e",
  ]

  /// Every memo written both ways, through one writer each, so the shared parts (author,
  /// notebook) are reused from memo to memo as in a real listing.
  func assertSameAsEncoder(
    listings: [MemoListing], summaries: [MemoSummary], names: Names?,
    file: StaticString = #filePath,
    line: UInt = #line
  ) {
    for locked: Bool? in [nil, false, true] {
      var direct: [UInt8] = []
      var encoded: [UInt8] = []
      var directWriter = MemoListJSONWriter(locked: locked, names: names) { direct += $0 }
      var encodedWriter = MemoListJSONWriter(locked: locked) { encoded += $0 }
      for memo in listings {
        directWriter.add(memo)
        encodedWriter.add(MemoSummaryJSON(memo, names: names))
      }
      for memo in summaries {
        directWriter.add(memo)
        encodedWriter.add(MemoSummaryJSON(memo, names: names))
      }
      directWriter.finish(relayed: nil)
      encodedWriter.finish(relayed: nil)
      XCTAssertEqual(
        String(decoding: direct, as: UTF8.self), String(decoding: encoded, as: UTF8.self),
        file: file, line: line)
    }
  }

  func testListedMemosAreWrittenAsTheEncoderWritesThem() {
    let (allNames, notebooks, devices) = names()
    var listings: [MemoListing] = []
    var summaries: [MemoSummary] = []
    for (index, text) in Self.texts.enumerated() {
      for variant in 0..<8 {
        let notebook: NotebookID? = variant % 4 == 3 ? nil : notebooks[variant % 3]
        let author: DeviceID? = variant % 4 == 0 ? nil : devices[variant % 3]
        let tags = variant % 3 == 0 ? [] : [text, "todo"].prefix(variant % 3).map { $0 }
        listings.append(
          MemoListing(
            id: MemoID(), title: variant == 5 ? nil : text,
            tags: variant == 5 || variant == 6 ? nil : tags,
            created: Timestamp(index * 1000 + variant), updated: 1_700_000_000_123,
            isPrivate: variant % 2 == 1,
            isPinned: variant == 2, revision: Int64(variant + 1),
            conflictOf: variant == 7 ? MemoID() : nil,
            hasConflict: variant == 4, notebook: notebook, author: author))
        summaries.append(
          MemoSummary(
            id: MemoID(), title: text, tags: tags, created: 5,
            updated: Timestamp(variant) * 999_999_999,
            isPrivate: variant % 2 == 0, revision: .max - Int64(variant), notebook: notebook,
            author: author))
      }
    }
    assertSameAsEncoder(listings: listings, summaries: summaries, names: allNames)
    assertSameAsEncoder(listings: listings, summaries: summaries, names: nil)
    // A listing that starts with no memo and one that has only a locked one.
    assertSameAsEncoder(listings: [], summaries: [], names: allNames)
    assertSameAsEncoder(
      listings: [
        MemoListing(
          id: MemoID(), title: nil, tags: nil, created: 0, updated: 0, isPrivate: true,
          isPinned: false, revision: 1)
      ], summaries: [], names: allNames)
  }
}
