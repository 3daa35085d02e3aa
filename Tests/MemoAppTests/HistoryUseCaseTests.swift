import Foundation
import MemoApp
import MemoCore
import MemoPresentation
import MemoStore
import XCTest

/// History, diff, restore, the trash and undo as the CLI and the page call them.
final class HistoryUseCaseTests: XCTestCase {
  func testTheLineDiffKeepsCommonLinesAndShowsRemovalsBeforeAdditions() {
    XCTAssertEqual(
      LineDiff.diff("a\nb\nc\nd\n", "a\nB\nc\nd\ne"),
      [
        .init(.same, "a"), .init(.removed, "b"), .init(.added, "B"), .init(.same, "c"), .init(.same, "d"),
        .init(.added, "e"),
      ])
    XCTAssertEqual(LineDiff.diff("", "x"), [.init(.added, "x")])
    XCTAssertEqual(LineDiff.diff("x\ny", ""), [.init(.removed, "x"), .init(.removed, "y")])
    XCTAssertEqual(LineDiff.diff("same", "same"), [.init(.same, "same")])
    // A moved line is one removal and one addition, the rest kept.
    XCTAssertEqual(
      LineDiff.diff("1\n2\n3", "2\n3\n1"),
      [.init(.removed, "1"), .init(.same, "2"), .init(.same, "3"), .init(.added, "1")])
  }

  /// Two revisions whose changed middle is 3,001 lines each, every other line edited: the
  /// table would be 9 million cells, beyond the 4 Mi the diff fills (two 64 KiB bodies of
  /// 32,768 lines, which any device can write, would need 4 GiB), so the middle is shown
  /// removed and then added, whole, between the common first and last lines. Still a true
  /// diff of the two texts; a third as many lines get the shortest diff, as before.
  func testALineDiffBeyondItsTableIsTheChangedMiddleWhole() {
    func revisions(_ count: Int) -> (old: [String], new: [String]) {
      let middle = (0..<count).map { "line \($0)" }
      let edited = middle.enumerated().map { $0.offset % 2 == 1 ? $0.element : $0.element + " edited" }
      return (["title"] + middle + ["end"], ["title"] + edited + ["end"])
    }
    let large = revisions(3001)
    let coarse = LineDiff.diff(lines: large.old, large.new)
    XCTAssertEqual(
      coarse,
      [.init(.same, "title")] + large.old.dropFirst().dropLast().map { .init(.removed, $0) }
        + large.new.dropFirst().dropLast().map { .init(.added, $0) } + [.init(.same, "end")])
    let small = revisions(1001)
    let shortest = LineDiff.diff(lines: small.old, small.new)
    XCTAssertEqual(shortest.filter { $0.kind == .same }.count, 502, "title, end and the 500 unedited lines")
    for (diff, texts) in [(coarse, large), (shortest, small)] {
      XCTAssertEqual(diff.filter { $0.kind != .added }.map(\.text), texts.old)
      XCTAssertEqual(diff.filter { $0.kind != .removed }.map(\.text), texts.new)
    }
  }

  func testHistoryDiffAndRestoreThroughTheUseCases() throws {
    let node = try AppFixture()
    let memo = try node.memo("one\ntwo", title: "Plan")
    _ = try node.app().memos.edit(memo.id.short, change: MemoChange(body: "one\n2\nthree"))
    let history = try node.app().history.history(memo.id.short)
    XCTAssertEqual(history.revisions.map(\.memo.revision), [1, 2])
    let diff = try node.app().history.diff(memo.id.short)
    XCTAssertEqual([diff.from.memo.revision, diff.to.memo.revision], [1, 2])
    XCTAssertEqual(diff.lines.filter { $0.kind != .same }.map(\.text), ["two", "2", "three"])
    XCTAssertEqual(try node.app().history.diff(memo.id.short, from: 2, to: 1).lines.first?.kind, .same)
    XCTAssertThrowsError(try node.app().history.diff(memo.id.short, from: 7)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
      XCTAssertFalse(($0 as? MemoPeerError)?.message.contains("three") ?? true, "no memo text in an error")
    }
    let restored = try node.app().history.restore(memo.id.short, revision: 1)
    XCTAssertEqual(restored.body, "one\ntwo")
    XCTAssertEqual(restored.revision, 3)
    let json = String(
      decoding: JSONOutput.encode(
        HistoryJSON(try node.app().history.history(memo.id.short), names: try node.app().names())), as: UTF8.self)
    XCTAssertTrue(json.contains("\"this_device\":true"), json)
    XCTAssertTrue(json.contains("\"first_line\":\"one\""), json)
  }

