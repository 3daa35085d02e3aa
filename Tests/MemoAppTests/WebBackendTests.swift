import Foundation
import MemoApp
import MemoCore
import MemoNode
import MemoStore
import MemoTestSupport
import MemoWeb
import MemoWebApp
import XCTest

/// The page's backend called as the server calls it, without a server: each API call
/// answered by the use case its command calls, in the command's JSON, with the page's own
/// rules on top (unlocked, consent on record).
final class WebBackendTests: XCTestCase {
  func backend(_ node: AppFixture) -> WebBackend {
    let clock = node.clock
    return WebBackend(paths: node.paths, keys: node.keys, logger: .disabled, clock: { clock.next() })
  }

  func json(_ response: HTTPResponse) throws -> [String: Any] {
    try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
  }

  func errorCode(_ response: HTTPResponse) throws -> String? {
    (try json(response)["error"] as? [String: Any])?["code"] as? String
  }

  func testMemosThroughThePageAreTheCommandLinesMemos() throws {
    let node = try AppFixture()
    let page = backend(node)
    let created = page.perform(.createMemo(MemoDraft(title: "From the page", body: "text")))
    XCTAssertEqual(created.status, 201)
    let id = try XCTUnwrap((try json(created)["memo"] as? [String: Any])?["id"] as? String)
    XCTAssertEqual(try node.app().memos.show(id).title, "From the page")
    let listed = try json(page.perform(.listMemos))
    XCTAssertEqual((listed["memos"] as? [[String: Any]])?.count, 1)
    XCTAssertEqual(listed["locked"] as? Bool, false)
    XCTAssertNil(listed["relayed"])

    try node.protect()
    try node.keys.lock()
    let pinned = try json(page.perform(.editMemo(id, MemoEdit(pinned: true))))
    XCTAssertEqual(Set(pinned.keys), ["schema", "memo", "pinned"], "a pin while locked answers without the memo")
    XCTAssertEqual(try errorCode(page.perform(.inbox)), "locked")
    XCTAssertEqual(try errorCode(page.perform(.deleteMemo(id))), "locked")
    XCTAssertEqual(page.perform(.unlock(node.secret())).status, 200)
    XCTAssertEqual(page.perform(.deleteMemo(id)).status, 200)
    XCTAssertEqual(try node.app().memos.list().memos.count, 0)
  }

  func testHistoryDiffRestoreAndTrashThroughThePage() throws {
    let node = try AppFixture()
    let page = backend(node)
    let memo = try node.memo("one\ntwo", title: "Plan")
    _ = try node.app().memos.edit(memo.id.short, change: MemoChange(body: "one\n2"))
    let history = try json(page.perform(.memoHistory(memo.id.rawValue)))
    let revisions = try XCTUnwrap(history["revisions"] as? [[String: Any]])
    XCTAssertEqual(revisions.compactMap { $0["revision"] as? Int }, [1, 2])
    XCTAssertEqual((revisions[1]["author"] as? [String: Any])?["this_device"] as? Bool, true)
    let diff = try json(page.perform(.diffMemo(memo.id.rawValue, from: nil, to: nil)))
    XCTAssertEqual(
      (diff["lines"] as? [[String: Any]])?.compactMap { $0["op"] as? String }, ["same", "removed", "added"])
    XCTAssertEqual(try errorCode(page.perform(.restoreMemo(memo.id.rawValue, revision: 9))), "not-found")
    let restored = try json(page.perform(.restoreMemo(memo.id.rawValue, revision: 1)))
    XCTAssertEqual((restored["memo"] as? [String: Any])?["revision"] as? Int, 3)
    XCTAssertEqual(try node.app().memos.show(memo.id.short).body, "one\ntwo")

    XCTAssertEqual(page.perform(.deleteMemo(memo.id.rawValue)).status, 200)
    let trash = try XCTUnwrap(try json(page.perform(.trash))["trash"] as? [[String: Any]])
    XCTAssertEqual(trash.compactMap { $0["title"] as? String }, ["Plan"])
    XCTAssertEqual(page.perform(.restoreFromTrash(memo.id.rawValue)).status, 200)
    XCTAssertEqual(try node.app().memos.show(memo.id.short).body, "one\ntwo")

    try node.protect()
    try node.keys.lock()
    for call in [APICall.memoHistory(memo.id.rawValue), .trash, .restoreMemo(memo.id.rawValue, revision: 1)] {
      XCTAssertEqual(try errorCode(page.perform(call)), "locked")
    }
  }

