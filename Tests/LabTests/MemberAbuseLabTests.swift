import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoVault
import XCTest

/// Issue 38's member and relay tricks against real daemons on the lab: host a is a trusted
/// member that misbehaves (`memo-peer-hostile`, signing with a's own identity key, against
/// b's `serve`), b the target, c an honest member. Each test failed before the store's fix
/// and asserts through the public command line only (`show`, `history`, `list`, `status`,
/// `sync`) and the daemon's log.
final class MemberAbuseLabTests: LabTestCase {
  let port = "7413"
  var hostile: String { Lab.builtProduct("memo-peer-hostile") }

  func address(_ host: String) throws -> String {
    let hosts = try String(contentsOfFile: Lab.directory + "/hosts", encoding: .utf8)
    let line = hosts.split(separator: "\n").map { $0.split(separator: " ") }.first { $0.first.map(String.init) == host }
    return String(try XCTUnwrap(line?.last))
  }

  func serve(_ host: String) throws -> Background {
    let server = try start(host, ["--debug", "serve", "--port", port])
    XCTAssertTrue(Lab.waitUntil(seconds: 15) { server.text.contains("advertising") }, server.text)
    return server
  }

  /// `host` trusts each of `others` by ID as `host-OTHER`, with `options` (sharing) per other.
  func trust(_ host: String, _ others: [String: [String]]) throws {
    for (other, options) in others.sorted(by: { $0.key < $1.key }) {
      try ok(host, ["trust", "add", try deviceID(other), "--name", "host-\(other)"] + options)
    }
  }

  /// `host` syncs with `peer` (its `host-PEER`); the sync must succeed. Its `--json`.
  @discardableResult
  func sync(_ host: String, with peer: String, file: StaticString = #filePath, line: UInt = #line) throws
    -> [String: Any]
  {
    let result = try Lab.exec(host, ["sync", "--peer", "host-\(peer)", "--json", "--timeout", "30"])
    XCTAssertEqual(result.status, 0, "\(host) sync with \(peer): \(result.stderr)", file: file, line: line)
    let json = object(result.stdout)
    let status = (json["peers"] as? [[String: Any]])?.first?["status"] as? String
    XCTAssertEqual(status, "synced", "\(host) sync with \(peer): \(result.stdout)", file: file, line: line)
    return json
  }

  /// The hostile tool on host a (as a's device, a member) sending `name` with `arguments`
  /// to `host`'s daemon: its JSON line.
  func send(
    _ name: String, _ arguments: [String] = [], to host: String = "b", file: StaticString = #filePath,
    line: UInt = #line
  ) throws -> [String: Any] {
    let result = try Lab.exec("a", ["ask", try address(host), port, name] + arguments, tool: hostile)
    XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)", file: file, line: line)
    return object(result.stdout)
  }

  /// `history ID --json`'s revisions on `host`.
  func history(_ host: String, _ memo: String) throws -> [[String: Any]] {
    object(try ok(host, ["history", memo, "--json"]))["revisions"] as? [[String: Any]] ?? []
  }

  /// The memo's body as `show --json` prints it; nil when `show` fails (no such memo).
  func body(_ host: String, _ memo: String) throws -> String? {
    let result = try Lab.exec(host, ["show", memo, "--json"])
    guard result.status == 0 else { return nil }
    return (object(result.stdout)["memo"] as? [String: Any])?["body"] as? String
  }