  func testATombstoneRevisionCannotBeRestoredButTheTrashBringsTheMemoBack() throws {
    let node = try AppFixture()
    let memo = try node.memo("keep this", title: "Keep")
    try node.app().memos.delete(memo.id.short)
    XCTAssertThrowsError(try node.app().memos.show(memo.id.short))
    XCTAssertThrowsError(try node.app().history.restore(memo.id.short, revision: 2)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
    }
    let trash = try node.app().history.trash()
    XCTAssertEqual(trash.map(\.title), ["Keep"])
    XCTAssertEqual(try node.app().history.restoreFromTrash(memo.id.short).body, "keep this")
    XCTAssertEqual(try node.app().history.trash(), [])
  }

  func testEmptyingTheTrashAsksAndPurgeDropsTheHistory() throws {
    let node = try AppFixture()
    let gone = try node.memo("text", title: "Gone")
    try node.app().memos.delete(gone.id.short)
    XCTAssertThrowsError(try node.app().history.emptyTrash { _ in false }) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .cancelled)
    }
    XCTAssertEqual(try node.app().history.trash().count, 1)
    var asked: Int?
    XCTAssertEqual(
      try node.app().history.emptyTrash {
        asked = $0
        return true
      }, 1)
    XCTAssertEqual(asked, 1)
    let purged = try node.memo("secret", title: "Purge me")
    _ = try node.app().memos.edit(purged.id.short, change: MemoChange(body: "secret 2"))
    let result = try node.app().history.purge(purged.id.short)
    XCTAssertEqual(result.memo, purged.id)
    XCTAssertNotNil(result.notebook, "the purge is signed for the memo's notebook")
    XCTAssertThrowsError(try node.app().history.history(purged.id.short), "nothing of it stays, not even a tombstone") {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    XCTAssertEqual(try node.app().history.trash(), [])
  }

  func testHistoryNeedsTheNodeUnlocked() throws {
    let node = try AppFixture()
    let memo = try node.memo("x")
    try node.protect()
    try node.keys.lock()
    for call in [
      { _ = try node.app().history.history(memo.id.short) }, { _ = try node.app().history.trash() },
      { _ = try node.app().history.restore(memo.id.short, revision: 1) },
    ] {
      XCTAssertThrowsError(try call()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked) }
    }
  }

  func testUndoTakesATimeAndATrustedDeviceAndRefusesOthers() throws {
    let now: Timestamp = 1_796_000_000_000
    XCTAssertEqual(try HistoryUseCases.time("90m", now: now), now - 90 * 60_000)
    XCTAssertEqual(try HistoryUseCases.time("3d", now: now), now - 3 * 86_400_000)
    XCTAssertEqual(try HistoryUseCases.time("2026-12-01", now: now), 1_796_083_200_000)
    for bad in ["yesterday", "-3d", "3w", ""] {
      XCTAssertThrowsError(try HistoryUseCases.time(bad, now: now), bad) {
        XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
      }
    }
    let node = try AppFixture()
    _ = try node.memo("mine")
    XCTAssertThrowsError(try node.app().history.undo(device: "laptop-b", since: "1d", apply: false)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    // This device's own edits can be listed by its ID; a dry run changes nothing.
    let me = try XCTUnwrap(try node.app().store().ownDeviceID())
    let report = try node.app().history.undo(device: me.compact, since: "2026-01-01", apply: false)
    XCTAssertEqual(report.steps.count, 1)
    XCTAssertNil(report.steps.first?.target, "made since then: undoing deletes it")
    XCTAssertEqual(try node.app().memos.list().memos.count, 1)
  }
}
