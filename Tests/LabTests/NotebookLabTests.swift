import Foundation
import MemoCore
import MemoNode
import XCTest

@testable import MemoStore

/// Notebooks and the blind relay on the virtual lab: host a is the home server `s` (always
/// on, a relay), b and c are laptops (members of b's `personal`), d is another person's
/// laptop (a member of `family` only).
///
/// - Hub: b and c are never online at the same time during the story; everything between
///   them goes through s, which can read none of it.
/// - Blindness: after the hub story no canary is in any byte of s's home, in s's output at
///   `--debug`, or in s's process memory, read through /proc/PID/mem while it relays.
/// - Family: d gets `family` and nothing of `personal`; after `unshare` it gets nothing
///   new, keeps what it had, and b and c (which rotated the key) read everything.
final class NotebookLabTests: LabTestCase {
  override class var hosts: [String] { ["a", "b", "c", "d"] }

  let names = ["a": "server", "b": "laptop-b", "c": "laptop-c", "d": "laptop-d"]
  let run = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()

  /// A canary: unique to this run, so finding it anywhere means it came from this test.
  func canary(_ label: String) -> String { "cnry\(label)x\(run)" }

  func name(_ host: String) -> String { names[host] ?? host }

  /// `host` trusts each of `others` by ID, with `options` (sharing) per other host.
  func trust(_ host: String, _ others: [String: [String]]) throws {
    for (other, options) in others.sorted(by: { $0.key < $1.key }) {
      try ok(host, ["trust", "add", try deviceID(other), "--name", name(other)] + options)
    }
  }

