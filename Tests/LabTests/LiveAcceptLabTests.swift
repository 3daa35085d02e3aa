import Foundation
import XCTest

/// Accepting an invitation is an event (issue 39): two lab hosts run `serve --web` with live
/// sync and their live link is up; a shares a notebook that already holds memos, b accepts
/// with `notebook accept`, and the memos are on b without anybody typing `sync`. Before,
/// b's daemon noticed only revisions stored (the change feed), which an accept is not, so
/// b said "No memos yet" until a manual sync.
final class LiveAcceptLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  func testAcceptingOnTheCommandLineBringsTheNotebooksMemosWithoutASync() throws {
    try meshOfLiveDaemons()
    try ok("a", ["notebook", "new", "garden"])
    try ok("a", ["notebook", "share", "garden", "--with", "host-b"])
    // The memo is made after the share, so that its push carries the share to b (an
    // invitation), while b does not hold the notebook yet and gets none of its records.
    var memos: Set<String> = []
    for index in 0..<2 {
      memos.insert(
        try ok("a", ["new", "--notebook", "garden", "--title", "garden \(index)"], stdin: "made on a\n")
          .trimmingCharacters(in: .whitespacesAndNewlines))
    }
    var invited: [String] = []
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) {
        invited = invitations("b")
        return !invited.isEmpty
      }, "b is invited to a's notebook by live sync; b's daemon: \(daemons["b"]?.text ?? "")")
    XCTAssertTrue(try held("b").isDisjoint(with: memos), "b holds none of the memos before it accepts")

    XCTAssertEqual(try acceptInvitations("b").count, 1)
    var holding: Set<String> = []
    let arrived = try Lab.waitUntil(seconds: 10) {
      holding = try held("b")
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

  /// The ids of the memos `host` lists (`list --json`).
  func held(_ host: String) throws -> Set<String> {
    Set(
      (object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
  }

  /// The notebooks `host` is invited to (`notebook invitations --json`).
  func invitations(_ host: String) -> [String] {
    guard let listed = try? Lab.exec(host, ["notebook", "invitations", "--json"]), listed.status == 0 else { return [] }
    return (object(listed.stdout)["invitations"] as? [[String: Any]] ?? []).compactMap { $0["notebook"] as? String }
  }
}
