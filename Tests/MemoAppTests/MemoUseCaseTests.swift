import Foundation
import MemoApp
import MemoCore
import MemoPresentation
import MemoStore
import XCTest

/// The memo use cases as the CLI and the page call them, without a process.
final class MemoUseCaseTests: XCTestCase {
  func testANewMemoIsRefusedWhileLockedBeforeItsTextIsAskedFor() throws {
    let node = try AppFixture()
    try node.protect()
    try node.keys.lock()
    var asked = false
    XCTAssertThrowsError(
      try node.app().memos.create {
        asked = true
        return MemoDraft(title: "", body: "typed for nothing")
      }
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked) }
    XCTAssertFalse(asked, "no text is asked for while the node cannot save it")
    _ = try node.keys.unlock(passphrase: node.secret())
    let memo = try node.memo("Milk, eggs", title: "Groceries")
    XCTAssertEqual(try node.app().memos.show(memo.id.short).body, "Milk, eggs")
  }

  func testAPinChangesWhileLockedAndTheEditSaysWhatItCouldRead() throws {
    let node = try AppFixture()
    let memo = try node.memo("body", title: "Pinned one")
    try node.protect()
    guard
      case .pinned(let id, true, let unlockedCopy) = try node.app().memos.edit(
        memo.id.rawValue, pin: true, change: MemoChange())
    else { return XCTFail("a pin alone is only a pin") }
    XCTAssertEqual(id, memo.id)
    XCTAssertEqual(unlockedCopy?.title, "Pinned one")
    try node.keys.lock()
    guard case .pinned(_, false, nil) = try node.app().memos.edit(memo.id.rawValue, pin: false, change: MemoChange())
    else { return XCTFail("unpinned while locked, without the memo") }
    var change = MemoChange()
    change.title = "renamed"
    XCTAssertThrowsError(try node.app().memos.edit(memo.id.rawValue, pin: true, change: change)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked, "the pin goes through, the title needs the key")
    }
  }

  func testTheNewBodyIsAskedForOnlyAfterTheChecksAndTheEditorGetsTheOldOne() throws {
    let node = try AppFixture()
    let memo = try node.memo("old text")
    var seen: String?
    guard
      case .saved(let saved) = try node.app().memos.edit(
        memo.id.rawValue, change: MemoChange(),
        newBody: .edit {
          seen = $0
          return "new text"
        })
    else { return XCTFail("an edit of the body saves") }
    XCTAssertEqual(seen, "old text")
    XCTAssertEqual(saved.body, "new text")
    XCTAssertEqual(saved.revision, memo.revision + 1)
    XCTAssertThrowsError(
      try node.app().memos.edit(
        "ffffffff", change: MemoChange(),
        newBody: .read {
          XCTFail("not read")
          return ""
        })
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound) }
  }

  func testAStaleRevisionKeepsTheTextAsAMemoOfItsOwn() throws {
    let node = try AppFixture()
    let memo = try node.memo("first")
    var change = MemoChange()
    change.body = "from a page that read revision 0"
    XCTAssertThrowsError(try node.app().memos.edit(memo.id.rawValue, change: change, expectedRevision: 0)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .conflict)
      XCTAssertTrue(($0 as? MemoPeerError)?.message.contains("saved as memo") ?? false)
    }
    let bodies = try node.app().memos.list().memos.compactMap { try? node.app().memos.show($0.id.rawValue).body }
    XCTAssertEqual(Set(bodies), ["first", "from a page that read revision 0"])
    var titleOnly = MemoChange()
    titleOnly.title = "only a title"
    XCTAssertThrowsError(try node.app().memos.edit(memo.id.rawValue, change: titleOnly, expectedRevision: 0)) {
      XCTAssertTrue(($0 as? MemoPeerError)?.message.hasSuffix("nothing was changed") ?? false)
    }
  }

  func testADeleteAsksWithTheTitleAndANoKeepsTheMemo() throws {
    let node = try AppFixture()
    let memo = try node.memo("text", title: "Keep me")
    var question: String?
    XCTAssertThrowsError(
      try node.app().memos.delete(memo.id.short) { id, title in
        question = "\(id.short) \(try title())"
        return false
      }
    ) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .cancelled) }
    XCTAssertEqual(question, "\(memo.id.short) Keep me")
    XCTAssertEqual(try node.app().memos.list().memos.count, 1)
    XCTAssertEqual(try node.app().memos.delete(memo.id.short), memo.id)
    XCTAssertEqual(try node.app().memos.list().memos.count, 0)
  }

  func testThePagesSearchListsATagAloneAndFiltersTextByTag() throws {
    let node = try AppFixture()
    try node.memo("call the plumber", title: "House", tags: ["home"])
    try node.memo("plumber's invoice", title: "Work", tags: ["work"])
    guard case .listed(let listed) = try node.app().memos.find(text: "  ", tag: "Home") else {
      return XCTFail("a tag alone lists")
    }
    XCTAssertEqual(listed.memos.map(\.title), ["House"])
    XCTAssertFalse(listed.locked)
    guard case .found(let found) = try node.app().memos.find(text: "plumber", tag: "work") else {
      return XCTFail("text searches")
    }
    XCTAssertEqual(found.memos.map(\.title), ["Work"])
    XCTAssertEqual(try node.app().memos.search("PLUMBER").memos.count, 2)
    XCTAssertThrowsError(try node.app().memos.find(text: nil, tag: "   ")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
    }
  }

  func testAListWhileLockedWithholdsWhatItCannotRead() throws {
    let node = try AppFixture()
    try node.memo("body", title: "Public title", tags: ["tag"])
    try node.protect()
    try node.keys.lock()
    let list = try node.app().memos.list()
    XCTAssertTrue(list.locked)
    XCTAssertEqual(list.memos.first?.title, "Public title")
    XCTAssertNil(list.memos.first?.tags)
    let json =
      try JSONSerialization.jsonObject(
        with: Data(JSONOutput.encode(MemoListJSON(list, names: try node.app().names())))) as? [String: Any]
    XCTAssertEqual(json?["locked"] as? Bool, true)
    XCTAssertNil(json?["relayed"], "no relayed notebooks, no key")
  }
}
