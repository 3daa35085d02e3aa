import Foundation
import XCTest

/// Accepting an invitation is an event (issue 39): two lab hosts run `serve --web` with live
/// sync and their live link is up; a shares a notebook that already holds memos, b accepts
/// with `notebook accept`, and the memos are on b without anybody typing `sync`. Before,
/// b's daemon noticed only revisions stored (the change feed), which an accept is not, so
/// b said "No memos yet" until a manual sync. (The same on the page:
/// LiveSyncBrowserLabTests.)
final class LiveAcceptLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  func testAcceptingOnTheCommandLineBringsTheNotebooksMemosWithoutASync() throws {
    try meshOfLiveDaemons()
    let shared = try shareNewNotebook("garden", from: "a", with: "b", memos: 2)
    let memos = Set(shared.memos.keys)
    XCTAssertNotNil(
      shared.notebook, "b is invited to a's notebook by live sync; b's daemon: \(daemons["b"]?.text ?? "")")
    XCTAssertTrue(try listedIDs("b").isDisjoint(with: memos), "b holds none of the memos before it accepts")

    XCTAssertEqual(try acceptInvitations("b").count, 1)
    var holding: Set<String> = []
    let arrived = try Lab.waitUntil(seconds: 10) {
      holding = try listedIDs("b")
      return holding.isSuperset(of: memos)
    }
    XCTAssertTrue(
      arrived,
      "b holds \(holding.intersection(memos).count) of the notebook's \(memos.count) memos after accepting; "
        + "b's daemon: \(daemons["b"]?.text ?? "")")
    let garden = (object(try ok("b", ["notebook", "list", "--json"]))["notebooks"] as? [[String: Any]] ?? [])
      .first { ($0["name"] as? String) == "garden" }
    XCTAssertEqual(garden?["memos"] as? Int, memos.count, "b's `notebook list` counts the memos")
  }
}