  @discardableResult
  func serve(_ host: String) throws -> Background {
    let server = try start(host, ["--debug", "serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 15) { server.text.contains("advertising") }, server.text)
    return server
  }

  /// `host` syncs with the device it calls `name(peer)`; the sync must succeed.
  @discardableResult
  func sync(_ host: String, with peer: String, file: StaticString = #filePath, line: UInt = #line) throws
    -> [String: Any]
  {
    let result = try Lab.exec(host, ["sync", "--peer", name(peer), "--json", "--timeout", "30"])
    let json = object(result.stdout)
    let status = (json["peers"] as? [[String: Any]])?.first?["status"] as? String
    XCTAssertEqual(result.status, 0, "\(host) sync with \(peer): \(result.stderr)", file: file, line: line)
    XCTAssertEqual(status, "synced", "\(host) sync with \(peer): \(result.stdout)", file: file, line: line)
    return json
  }

  /// Every row of `host`'s store, read in this process (no memo-peer of that host may hold
  /// its database exclusively; none does).
  func rows(_ host: String) throws -> [Memo] {
    try MemoStore.open(paths: try Lab.paths(host), use: .background).allHeadRows()
  }

  /// Every byte of every file under `host`'s memo-peer home: data, keys, state, config.
  func homeBytes(_ host: String) throws -> [(path: String, bytes: Data)] {
    let root = "\(Lab.directory)/\(host)/home"
    var files: [(String, Data)] = []
    let enumerator = FileManager.default.enumerator(atPath: root)
    while let relative = enumerator?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      let path = root + "/" + relative
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
        continue
      }
      files.append((relative, try Data(contentsOf: URL(fileURLWithPath: path))))
    }
    return files
  }

  /// The texts of `needles` found in `host`'s home, with the file each is in.
  func found(_ needles: [String], inHomeOf host: String) throws -> [String] {
    let files = try homeBytes(host)
    XCTAssertFalse(files.isEmpty, "\(host)'s home is empty: the check would prove nothing")
    return needles.flatMap { needle in
      files.filter { $0.bytes.range(of: Data(needle.utf8)) != nil }.map { "\(needle) in \($0.path)" }
    }
  }

  /// The notebook `host` names `name`, from `notebook list --json`.
  func notebook(_ host: String, named name: String) throws -> [String: Any] {
    let list = object(try ok(host, ["notebook", "list", "--json"]))["notebooks"] as? [[String: Any]] ?? []
    return try XCTUnwrap(list.first { $0["name"] as? String == name }, "\(host)'s notebooks: \(list)")
  }

  // MARK: - Hub and blindness

  /// The hub's start, with laptops b and c never online together and never meeting: every
  /// host trusts the others by ID only; b shares personal with the server as a relay and
  /// with c as a member. The server takes b's invitation (a person accepts it there), c the
  /// one the server passes on; the server learns c's key from c's hello, b learns it from
  /// the server's, and seals the notebook's keys to it in the log, which reaches c through
  /// the server (which cannot open them). Returns the server's daemon, running.
  func hubWhereTheLaptopsNeverMeet() throws -> Background {
    try trust("a", ["b": [], "c": []])
    try trust("b", ["a": ["--share", "personal", "--as", "relay"], "c": ["--share", "personal"]])
    try trust("c", ["a": [], "b": []])
    let server = try serve("a")
    try sync("b", with: "a")
    XCTAssertEqual(try acceptInvitations("a").count, 1, "the server is invited to relay b's notebook")
    try sync("c", with: "a")
    XCTAssertEqual(try acceptInvitations("c").count, 1, "c is invited, through the server")
    try sync("b", with: "a")
    try sync("c", with: "a")
    let shared = try notebook("c", named: "personal (2)")
    XCTAssertEqual(shared["role"] as? String, "member")
    let relayed = object(try ok("a", ["notebook", "list", "--json"]))["notebooks"] as? [[String: Any]] ?? []
    XCTAssertTrue(relayed.contains { $0["role"] as? String == "relay" }, "\(relayed)")
    return server
  }

  func testTheHubRelaysBetweenLaptopsThatNeverMeetAndCannotReadAnything() throws {
    for host in Self.hosts { try ok(host, ["consent", "grant"]) }
    // The hub story: s is always on; b and c each sync with s only, never at the same time,
    // and never with each other.
    let server = try hubWhereTheLaptopsNeverMeet()
    try ok("c", ["notebook", "default", "personal (2)"])
    var titles: [String] = []
    var bodies: [String] = []
    var ids: [String] = []
    for index in 0..<50 {
      titles.append(canary("title\(index)"))
      bodies.append(canary("body\(index)"))
      ids.append(
        try ok("b", ["new"], stdin: "\(titles[index])\n\(bodies[index])\n").trimmingCharacters(in: .whitespaces)
          .trimmingCharacters(in: .newlines))
    }
    let personal = try XCTUnwrap(try notebook("b", named: "personal")["id"] as? String)
    try sync("b", with: "a")
    let relayed = object(try ok("a", ["notebook", "list", "--json"]))["notebooks"] as? [[String: Any]] ?? []
    let entry = try XCTUnwrap(relayed.first { $0["id"] as? String == personal }, "s: \(relayed)")
    XCTAssertEqual(entry["role"] as? String, "relay")
    XCTAssertEqual(entry["sealed_revisions"] as? Int, 50)
    XCTAssertNil(entry["name"] as? String)

    // c starts, and syncs with s while root reads s's memory.
    let servePID = try memoPeerProcess(server)
    let needles = (titles + bodies).map { Array($0.utf8) }
    let cSync = try start("c", ["sync", "--peer", name("a"), "--json", "--timeout", "30"])
    var memory = ProcessMemory.Scan()
    var scans = 0
    repeat {
      let scan = try ProcessMemory.scan(pid: servePID, for: needles + [Array(personal.utf8)])
      memory.found.formUnion(scan.found)
      memory.bytesRead += scan.bytesRead
      scans += 1
    } while cSync.process.isRunning && scans < 50
    XCTAssertEqual(cSync.exitStatus(within: 60), 0, cSync.text)
    let after = try ProcessMemory.scan(pid: servePID, for: needles + [Array(personal.utf8)])
    memory.found.formUnion(after.found)
    print("relay memory: \(scans + 1) scans of s's serve while and after it relayed, \(memory.bytesRead) bytes read")
    // The positive control: what a relay must know (the notebook's id) is found.
    XCTAssertTrue(memory.found.contains(needles.count), "the reader found not even the notebook id in s's memory")
    XCTAssertEqual(memory.found.subtracting([needles.count]), [], "canaries in s's memory")

    // c holds all 50, with the right text.
    let onC = try rows("c").filter { !$0.isDeleted }
    for index in 0..<50 {
      let memo = try XCTUnwrap(onC.first { $0.id.rawValue == ids[index] }, "c lacks memo \(index)")
      XCTAssertEqual(memo.title, titles[index])
      XCTAssertEqual(memo.body, "\(titles[index])\n\(bodies[index])\n")
    }

    // Edits on both sides while apart become conflict copies on both, after two more rounds.
    try ok("b", ["edit", ids[7], "--stdin"], stdin: "\(titles[7])\nedited on b \(canary("editb"))\n")
    try ok("c", ["edit", ids[7], "--stdin"], stdin: "\(titles[7])\nedited on c \(canary("editc"))\n")
    for _ in 0..<2 {
      try sync("b", with: "a")
      try sync("c", with: "a")
    }
    for host in ["b", "c"] {
      let conflicts = object(try ok(host, ["conflicts", "--json"]))["conflicts"] as? [[String: Any]] ?? []
      XCTAssertEqual(conflicts.map { $0["memo"] as? String }, [ids[7]], "\(host): \(conflicts)")
      let versions = try rows(host).filter { $0.id.rawValue == ids[7] || $0.conflictOf?.rawValue == ids[7] }
      XCTAssertEqual(Set(versions.map(\.body)).count, 2, "\(host) holds both edits")
      XCTAssertTrue(
        versions.contains { $0.body.contains(canary("editb")) }
          && versions.contains { $0.body.contains(canary("editc")) })
    }

    // Nothing of it in any byte of s's home…
    let allCanaries = titles + bodies + [canary("editb"), canary("editc")]
    XCTAssertEqual(try found(allCanaries, inHomeOf: "a"), [])
    // …nor in anything s says, at --debug: its daemon's log and every reading command.
    var outputs = server.text
    let show = try Lab.exec("a", ["--debug", "show", ids[3]])
    XCTAssertEqual(show.status, 22, show.stderr)
    XCTAssertTrue(show.stderr.contains("sealed for the members of notebook"), show.stderr)
    outputs += show.stdout + show.stderr
    for command in [
      ["list"], ["list", "--json"], ["search", "memo"], ["search", "memo", "--json"], ["notebook", "list"],
      ["notebook", "show", String(personal.prefix(8))], ["widget", "--json"], ["peers", "--json"], ["conflicts"],
      ["export", "--format", "markdown", "\(Lab.directory)/a-export-\(run)"], ["status", "--json"],
    ] {
      let result = try Lab.exec("a", ["--debug"] + command)
      XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
      outputs += result.stdout + result.stderr
    }
    XCTAssertNotNil(
      outputs.range(
        of: #"notebook [0-9a-f]{8}…: 5[0-9] sealed revisions, relay for laptop-b, laptop-c"#,
        options: .regularExpression),
      outputs)
    XCTAssertEqual(allCanaries.filter { outputs.contains($0) }, [], "canaries in s's output")
  }

  // MARK: - History through the hub

  /// The sealed records `host` keeps of `memo` (a member's current one, a relay's records
  /// and their history), read from its database in this process.
  func sealedRecords(_ host: String, of memo: String) throws -> [[UInt8]] {
    let db = try SQLiteConnection(path: try Lab.paths(host).databasePath, create: false)
    let read = try db.prepare(
      "SELECT record FROM memos WHERE id = ?1 AND record IS NOT NULL UNION ALL SELECT sealed FROM relayed WHERE memo = ?1 "
        + "UNION ALL SELECT sealed FROM relayed_history WHERE memo = ?1")
    try read.bind(1, memo)
    var records: [[UInt8]] = []
    while try read.step() { records.append(read.blob(0)) }
    return records
  }

  func history(_ host: String, _ memo: String) throws -> [[String: Any]] {
    object(try ok(host, ["history", memo, "--json"]))["revisions"] as? [[String: Any]] ?? []
  }

  /// b edits a memo three times and deletes another; c, which meets b only through the relay
  /// s, sees b named as the author of each revision, restores revision 1 and the deleted memo
  /// from the trash, and both arrive back on b; a memo b edited while c was away is restored
  /// from the history only the relay kept (`history --from`); `undo --device b` on c reverts b's later
  /// edit; `delete --purge` on c leaves no sealed record of that memo on s or on b.
  func testHistoryTrashUndoAndPurgeThroughTheHub() throws {
    for host in ["a", "b", "c"] { try ok(host, ["consent", "grant"]) }
    let server = try hubWhereTheLaptopsNeverMeet()
    try ok("c", ["notebook", "default", "personal (2)"])
    func round() throws {
      try sync("b", with: "a")
      try sync("c", with: "a")
    }
    let text = (0...3).map { canary("rev\($0)") }
    let memo = try ok("b", ["new"], stdin: "\(text[0])\nfirst\n").trimmingCharacters(in: .whitespacesAndNewlines)
    let doomed = try ok("b", ["new"], stdin: "\(canary("doomed"))\nto be deleted\n")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let later = try ok("b", ["new"], stdin: "\(canary("later"))\nas it was\n")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    try round()
    for index in 1...3 {
      try ok("b", ["edit", memo, "--stdin"], stdin: "\(text[index])\nedit \(index)\n")
      try round()
    }
    try ok("b", ["delete", doomed, "--yes"])
    try round()

    // c's history: four revisions, each signed by b and named so.
    let revisions = try history("c", memo)
    XCTAssertEqual(revisions.compactMap { $0["first_line"] as? String }, text, "\(revisions)")
    for revision in revisions {
      let author = revision["author"] as? [String: Any]
      XCTAssertEqual(author?["name"] as? String, name("b"), "\(revision)")
      XCTAssertEqual(author?["this_device"] as? Bool, false)
    }
    XCTAssertTrue(try ok("c", ["show", memo]).contains("edited on \(name("b"))"))

    // c is away while b edits another memo three times: its sync brings the last revision
    // only, and `history --from` the relay brings the three only the relay still holds,
    // each signed by b; c restores the first, which reaches b like an edit.
    let away = (0...3).map { canary("away\($0)") }
    let awayMemo = try ok("b", ["new"], stdin: "\(away[0])\nfirst\n").trimmingCharacters(in: .whitespacesAndNewlines)
    try sync("b", with: "a")
    for index in 1...3 {
      try ok("b", ["edit", awayMemo, "--stdin"], stdin: "\(away[index])\nedit \(index)\n")
      try sync("b", with: "a")
    }
    try sync("c", with: "a")
    XCTAssertEqual(try history("c", awayMemo).compactMap { $0["first_line"] as? String }, [away[3]])
    let fetched = object(try ok("c", ["history", awayMemo, "--from", name("a"), "--json", "--timeout", "30"]))
    XCTAssertEqual((fetched["fetched"] as? [String: Any])?["added"] as? Int, 3, "\(fetched)")
    let kept = fetched["revisions"] as? [[String: Any]] ?? []
    XCTAssertEqual(kept.compactMap { $0["first_line"] as? String }, away, "\(fetched)")
    XCTAssertEqual(Set(kept.compactMap { ($0["author"] as? [String: Any])?["name"] as? String }), [name("b")])
    XCTAssertTrue(
      try ok("c", ["history", awayMemo, "--from", name("a")]).hasPrefix(
        "fetched 0 revisions from \(name("a")) (3 already here)"))
    try ok("c", ["restore", awayMemo, "--revision", "1"])

    // c restores revision 1, and the deleted memo from its trash; both reach b.
    try ok("c", ["restore", memo, "--revision", "1"])
    let trash = object(try ok("c", ["trash", "--json"]))["trash"] as? [[String: Any]] ?? []
    XCTAssertEqual(trash.compactMap { $0["memo"] as? String }, [doomed], "\(trash)")
    try ok("c", ["trash", "restore", doomed])
    try round()
    try sync("b", with: "a")
    let onB = try rows("b")
    XCTAssertEqual(onB.first { $0.id.rawValue == memo }?.title, text[0])
    XCTAssertEqual(onB.first { $0.id.rawValue == doomed }?.isDeleted, false)
    XCTAssertEqual(onB.first { $0.id.rawValue == awayMemo }?.title, away[0], "restored from the relay's history")

    // b edits another memo; c undoes what b did since just before.
    Thread.sleep(forTimeInterval: 1.1)
    let since = ISO8601DateFormatter().string(from: Date())
    Thread.sleep(forTimeInterval: 1.1)
    try ok("b", ["edit", later, "--stdin"], stdin: "\(canary("later"))\nchanged by b\n")
    try round()
    let plan = object(try ok("c", ["undo", "--device", name("b"), "--since", since, "--json"]))
    XCTAssertEqual((plan["memos"] as? [[String: Any]])?.compactMap { $0["memo"] as? String }, [later], "\(plan)")
    let undone = try ok("c", ["undo", "--device", name("b"), "--since", since, "--yes"])
    XCTAssertEqual(try rows("c").first { $0.id.rawValue == later }?.body, "\(canary("later"))\nas it was\n", undone)
    try sync("c", with: "a")
    try sync("b", with: "a")
    XCTAssertEqual(try rows("b").first { $0.id.rawValue == later }?.body, "\(canary("later"))\nas it was\n")

    // Purged on c: nothing of the memo's sealed records stays on s or on b.
    let sealed = try sealedRecords("a", of: memo) + sealedRecords("b", of: memo)
    XCTAssertGreaterThanOrEqual(sealed.count, 2, "the relay held records of it and their history")
    try ok("c", ["delete", "--purge", memo, "--yes"])
    try sync("c", with: "a")
    try sync("b", with: "a")
    server.terminate()
    for host in ["a", "b", "c"] {
      XCTAssertEqual(try sealedRecords(host, of: memo).count, 0, "\(host) keeps records of the purged memo")
      let files = try homeBytes(host)
      for record in sealed {
        let needle = Data(record.prefix(64))
        XCTAssertEqual(files.filter { $0.bytes.range(of: needle) != nil }.map(\.path), [], "\(host)'s raw files")
      }
    }
    XCTAssertFalse(try rows("b").contains { $0.id.rawValue == memo })
  }

  // MARK: - The stolen laptop

  /// b, c (which meets b only through s), the relay s and laptop x (host d), all sharing
  /// b's personal. b runs `trust remove x`; c syncs only with s. Then x gets nothing new
  /// from c or s, and what x writes afterwards reaches nobody.
  func testTheStolenLaptopIsCutOffEverywhereByOneTrustRemove() throws {
    for host in Self.hosts { try ok(host, ["consent", "grant"]) }
    let server = try hubWhereTheLaptopsNeverMeet()
    try ok("c", ["notebook", "default", "personal (2)"])
    // x: a member of personal (its key sealed to it by b), relayed by s, trusted by everyone.
    try trust("d", ["a": [], "b": [], "c": []])
    try trust("a", ["d": []])
    try trust("c", ["d": []])
    try trust("b", ["d": ["--share", "personal"]])
    let laptopX = try serve("d")
    try sync("b", with: "d")
    laptopX.terminate()
    XCTAssertEqual(try acceptInvitations("d").count, 1)
    let before = canary("beforetheft")
    try ok("b", ["new"], stdin: "\(before)\nx may read this\n")
    try sync("b", with: "a")
    try sync("d", with: "a")
    XCTAssertTrue(try rows("d").contains { $0.title == before }, "x reads b's memos before the theft")
    XCTAssertTrue(try recognized(by: "d").contains(name("a")), "x recognises the server's advertisement")

    // The theft: b revokes x; the relay hears it from b, c only from the relay.
    let removed = try ok("b", ["trust", "remove", name("d")])
    XCTAssertTrue(removed.contains("revoked \(name("d"))"), removed)
    try sync("b", with: "a")
    let heard = try ok("c", ["sync", "--peer", name("a"), "--timeout", "30"])
    XCTAssertTrue(heard.contains("revoked here as \(name("a")) passed on: \(name("d"))"), heard)
    for host in ["a", "c"] {
      let list = object(try ok(host, ["trust", "list", "--json"]))
      let peers = (list["peers"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
      XCTAssertFalse(peers.contains(name("d")), "\(host) no longer trusts x: \(peers)")
      let revocations = list["revocations"] as? [[String: Any]] ?? []
      XCTAssertEqual(revocations.map { $0["state"] as? String }, ["applied"], "\(host): \(revocations)")
      XCTAssertEqual(revocations.first?["revoker"] as? String, try deviceID("b"))
    }
    XCTAssertTrue(try ok("c", ["status"]).contains("revoked: \(name("d")) by \(name("b"))"))
    // Every device that applied the revocation rotated its discovery key: x no longer
    // recognises the server's advertisement, while c (which learnt the new key in its
    // hello) does.
    XCTAssertTrue(
      Lab.waitUntil(seconds: 15) { (try? self.recognized(by: "d").contains(self.name("a"))) == false },
      "x still recognises the server")
    XCTAssertTrue(try recognized(by: "c").contains(name("a")), "c recognises the server by its new key")

    // c writes after the theft; x gets nothing new from c or s.
    let after = canary("aftertheft")
    try ok("c", ["new"], stdin: "\(after)\nx must not read this\n")
    try sync("c", with: "a")
    let laptopC = try serve("c")
    for peer in ["a", "c"] {
      let attempt = try Lab.exec("d", ["sync", "--peer", name(peer), "--timeout", "20"])
      XCTAssertNotEqual(attempt.status, 0, "x syncing with \(peer): \(attempt.stdout)")
    }
    XCTAssertFalse(try rows("d").contains { $0.title == after })

    // What x writes afterwards reaches nobody, whoever it tries.
    let stolen = canary("writtenbyx")
    try ok("d", ["new"], stdin: "\(stolen)\nwritten after the theft\n")
    for peer in ["a", "b", "c"] {
      _ = try Lab.exec("d", ["sync", "--peer", name(peer), "--timeout", "20"])
    }
    laptopC.terminate()
    try sync("c", with: "a")
    try sync("b", with: "a")
    for host in ["a", "b", "c"] {
      XCTAssertEqual(try found([stolen], inHomeOf: host), [], "x's memo on \(host)")
      XCTAssertFalse(try rows(host).contains { $0.title == stolen }, "x's memo on \(host)")
    }
    server.terminate()
  }

  /// The trusted devices whose advertisements `host`'s `browse` recognises.
  func recognized(by host: String) throws -> Set<String> {
    // One JSON object per line, one line per advertisement seen.
    let lines = try ok(host, ["browse", "--json", "--timeout", "3"]).split(separator: "\n")
    return Set(lines.compactMap { object(String($0))["trusted_name"] as? String })
  }

  // MARK: - Family and unshare

  /// Live push through the hub: laptops b and c never meet (c got the key through s), and b
  /// does not trust c, so b reaches c only through s. With every daemon under the background-sync
  /// consent, a memo saved on b is on c with nobody running `sync`: b pushes it to s, and
  /// the relay pushes on what it stored.
  func testTheHubPushesOnWhatALaptopSavedToTheOtherLaptop() throws {
    for host in ["a", "b", "c"] { try ok(host, ["consent", "grant"]) }
    let hub = try hubWhereTheLaptopsNeverMeet()
    hub.terminate()
    // b's daemon would dial c straight away: b stops trusting c (on b only), so b reaches c
    // only through s.
    try ok("b", ["trust", "remove", name("c"), "--here-only"])
    for host in ["a", "b", "c"] { try ok(host, ["consent", "grant", "--scope", "background-sync"]) }
    let daemons = try ["a", "b", "c"].map { try serve($0) }
    // Every link up first (the hub has two, each laptop one): a link that comes up after
    // the save would fetch the memo with its first sync, and the hub would push nothing.
    for (host, links) in [("a", 2), ("b", 1), ("c", 1)] {
      XCTAssertTrue(
        Lab.waitUntil(seconds: 60) {
          let serve = (try? self.ok(host, ["status", "--json"])).map { self.object($0)["serve"] as? [String: Any] }
          return ((serve ?? nil)?["live_peers"] as? [Any])?.count == links
        }, "\(host) has \(links) live link(s)")
    }

    let title = canary("livehub")
    let saved = Date()
    try ok("b", ["new"], stdin: "\(title)\nsaved on b, read on c\n")
    let onC = { (self.object(try self.ok("c", ["list", "--json"]))["memos"] as? [[String: Any]] ?? []) }
    XCTAssertTrue(
      Lab.waitUntil(seconds: 30) { (try? onC().contains { $0["title"] as? String == title }) == true },
      daemons.map(\.text).joined(separator: "\n"))
    print("live push through the hub: saved on b, listed on c \(Date().timeIntervalSince(saved)) s later")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) { daemons[0].text.contains("live sync: \(self.name("c")):") }, daemons[0].text)
  }

  func testFamilyReachesOnlyItsMembersAndUnshareStopsNewMemos() throws {
    for host in ["b", "c", "d"] { try ok(host, ["consent", "grant"]) }
    try trust("b", ["c": [], "d": []])
    try trust("c", ["b": [], "d": []])
    try trust("d", ["b": [], "c": []])
    try ok("b", ["notebook", "new", "family"])
    var family: [String: String] = [:]
    var personal: [String: String] = [:]
    for index in 0..<3 {
      let text = canary("family\(index)")
      family[
        try ok("b", ["new", "--notebook", "family"], stdin: "\(text)\n").trimmingCharacters(in: .whitespacesAndNewlines)
      ] =
        text
      let secret = canary("personal\(index)")
      personal[try ok("b", ["new"], stdin: "\(secret)\n").trimmingCharacters(in: .whitespacesAndNewlines)] = secret
    }
    let shared = try ok("b", ["notebook", "share", "family", "--with", name("d")])
    XCTAssertTrue(shared.contains("as member"), shared)
    try ok("b", ["notebook", "share", "family", "--with", name("c")])
    for host in ["b", "c", "d"] { try serve(host) }
    // Each is invited at its first sync; a person accepts; the next sync brings the memos.
    for host in ["c", "d"] {
      try sync(host, with: "b")
      XCTAssertEqual(try acceptInvitations(host).count, 1, host)
      try sync(host, with: "b")
    }
    try sync("d", with: "c")

    func bodies(_ host: String) throws -> Set<String> { Set(try rows(host).filter { !$0.isDeleted }.map(\.body)) }
    XCTAssertEqual(try bodies("d").intersection(family.values.map { $0 + "\n" }).count, 3, "d has the family memos")
    XCTAssertEqual(try notebook("d", named: "family")["memos"] as? Int, 3)
    // Not a row, a revision or a sealed record of a personal memo: not even an id.
    XCTAssertEqual(try found(Array(personal.keys) + Array(personal.values), inHomeOf: "d"), [])

    // b unshares d: the key rotates; d is told it keeps what it has.
    let unshared = try ok("b", ["notebook", "unshare", "family", "--from", name("d")])
    XCTAssertTrue(unshared.contains("keeps the memos it already received"), unshared)
    XCTAssertTrue(unshared.contains("rotated"), unshared)
    let fromB = canary("familyafterb")
    try ok("b", ["new", "--notebook", "family"], stdin: "\(fromB)\n")
    try sync("c", with: "b")  // c gets the new key, the memo, and that d was unshared
    let fromC = canary("familyafterc")
    try ok("c", ["new", "--notebook", "family"], stdin: "\(fromC)\n")
    try sync("b", with: "c")
    try sync("d", with: "b")
    try sync("d", with: "c")
    XCTAssertFalse(try bodies("d").contains(fromB + "\n"), "a new family memo reached d")
    XCTAssertFalse(try bodies("d").contains(fromC + "\n"), "c sent d a family memo after the unshare")
    XCTAssertEqual(try found([fromB, fromC], inHomeOf: "d"), [])
    XCTAssertEqual(try bodies("d").intersection(family.values.map { $0 + "\n" }).count, 3, "d keeps the old ones")
    for host in ["b", "c"] {
      let all = Set(family.values.map { $0 + "\n" }).union([fromB + "\n", fromC + "\n"])
      XCTAssertEqual(try bodies(host).intersection(all), all, "\(host) reads every family memo")
      let rotated = object(try ok(host, ["notebook", "show", "family", "--json"]))["notebook"] as? [String: Any]
      let members = (rotated?["shared_with"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
      XCTAssertFalse(members.contains(name("d")), "\(host) still shares family with d: \(members)")
    }
  }

  /// The memo-peer process of a background command: `lab exec` execs down to it, so it is
  /// the PID held (checked through /proc/PID/exe).
  func memoPeerProcess(_ background: Background) throws -> Int32 {
    let pid = background.process.processIdentifier
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    XCTAssertEqual(
      URL(fileURLWithPath: exe).resolvingSymlinksInPath().path,
      URL(fileURLWithPath: Lab.binary).resolvingSymlinksInPath().path)
    return pid
  }
}