  /// `list --json`'s titles on `host`.
  func titles(_ host: String) throws -> [String] {
    (object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
  }

  /// What `host` kept aside (`status --json`'s `kept_aside`).
  func keptAside(_ host: String) throws -> [[String: Any]] {
    object(try ok(host, ["status", "--json"]))["kept_aside"] as? [[String: Any]] ?? []
  }

  /// The id of the notebook `host` calls `name` (`notebook list --json`).
  func notebookID(_ host: String, named name: String) throws -> String {
    let list = object(try ok(host, ["notebook", "list", "--json"]))["notebooks"] as? [[String: Any]] ?? []
    return try XCTUnwrap(list.first { $0["name"] as? String == name }?["id"] as? String, "\(host): \(list)")
  }

  /// A memo made on `host` from `text` (its first line the title), in `notebook` if given.
  func newMemo(_ host: String, _ text: String, in notebook: String? = nil) throws -> String {
    try ok(host, ["new"] + (notebook.map { ["--notebook", $0] } ?? []), stdin: text)
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// b shares its `personal` with each of `members` (which trust b), runs `serve`, and each
  /// member syncs, accepts and (when `settle`) syncs again. b's daemon.
  func personalSharedByB(with members: [String], settle: Bool = true) throws -> Background {
    for host in ["b"] + members { try ok(host, ["consent", "grant"]) }
    try trust("b", Dictionary(uniqueKeysWithValues: members.map { ($0, ["--share", "personal"]) }))
    for member in members { try trust(member, ["b": []]) }
    let server = try serve("b")
    for member in members {
      try sync(member, with: "b")
      XCTAssertEqual(try acceptInvitations(member).count, 1, "\(member) is invited to b's personal")
      if settle { try sync(member, with: "b") }
    }
    return server
  }

  /// A member (a) signs a purge naming the notebook it shares with b and the id of a memo in
  /// b's diary, which only c shares. b keeps it aside naming a; the memo and its history stay
  /// on b, and on c after c syncs with b (b passes nothing on). Before, b dropped the memo,
  /// its history and its trash entry, and passed the purge on to c, which dropped it too.
  func testAPurgeNamingAnotherNotebookLeavesTheMemoAndItsHistoryWholeEverywhere() throws {
    let server = try personalSharedByB(with: ["a", "c"])
    try ok("b", ["notebook", "new", "diary"])
    try ok("b", ["notebook", "share", "diary", "--with", "host-c"])
    try sync("c", with: "b")
    XCTAssertEqual(try acceptInvitations("c").count, 1, "c is invited to b's diary")
    let secret = try newMemo("b", "diary entry\nfirst\n", in: "diary")
    try sync("c", with: "b")
    try ok("b", ["edit", secret, "--stdin"], stdin: "diary entry\nsecond\n")
    try sync("c", with: "b")
    let before = try ["b", "c"].map { try history($0, secret) }
    for (host, revisions) in zip(["b", "c"], before) {
      XCTAssertEqual(revisions.count, 2, "\(host) keeps both revisions: \(revisions)")
    }

    let personal = try notebookID("b", named: "personal")
    let answer = try send("purge-other", [personal, secret])
    XCTAssertEqual(answer["answer"] as? String, "acknowledged", "\(answer)")
    XCTAssertTrue(server.process.isRunning)

    let a = try deviceID("a")
    XCTAssertEqual(try body("b", secret), "diary entry\nsecond\n", "the memo stays on b")
    XCTAssertEqual(try history("b", secret).count, 2, "its history stays on b")
    let kept = try keptAside("b")
    XCTAssertTrue(
      kept.contains {
        $0["device_id"] as? String == a
          && ($0["reason"] as? String ?? "").hasPrefix("a purge naming notebook \(personal.prefix(8))")
      }, "b names a: \(kept)")

    // c meets b: nothing of the purge reaches it.
    try sync("c", with: "b")
    XCTAssertEqual(try body("c", secret), "diary entry\nsecond\n", "the memo stays on c")
    XCTAssertEqual(try history("c", secret).count, 2, "its history stays on c")
    XCTAssertTrue(
      try keptAside("c").allSatisfy { !($0["reason"] as? String ?? "").contains("purge") }, "b passed nothing on")
  }

  /// a binds c's replica to its own key (a legacy binding) before c first writes, with a
  /// record under it. b keeps both aside naming a; c's first memo, synced to b, is applied
  /// there and reaches a at its next sync. Before, b took a's binding, and kept aside
  /// everything c signed while c's `sync` reported success.
  func testASquattedBindingLeavesTheOwnersNextSyncAppliedEverywhere() throws {
    _ = try personalSharedByB(with: ["a", "c"])
    try ok("c", ["notebook", "default", "personal (2)"])
    // c has written nothing yet; its replica is what a saw of it (in hellos, say).
    let replica = try MemoStore.open(paths: try Lab.paths("c"), use: .background).replicaID.rawValue

    let answer = try send("squat", [replica])
    XCTAssertEqual(answer["answer"] as? String, "acknowledged", "\(answer)")
    XCTAssertEqual(answer["applied"] as? Int, 0, "\(answer)")
    XCTAssertEqual(answer["quarantined"] as? Int, 1, "\(answer)")
    let a = try deviceID("a")
    let kept = try keptAside("b")
    XCTAssertTrue(
      kept.contains { $0["device_id"] as? String == a && ($0["reason"] as? String ?? "").hasSuffix("(a squat)") },
      "b names a: \(kept)")

    // c's first memo: applied on b, and passed on to a (another member) at its next sync.
    let memo = try newMemo("c", "from the owner\nc's first memo\n")
    let synced = try sync("c", with: "b")
    XCTAssertEqual(try body("b", memo), "from the owner\nc's first memo\n", "b applied c's memo: \(synced)")
    try sync("a", with: "b")
    XCTAssertEqual(try body("a", memo), "from the owner\nc's first memo\n", "a got c's memo through b")
    for host in ["a", "b", "c"] {
      XCTAssertFalse(try titles(host).contains("junk"), "nothing of the squat on \(host)")
    }
    XCTAssertFalse(
      try keptAside("b").contains { $0["device_id"] as? String == (try? deviceID("c")) }, "nothing of c's kept aside")
    XCTAssertTrue(try keptAside("a").isEmpty, "b passed nothing of the squat on")
  }

  /// b writes a memo in five revisions; a (a member) pushes 120 signed edits of it. b's
  /// `history` keeps b's five revisions and gives a what is left of the 100 (issue 38: the
  /// history is shared fairly). Before, the 100 newest stayed: all of them a's.
  func testAHundredAndTwentyHostileEditsLeaveTheOwnersRevisionsInHistory() throws {
    let server = try personalSharedByB(with: ["a"])
    let memo = try newMemo("b", "owner 1\nplan\n")
    for index in 2...5 { try ok("b", ["edit", memo, "--stdin"], stdin: "owner \(index)\nplan\n") }

    let answer = try send("flood-edits", [memo, "120"])
    XCTAssertEqual(answer["answer"] as? String, "acknowledged", "\(answer)")
    XCTAssertEqual(answer["applied"] as? Int, 120, "\(answer)")
    XCTAssertTrue(server.process.isRunning)

    let revisions = try history("b", memo)
    let current = revisions.filter { $0["current"] as? Bool == true }
    XCTAssertEqual(current.compactMap { $0["first_line"] as? String }, ["flood 120"], "a's last edit is current")
    func byThisDevice(_ revision: [String: Any]) -> Bool {
      (revision["author"] as? [String: Any])?["this_device"] as? Bool == true
    }
    let superseded = revisions.filter { $0["current"] as? Bool == false }
    XCTAssertEqual(
      superseded.filter(byThisDevice).compactMap { $0["first_line"] as? String }, (1...5).map { "owner \($0)" },
      "b's own revisions stay: \(revisions.compactMap { $0["first_line"] as? String })")
    XCTAssertEqual(superseded.filter { !byThisDevice($0) }.count, 95, "a keeps what is left of the 100")
  }

  /// b allows 20 new memos in a first fill (config.json); a, just shared b's personal and
  /// accepted, floods 40 new memos in its first sync of it, 10 to a batch. b takes two
  /// batches, refuses the third `over-quota` naming a in its log and the quota, and stays up.
  /// Before, a first fill was not counted at all: all 40 were stored.
  func testAFirstFillBeyondTheBoundIsRefusedNamingThePeer() throws {
    let config = NodeConfig.path(try Lab.paths("b"))
    try FileManager.default.createDirectory(
      atPath: URL(fileURLWithPath: config).deletingLastPathComponent().path, withIntermediateDirectories: true)
    XCTAssertTrue(
      FileManager.default.createFile(
        atPath: config, contents: Data(#"{"quotas": {"first_fill_memos": 20}}"#.utf8),
        attributes: [.posixPermissions: 0o600]))
    // a accepts and syncs no more before the flood: its next session is its first fill.
    let server = try personalSharedByB(with: ["a"], settle: false)
    let before = try titles("b").count

    let answer = try send("flood-new", ["40"])
    XCTAssertEqual(answer["answer"] as? String, "refused over-quota", "\(answer)")
    XCTAssertEqual(try titles("b").filter { $0 == "junk" }.count, 20, "the batches within the bound only")
    XCTAssertEqual(try titles("b").count, before + 20)
    let a = String(try deviceID("a").replacingOccurrences(of: "-", with: "").prefix(8))
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) {
        server.text.contains(
          "sync with \(a): refused its data: over-quota (more than 20 new memos in the first sync of notebook")
      }, server.text)
    XCTAssertTrue(server.text.contains("quotas.first_fill_memos"), server.text)
    XCTAssertTrue(server.process.isRunning)
    XCTAssertEqual(try send("ping")["answer"] as? String, "pong", "serve answers after the flood")
  }
}
