import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import XCTest

/// One broken device and one stranger against a running `serve` (issue 13), with real
/// processes on the lab: `memo-peer-hostile` (a test tool, Tests/memo-peer-hostile) speaks
/// the protocol as host a's trusted device and sends cases 1–4; then floods from host c as a
/// stranger while a trusted device pings and syncs.
final class HostileLabTests: LabTestCase {
  let port = "7413"
  var hostile: String { Lab.builtProduct("memo-peer-hostile") }

  func address(_ host: String) throws -> String {
    let hosts = try String(contentsOfFile: Lab.directory + "/hosts", encoding: .utf8)
    let line = hosts.split(separator: "\n").map { $0.split(separator: " ") }.first { $0.first.map(String.init) == host }
    return String(try XCTUnwrap(line?.last))
  }

  func serve(_ host: String) throws -> Background {
    let server = try start(host, ["--debug", "serve", "--port", port])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { server.text.contains("advertising") }, server.text)
    return server
  }

  /// The hostile tool on host a (as a's device) sending `name` to b's daemon.
  func send(_ name: String, to host: String = "b", file: StaticString = #filePath, line: UInt = #line) throws
    -> [String: Any]
  {
    let result = try Lab.exec("a", ["ask", try address(host), port, name], tool: hostile)
    XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)", file: file, line: line)
    return object(result.stdout)
  }

  /// Every memo on `host` (tombstones and copies too), as comparable lines.
  func rows(_ host: String) throws -> [String] {
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(Lab.directory)/\(host)/home"])
    return try MemoStore.open(paths: paths, use: .background).allHeadRows().map {
      "\($0.id) \($0.revision) \($0.dot.map(String.init(describing:)) ?? "-") \($0.isDeleted) \($0.body)"
    }
  }

  func trust(_ host: String, _ others: [String]) throws {
    for other in others { try ok(host, ["trust", "add", try deviceID(other), "--name", "host-\(other)"]) }
  }

  /// Cases 1–4 from a trusted device that misbehaves: `serve` refuses each bad batch with its
  /// reason (logged with the device), stores nothing of it, holds the mass delete, stays up,
  /// answers a normal ping afterwards, and a memo made later on honest host c still reaches
  /// it (the poisoned knowledge was not adopted).
  func testAMisbehavingTrustedDeviceCannotHurtServe() throws {
    for host in ["a", "b", "c"] { try ok(host, ["consent", "grant"]) }
    try trust("b", ["a", "c"])
    try trust("c", ["b"])
    // One notebook among the three (a's batches are sealed in it, so b opens and checks them).
    try Lab.shareOneNotebook(["b", "a", "c"])
    for index in 1...20 { try ok("b", ["new", "--title", "b \(index)"], stdin: "memo \(index) on b\n") }
    try ok("c", ["new", "--title", "from c"], stdin: "first memo on c\n")
    let server = try serve("b")
    XCTAssertEqual(try Lab.exec("c", ["sync", "--peer", "host-b", "--timeout", "30"]).status, 0)
    let before = try rows("b")
    XCTAssertEqual(before.count, 21)

    // Cases 1–3: each refused with its reason; nothing stored.
    let refusals = [
      ("pending", "refused out-of-range"), ("knowledge-range", "refused out-of-range"),
      ("knowledge-wide", "refused too-many-replicas"), ("revision-max", "refused out-of-range"),
    ]
    let a = try deviceID("a").replacingOccurrences(of: "-", with: "")
    for (name, expected) in refusals {
      XCTAssertEqual(try send(name)["answer"] as? String, expected, name)
      XCTAssertTrue(server.process.isRunning, "serve survived \(name)")
      XCTAssertEqual(try send("ping")["answer"] as? String, "pong", "serve answers after \(name)")
      XCTAssertEqual(try rows("b"), before, "nothing of \(name) was stored")
    }
    for reason in Set(refusals.map { $0.1.replacingOccurrences(of: "refused ", with: "") }) {
      XCTAssertTrue(
        server.text.contains("sync with \(a.prefix(8)): refused its data: \(reason)"), "the log names a: \(server.text)"
      )
    }
    // `peers` on b shows the last of them under a, with its evidence.
    let peers = object(try ok("b", ["peers", "--json"]))["peers"] as? [[String: Any]] ?? []
    let refusal = peers.first { $0["device_id"] as? String == a }?["last_refusal"] as? [String: Any]
    XCTAssertEqual(refusal?["reason"] as? String, "out-of-range", "\(peers)")
    XCTAssertTrue((refusal?["detail"] as? String ?? "").contains("2^53"), "\(peers)")

    // A clock claiming b's future: a lie by the record's signer, which a peer may only
    // pass on, so b keeps it aside and the sync goes on; nothing of it is stored.
    let futureClock = try send("future-clock")
    XCTAssertEqual(futureClock["answer"] as? String, "acknowledged", "\(futureClock)")
    XCTAssertEqual(futureClock["quarantined"] as? Int, 1, "\(futureClock)")
    XCTAssertTrue(server.process.isRunning, "serve survived future-clock")
    XCTAssertEqual(try rows("b"), before, "nothing of future-clock was stored")

    // A revision claiming b's own replica, next to an honest one of a's: since revisions
    // are signed, the forgery is kept aside (a's key does not sign for b's replica), the
    // rest of the batch is stored, and the log names a as the device that passed it on.
    let ownOrigin = try send("own-origin")
    XCTAssertEqual(ownOrigin["answer"] as? String, "acknowledged", "\(ownOrigin)")
    XCTAssertEqual(ownOrigin["quarantined"] as? Int, 1, "\(ownOrigin)")
    XCTAssertEqual(try send("ping")["answer"] as? String, "pong", "serve answers after own-origin")
    let withHonest = try rows("b")
    XCTAssertEqual(withHonest.count, before.count + 1, "a's own revision is stored")
    XCTAssertTrue(Set(before).isSubset(of: Set(withHonest)), "nothing of b's own replica changed")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) { server.text.contains("sync with \(a.prefix(8)): kept aside 1 records") }, server.text
    )

    // Case 2: knowledge of 2^53 for every replica b knows, accepted but capped.
    XCTAssertEqual(try send("knowledge-poison")["answer"] as? String, "acknowledged")
    // Case 4: 100 junk memos and a tombstone of every memo of b's: the deletes are held.
    let massDelete = try send("mass-delete")
    XCTAssertEqual(massDelete["answer"] as? String, "acknowledged")
    XCTAssertEqual(massDelete["held_deletes"] as? Int, withHonest.count, "\(massDelete)")
    let after = try rows("b")
    XCTAssertTrue(Set(withHonest).isSubset(of: Set(after)), "no memo of b's was deleted or changed")
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { server.text.contains("held deletes \(withHonest.count)") }, server.text)

    // A normal ping from a trusted device, and a memo made later on c reaches b.
    let ping = try Lab.exec("c", ["ping", "host-b", "--count", "1", "--timeout", "30"])
    XCTAssertEqual(ping.status, 0, ping.stderr)
    try ok("c", ["new", "--title", "later"], stdin: "made on c after the poison\n")
    XCTAssertEqual(try Lab.exec("c", ["sync", "--peer", "host-b", "--timeout", "30"]).status, 0)
    XCTAssertTrue(try rows("b").contains { $0.hasSuffix("made on c after the poison\n") }, "c's new memo reached b")
    XCTAssertTrue(server.process.isRunning)
  }

  /// `serve`'s resident memory (KiB) and open descriptors, from /proc.
  func usage(_ process: Background) -> (rssKiB: Int, descriptors: Int) {
    let pid = process.process.processIdentifier
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
      Int($0.split(separator: " ").dropFirst().first ?? "")
    }
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    return (rss ?? -1, descriptors)
  }

  /// The strangers test, with its one timing demand: host c (a stranger) keeps 200
  /// idle TCP connections and 50 slow TLS handshakes open to b's `serve`, reopening whatever
  /// is closed, for 25 s; meanwhile trusted host a pings and syncs b. Each completes in its
  /// normal time — the issue says well under 1 s on the lab; the bound asserted is 2 s for
  /// the whole command (start-up, finding b by mDNS, the handshake), which before this change
  /// was out of reach: the connection slots were held until each stranger's 10 s handshake
  /// limit. `serve` stays up with its descriptors and memory bounded; the figures are printed.
  func testStrangersCannotStarveServe() throws {
    for host in ["a", "b"] { try ok(host, ["consent", "grant"]) }
    try trust("a", ["b"])
    try trust("b", ["a"])
    try Lab.shareOneNotebook(["b", "a"])
    for index in 1...5 { try ok("b", ["new"], stdin: "memo \(index)\n") }
    let server = try serve("b")
    let ping = ["ping", "host-b", "--count", "1", "--timeout", "10"]
    let sync = ["sync", "--peer", "host-b", "--timeout", "10"]
    var baseline: [Int] = []
    for arguments in [ping, sync, ping, sync] {
      let run = try Lab.timed("a", arguments)
      XCTAssertEqual(run.status, 0, run.stderr)
      baseline.append(run.milliseconds)
    }
    let quiet = usage(server)
    let flood = try XCTUnwrap(
      Lab.startTool("c", hostile, ["flood", try address("b"), port, "200", "50", "25"]))
    background.append(flood)
    Thread.sleep(forTimeInterval: 3)
    var underFlood: [Int] = []
    var peak = quiet
    for round in 0..<4 {
      for arguments in [ping, sync] {
        let run = try Lab.timed("a", arguments)
        XCTAssertEqual(run.status, 0, "round \(round) \(arguments[0]): \(run.stderr)")
        underFlood.append(run.milliseconds)
        let now = usage(server)
        peak = (max(peak.rssKiB, now.rssKiB), max(peak.descriptors, now.descriptors))
      }
    }
    XCTAssertNotNil(flood.exitStatus(within: 40), "the flood ends by itself")
    let stats = object(flood.text.split(separator: "\n").last.map(String.init) ?? "")
    print(
      "strangers: baseline ping/sync ms \(baseline); under the flood \(underFlood); "
        + "serve quiet \(quiet.rssKiB) KiB \(quiet.descriptors) fds, peak \(peak.rssKiB) KiB \(peak.descriptors) fds; "
        + "flood \(stats)")
    for milliseconds in underFlood { XCTAssertLessThanOrEqual(milliseconds, 2000, "under the flood: \(underFlood)") }
    XCTAssertTrue(server.process.isRunning)
    XCTAssertGreaterThan(stats["opened"] as? Int ?? 0, 250, "the stranger kept reconnecting: \(stats)")
    // 32 unauthenticated connections at most, plus the trusted ones and the daemon's own
    // (listener, pipes, Avahi, the store): well under 100.
    XCTAssertLessThan(peak.descriptors, 100, "descriptors bounded")
    XCTAssertLessThan(peak.rssKiB - quiet.rssKiB, 64 * 1024, "memory bounded (grew \(peak.rssKiB - quiet.rssKiB) KiB)")
    let after = try Lab.timed("a", ping)
    XCTAssertEqual(after.status, 0, after.stderr)
  }
}