  /// The conflict view's line diff: from the memo's text (A) to its conflict copy's (B),
  /// each side with its author; a copy of another memo, or the memo itself, is not found.
  func testTheConflictViewsLineDiffThroughThePage() throws {
    let node = try AppFixture()
    let page = backend(node)
    let memo = try node.memo("Shopping list\nmilk\n", title: "List")
    let other = try AppFixture()
    let mine = try MemoStore.open(paths: node.paths)
    let theirs = try MemoStore.open(paths: other.paths)
    try pullForTest(from: mine, into: theirs)
    try theirs.update(memo.id, MemoChange(body: "Shopping list\neggs\n"), now: 5)
    try mine.update(memo.id, MemoChange(body: "Shopping list\nmilk\nbread\n"), now: 5)
    try pullForTest(from: theirs, into: mine)
    let conflicts = try XCTUnwrap(try json(page.perform(.conflicts))["conflicts"] as? [[String: Any]])
    let copies = try XCTUnwrap(conflicts.first?["copies"] as? [[String: Any]])
    let copy = try XCTUnwrap(copies.first?["id"] as? String)
    func body(_ id: String) throws -> String {
      try XCTUnwrap((try json(page.perform(.showMemo(id)))["memo"] as? [String: Any])?["body"] as? String)
    }
    let a = try body(memo.id.rawValue)
    let b = try body(copy)
    XCTAssertEqual(Set([a, b]), ["Shopping list\nmilk\nbread\n", "Shopping list\neggs\n"])

    let diff = try json(page.perform(.diffCopy(memo.id.rawValue, copy: copy)))
    XCTAssertEqual(diff["memo"] as? String, memo.id.rawValue)
    let lines = try XCTUnwrap(diff["lines"] as? [[String: String]])
    XCTAssertEqual(lines.first, ["op": "same", "text": "Shopping list"])
    XCTAssertEqual(lines.filter { $0["op"] != "added" }.map { $0["text"]! + "\n" }.joined(), a, "A's lines")
    XCTAssertEqual(lines.filter { $0["op"] != "removed" }.map { $0["text"]! + "\n" }.joined(), b, "B's lines")
    let authors = try [diff["from"], diff["to"]].map {
      try XCTUnwrap(($0 as? [String: Any])?["author"] as? [String: Any])
    }
    XCTAssertEqual(
      Set(authors.compactMap { $0["this_device"] as? Bool }), [true, false], "one side each, named by device")

    XCTAssertEqual(try errorCode(page.perform(.diffCopy(memo.id.rawValue, copy: memo.id.rawValue))), "not-found")
    let unrelated = try node.memo("another memo")
    XCTAssertEqual(try errorCode(page.perform(.diffCopy(unrelated.id.rawValue, copy: copy))), "not-found")
    XCTAssertEqual(try errorCode(page.perform(.diffCopy(copy, copy: memo.id.rawValue))), "not-found")
    try node.protect()
    try node.keys.lock()
    XCTAssertEqual(try errorCode(page.perform(.diffCopy(memo.id.rawValue, copy: copy))), "locked")
    // The store's locked error carries the unlock remedy: worded for the page, no command.
    let locked = try XCTUnwrap(try json(page.perform(.showMemo(memo.id.rawValue)))["error"] as? [String: Any])
    XCTAssertEqual(locked["remedy"] as? String, "unlock")
    XCTAssertEqual(locked["hint"] as? String, "unlock it with the passphrase on the page")
  }

  func testASyncNeedsAConsentOnRecordBeforeAnythingElse() throws {
    let node = try AppFixture()
    let page = backend(node)
    let refused = page.perform(.startSync(peer: nil, timeout: nil))
    XCTAssertEqual(refused.status, 403)
    let error = try XCTUnwrap(try json(refused)["error"] as? [String: Any])
    XCTAssertEqual(error["code"] as? String, "consent-required")
    XCTAssertTrue((error["hint"] as? String)?.contains("the page shows") ?? false, "the page's own hint")
    let granted = page.perform(.recordConsent(ConsentAnswer(scope: .localNetwork, decision: .granted)))
    XCTAssertEqual(try json(granted)["method"] as? String, "web")
    XCTAssertEqual(page.perform(.startSync(peer: nil, timeout: nil)).status, 404, "nobody to sync with")
    XCTAssertEqual(try json(page.perform(.syncState))["state"] as? String, "idle")
  }

