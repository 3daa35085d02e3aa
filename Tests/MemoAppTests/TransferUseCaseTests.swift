import Foundation
import MemoApp
import MemoCore
import MemoStore
import MemoTransfer
import XCTest

/// init, export and import, and the reads that never make a node (widget, completion).
final class TransferUseCaseTests: XCTestCase {
  func testAnArchiveMovesEveryMemoToAnotherNodeAndAWrongPassphraseAddsNothing() throws {
    let from = try AppFixture()
    try from.memo("first", title: "One")
    try from.memo("second", title: "Two", tags: ["home"])
    let archive = from.root + "/memos.mpa"
    var asked = 0
    let count = try from.app().transfer.exportArchive(
      to: .file(archive),
      passphrase: {
        asked += 1
        return from.secret()
      }, kdf: AppFixture.fastKDF)
    XCTAssertEqual(count, 2)
    XCTAssertEqual(asked, 1)
    let to = try AppFixture()
    XCTAssertThrowsError(try to.app().transfer.importArchive(archive, passphrase: { to.secret("not the one") })) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .passphrase)
    }
    XCTAssertEqual(try to.app().memos.list().memos.count, 0)
    XCTAssertEqual(try to.app().transfer.importArchive(archive, passphrase: { to.secret() }).added, 2)
    XCTAssertEqual(
      try to.app().transfer.importArchive(archive, passphrase: { to.secret() }), ImportCounts(unchanged: 2))
    XCTAssertEqual(Set(try to.app().memos.list().memos.compactMap(\.title)), ["One", "Two"])
  }

  func testAnExportIsRefusedWhileLockedBeforeThePassphraseIsAsked() throws {
    let node = try AppFixture()
    try node.memo("text")
    try node.protect()
    try node.keys.lock()
    XCTAssertThrowsError(
      try node.app().transfer.exportArchive(
        to: .file(node.root + "/never.mpa"),
        passphrase: {
          XCTFail("not asked")
          return node.secret()
        })
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked) }
    XCTAssertFalse(FileManager.default.fileExists(atPath: node.root + "/never.mpa"))
  }

  func testMarkdownFilesRoundTrip() throws {
    let from = try AppFixture()
    let memo = try from.memo("buy paint", title: "Plan", tags: ["house"])
    let folder = from.root + "/markdown"
    XCTAssertEqual(try from.app().transfer.exportMarkdown(to: folder, force: false), 1)
    let to = try AppFixture()
    var readAll = false
    let result = try to.app().transfer.importMarkdown([folder], read: { readAll = true })
    XCTAssertTrue(readAll)
    XCTAssertEqual(result.files, 1)
    XCTAssertEqual(result.summary.added, 1)
    XCTAssertEqual(result.refused, [])
    XCTAssertEqual(try to.app().memos.show(memo.id.rawValue).body, "buy paint")
    XCTAssertEqual(try to.app().memos.show(memo.id.rawValue).tags, ["house"])
  }

  func testTheWidgetAndCompletionNeverMakeANode() throws {
    let node = try AppFixture()
    let input = try node.app().info.widget()
    XCTAssertNil(input.memo)
    XCTAssertEqual(input.outboxWaiting, 0)
    XCTAssertEqual(try node.app().info.memoIDs(prefix: "", limit: 10), [])
    XCTAssertEqual(try node.app().info.notebookNames(), [])
    XCTAssertFalse(FileManager.default.fileExists(atPath: node.paths.databasePath), "no node was made")
    let setup = try node.app().transfer.initialize()
    XCTAssertTrue(setup.created)
    XCTAssertFalse(try node.app().transfer.initialize().created)
    let memo = try node.memo("pinned text", title: "Pinned")
    XCTAssertEqual(try node.app().info.memoIDs(prefix: String(memo.id.rawValue.prefix(4)), limit: 10), [memo.id])
    XCTAssertEqual(try node.app().info.memoIDs(prefix: "not hex!", limit: 10), [])
    XCTAssertEqual(try node.app().info.widget().memo?.title, "Pinned")
  }
}
