import Foundation
import MemoApp
import MemoCore
import XCTest

@testable import MemoCLI

/// `list` and `search` write their lines as bytes (`ListingLines`); these are the lines the
/// string code wrote before, character for character.
final class ListingLineTests: XCTestCase {
  /// The lines as they were built before (string interpolation), kept here as the reference.
  enum Reference {
    static func line(_ memo: MemoSummary, names: Names?) -> String {
      var text =
        memo.id.short + "  " + TimeText.local(memo.updated) + "  " + (memo.isPrivate ? "● " : "")
        + TerminalText.title(memo.title)
      if !memo.tags.isEmpty { text += "  " + memo.tags.map { "#" + $0 }.joined(separator: " ") }
      return text + OutputFormat.notebookSuffix(memo.notebook, names)
    }

    static func line(_ memo: MemoListing, names: Names?) -> String {
      var text = memo.id.short + "  " + TimeText.local(memo.updated) + "  " + (memo.isPrivate ? "● " : "")
      text += memo.title.map(TerminalText.title) ?? "(\(memo.isPrivate ? "private, " : "")locked)"
      if let tags = memo.tags, !tags.isEmpty { text += "  " + tags.map { "#" + $0 }.joined(separator: " ") }
      if let original = memo.conflictOf {
        text += "  [conflict copy of \(original.short), by \(names?.author(memo.author) ?? Names.unsigned)]"
      } else if memo.hasConflict {
        text += "  [conflict: see `memo-peer conflicts`]"
      }
      return text + OutputFormat.notebookSuffix(memo.notebook, names)
    }
  }

  static let titles = [
    "Call the plumber", "", "é ü ß — “quotes” 日本語 🙂", "evil \u{202E}txt.exe", "bell \u{7}", "back\\slash",
    String(repeating: "long ", count: 120), "C1 \u{85} and \u{2028}", "tab\there",
  ]

  func names() -> (Names, [NotebookID], [DeviceID]) {
    var names = Names(store: nil, trust: nil)
    let home = NotebookID("00112233445566778899aabbccddeeff")!
    let work = NotebookID("ffeeddccbbaa99887766554433221100")!
    let unknown = NotebookID("0123456789abcdef0123456789abcdef")!
    names.notebooks[home] = Notebook(id: home, name: "home", role: .member, created: 0, isDefault: true)
    names.notebooks[work] = Notebook(id: work, name: "work \u{202E}", role: .member, created: 0)
    let me = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
    let peer = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!
    let stranger = DeviceID(bytes: [UInt8](repeating: 3, count: 32))!
    names.me = me
    names.devices[peer] = "laptop"
    return (names, [home, work, unknown], [me, peer, stranger])
  }

  func testListAndSearchLinesAreTheStringLinesByteForByte() {
    let (names, notebooks, devices) = names()
    var listings: [MemoListing] = []
    var summaries: [MemoSummary] = []
    for (index, title) in Self.titles.enumerated() {
      for variant in 0..<8 {
        let notebook: NotebookID? = variant % 4 == 3 ? nil : notebooks[variant % 3]
        let author: DeviceID? = variant % 4 == 0 ? nil : devices[variant % 3]
        let tags = variant % 3 == 0 ? [] : ["home", "todo"].prefix(variant % 3).map { $0 }
        let updated = Timestamp(1_700_000_000_000 + index * 86_400_000 + variant * 3_700_000)
        listings.append(
          MemoListing(
            id: MemoID(), title: variant == 5 ? nil : title, tags: variant == 5 || variant == 6 ? nil : tags,
            created: 0, updated: updated, isPrivate: variant % 2 == 1, isPinned: variant == 2, revision: 3,
            conflictOf: variant == 7 ? MemoID() : nil, hasConflict: variant == 4, notebook: notebook, author: author))
        summaries.append(
          MemoSummary(
            id: MemoID(), title: title, tags: tags, created: 0, updated: updated, isPrivate: variant % 2 == 0,
            revision: 1, notebook: notebook, author: author))
      }
    }
    for names in [names, nil] {
      // One writer for the whole run, as `list` uses it (its notebook suffix is kept).
      var lines = ListingLines(names: names)
      for memo in listings {
        var bytes: [UInt8] = []
        lines.append(memo, to: &bytes)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), Reference.line(memo, names: names))
      }
      for memo in summaries {
        var bytes: [UInt8] = []
        lines.append(memo, to: &bytes)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), Reference.line(memo, names: names))
      }
    }
  }
}