  /// A trusted device's addresses on the page: added and removed as `trust address` does,
  /// answered in its JSON, with the use case's reason for a wrong one, and nothing changed
  /// while the node is locked.
  func testAddressesOfATrustedDeviceThroughThePage() throws {
    let node = try AppFixture()
    let page = backend(node)
    try node.app().trustStore.update { try $0.trust(SyncUseCaseTests.desk) }
    let desk = SyncUseCaseTests.desk.deviceID.compact

    let added = page.perform(.addPeerAddress(peer: desk, address: "192.168.7.20:8426"))
    XCTAssertEqual(added.status, 200)
    let answer = try json(added)
    XCTAssertEqual(answer["name"] as? String, "desk")
    XCTAssertEqual((answer["addresses"] as? [String: Any])?["given"] as? [String], ["192.168.7.20:8426"])
    XCTAssertEqual(
      try node.app().trustStore.load().peer(for: SyncUseCaseTests.desk.deviceID)?.addresses?.map(\.description),
      ["192.168.7.20:8426"])
    let peers = try XCTUnwrap(try json(page.perform(.peers))["peers"] as? [[String: Any]])
    XCTAssertEqual((peers.first?["addresses"] as? [String: Any])?["given"] as? [String], ["192.168.7.20:8426"])

    let bad = page.perform(.addPeerAddress(peer: desk, address: "host:70000"))
    XCTAssertEqual(bad.status, 400)
    let error = try XCTUnwrap(try json(bad)["error"] as? [String: Any])
    XCTAssertEqual(error["code"] as? String, "invalid-input")
    XCTAssertEqual(error["message"] as? String, "not an address: the port 70000 is outside 1 to 65535")
    XCTAssertEqual(try errorCode(page.perform(.addPeerAddress(peer: "ZZZZ", address: "10.0.0.1"))), "not-found")
    XCTAssertEqual(try errorCode(page.perform(.removePeerAddress(peer: desk, address: "10.0.0.1"))), "not-found")

    try node.protect()
    try node.keys.lock()
    XCTAssertEqual(try errorCode(page.perform(.removePeerAddress(peer: desk, address: "192.168.7.20:8426"))), "locked")
    XCTAssertEqual(page.perform(.unlock(node.secret())).status, 200)
    let removed = try json(page.perform(.removePeerAddress(peer: desk, address: "192.168.7.20:8426")))
    XCTAssertEqual((removed["addresses"] as? [String: Any])?["given"] as? [String], [])
    XCTAssertNil(try node.app().trustStore.load().peer(for: SyncUseCaseTests.desk.deviceID)?.addresses)
  }

  /// This network on the page: `GET /api/consent` tells it (with the question a decision
  /// records), and a decision is recorded for it with method `web`, as `network allow`
  /// would. Which network the machine running the tests is on is its own: on none (or one
  /// not told apart yet), the page is told so and nothing is recorded.
  func testThisNetworkIsShownAndDecidedOnThePage() throws {
    let node = try AppFixture()
    let page = backend(node)
    let consent = try json(page.perform(.consent))
    let current = try node.app().networks.current()
    guard let current, current.identified else {
      if let current {
        XCTAssertEqual((consent["network"] as? [String: Any])?["identified"] as? Bool, false)
        XCTAssertEqual(current.state, "undetermined")
      } else {
        XCTAssertNil(consent["network"], "on no network, none is shown")
      }
      XCTAssertEqual(try errorCode(page.perform(.decideNetwork(.granted))), "not-found")
      XCTAssertEqual(try node.app().networks.overview().networks.count, 0, "nothing was recorded")
      return
    }
    let shown = try XCTUnwrap(consent["network"] as? [String: Any])
    XCTAssertEqual(shown["id"] as? String, current.id)
    XCTAssertEqual(shown["state"] as? String, "undetermined", "no consent yet: no network is allowed")
    let question = try XCTUnwrap(shown["question"] as? String)
    XCTAssertTrue(question.hasPrefix("memo-peer has not been used on this network ("), question)

    let denied = try json(page.perform(.decideNetwork(.denied)))
    XCTAssertEqual(denied["method"] as? String, "web")
    XCTAssertEqual(denied["network"] as? String, current.id)
    XCTAssertEqual(denied["usage_text"] as? String, question, "the question shown is the one recorded")
    XCTAssertEqual(try node.app().networks.overview().currentState, "denied")
    XCTAssertEqual((try json(page.perform(.consent))["network"] as? [String: Any])?["state"] as? String, "denied")
    XCTAssertEqual(
      (try json(page.perform(.status))["network"] as? [String: Any])?["state"] as? String, "denied",
      "the status says it too")

    XCTAssertEqual(try json(page.perform(.decideNetwork(.granted)))["method"] as? String, "web")
    let overview = try node.app().networks.overview()
    XCTAssertEqual(overview.currentState, "allowed")
    XCTAssertEqual(overview.networks.map(\.method), ["web"])
  }

  func testUnlockOfANodeWithoutAPassphraseSaysSoWithoutACommandHint() throws {
    let node = try AppFixture()
    let answer = backend(node).perform(.unlock(node.secret()))
    let error = try XCTUnwrap(try json(answer)["error"] as? [String: Any])
    XCTAssertEqual(error["code"] as? String, "not-protected")
    XCTAssertNil(error["hint"])
    XCTAssertNil(error["remedy"], "protecting the key is the command line's remedy")
  }
}
