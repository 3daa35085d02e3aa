import Foundation
import Synchronization
import XCTest

/// Live sync among five lab hosts, each running `serve --web` as the user unit does, every
/// one under the background-sync consent, nobody typing `sync`: a change made on one (with
/// the CLI, or on the web page) is on the other four; two edits of one memo at once end as
/// the same conflict copies everywhere; and after each fault (a link down for 30 s and back with a new address, a
/// daemon stopped for 60 s, a daemon killed in the middle of its pushes) every host holds
/// the same memos, memo by memo, nothing lost and nothing twice.
final class LiveSyncLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b", "c", "d", "e"] }

  // MARK: - Helpers

  /// `host`'s memos, memo by memo: id, title, body (`export`-free: `list --json` and
  /// `show --json`), sorted by id.
  func holdings(_ host: String) throws -> [String] {
    let listed = object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []
    return try listed.compactMap { $0["id"] as? String }.sorted().map { id in
      let memo = object(try ok(host, ["show", id, "--json"]))["memo"] as? [String: Any] ?? [:]
      return "\(id) \(memo["title"] as? String ?? "?") \(memo["body"] as? String ?? "?")"
    }
  }

  /// `host`'s memos by id, title and revision, from one `list --json` (for many memos,
  /// where `holdings` would run `show` for each).
  func listing(_ host: String) throws -> [String] {
    let listed = object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []
    return listed.map { "\($0["id"] as? String ?? "?") \($0["title"] as? String ?? "?") \($0["revision"] ?? "?")" }
      .sorted()
  }

  /// Waits until every host holds the same `count` memos, memo by memo (`holdings`, or
  /// `look`); fails naming who holds what otherwise.
  func assertConverged(
    on count: Int, within seconds: Double, _ what: String, look: ((String) throws -> [String])? = nil,
    line: UInt = #line
  ) throws {
    var last: [String: [String]] = [:]
    let converged = try Lab.waitUntil(seconds: seconds) {
      last = [:]
      for host in Self.hosts { last[host] = try (look ?? holdings)(host) }
      let first = last["a"] ?? []
      return first.count == count && Set(first).count == count && Self.hosts.allSatisfy { last[$0] == first }
    }
    XCTAssertTrue(
      converged, "\(what): not the same \(count) memos everywhere: \(last.mapValues(\.count)) \(last)", line: line)
  }

  // MARK: - Tests

  func testAChangeOnOneIsOnTheOtherFourAndAConflictEndsAsTheSameCopiesEverywhere() throws {
    try meshOfLiveDaemons()
    let memo = try newMemo("a", title: "from a")
    try assertConverged(on: 1, within: 20, "a memo made on a")

    // b and c edit it at once: both edits are kept, as conflict copies, the same on all.
    let editors = ["b", "c"]
    let statuses = Mutex([Int32?](repeating: nil, count: editors.count))
    DispatchQueue.concurrentPerform(iterations: editors.count) { index in
      let host = editors[index]
      let result = try? Lab.exec(host, ["edit", memo, "--stdin"], stdin: "edited on \(host) at once\n")
      statuses.withLock { $0[index] = result?.status }
    }
    XCTAssertEqual(statuses.withLock { $0 }, [0, 0], "both edits were made")
    var conflicts: [String: String] = [:]
    let copies = try Lab.waitUntil(seconds: 30) {
      conflicts = [:]
      for host in Self.hosts {
        let listed = object(try ok(host, ["conflicts", "--json"]))["conflicts"] as? [[String: Any]] ?? []
        let ids = listed.flatMap { ($0["copies"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
        conflicts[host] = "\(listed.compactMap { $0["memo"] as? String }) \(ids.sorted())"
      }
      return Set(conflicts.values).count == 1 && conflicts["a"]?.contains(memo) == true
    }
    XCTAssertTrue(copies, "the same conflict copies everywhere: \(conflicts)")
    try assertConverged(on: 2, within: 20, "the memo and its conflict copy")

    // A memo made on d's web page (its JSON API, as the page's script calls it, on the
    // server `serve --web` runs) is on the other four.
    let link = try XCTUnwrap(
      try ok("d", ["web"]).split(separator: "\n").map(String.init).first { $0.hasPrefix("http://") }, "d's sign-in link"
    )
    let base = try XCTUnwrap(link.components(separatedBy: "/login").first)
    let jar = NSTemporaryDirectory() + "live-sync-cookies-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: jar) }
    let curl = "/usr/bin/curl"
    let signIn = try Lab.exec("d", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-c", jar, link], tool: curl)
    XCTAssertEqual(signIn.stdout, "303", signIn.stderr)
    let made = try Lab.exec(
      "d",
      [
        "-s", "-o", "/dev/null", "-w", "%{http_code}", "-b", jar, "-H", "Origin: \(base)", "-H",
        "Content-Type: application/json", "--data",
        #"{"title": "made on the page on d", "body": "typed in a browser"}"#,
        base + "/api/memos",
      ], tool: curl)
    XCTAssertEqual(made.stdout, "201", made.stderr)
    try assertConverged(on: 3, within: 20, "a memo made on d's page")
  }

  func testEveryHostConvergesAfterALinkDownANewAddressASleepAndAKill() throws {
    try meshOfLiveDaemons()
    var made = 0
    func edits(on hosts: [String], _ label: String) throws {
      for host in hosts {
        _ = try newMemo(host, title: "\(label) on \(host)")
        made += 1
      }
    }

    // e's link goes down for 30 s while the others edit, and comes back with a new address.
    let ip = "/usr/sbin/ip"
    XCTAssertEqual(try Lab.exec("e", ["link", "set", "eth0", "down"], tool: ip).status, 0)
    try edits(on: ["a", "b", "c"], "while e was cut off")
    Thread.sleep(forTimeInterval: 30)
    XCTAssertEqual(try Lab.exec("e", ["addr", "flush", "dev", "eth0"], tool: ip).status, 0)
    XCTAssertEqual(try Lab.exec("e", ["addr", "add", "169.254.77.99/16", "dev", "eth0"], tool: ip).status, 0)
    XCTAssertEqual(try Lab.exec("e", ["link", "set", "eth0", "up"], tool: ip).status, 0)
    try edits(on: ["e"], "after e came back")
    try assertConverged(on: made, within: 60, "after e's link was down for 30 s")
    // e heard of its interface and address from the kernel, and checked its links at once.
    let e = try XCTUnwrap(daemons["e"])
    XCTAssertTrue(e.text.contains("the network changed here"), e.text)

    // d's daemon sleeps for 60 s (SIGSTOP, as a laptop's lid) while the others edit.
    let d = try XCTUnwrap(daemons["d"])
    kill(d.process.processIdentifier, SIGSTOP)
    try edits(on: ["a", "c", "e"], "while d slept")
    Thread.sleep(forTimeInterval: 60)
    kill(d.process.processIdentifier, SIGCONT)
    try edits(on: ["d"], "after d woke")
    try assertConverged(on: made, within: 60, "after d's daemon slept for 60 s")

    // b's daemon is killed while its pushes run, and started again.
    let b = try XCTUnwrap(daemons["b"])
    try edits(on: ["b"], "just before b's daemon was killed")
    kill(b.process.processIdentifier, SIGKILL)
    b.process.waitUntilExit()
    try edits(on: ["a"], "while b's daemon was down")
    try startDaemon("b")
    try assertConverged(on: made, within: 60, "after b's daemon was killed and started again")
  }

  func testAnAvahiRestartIsFollowedAndEveryHostStaysInSync() throws {
    try meshOfLiveDaemons()
    _ = try newMemo("a", title: "before b's avahi-daemon restarted")
    try assertConverged(on: 1, within: 20, "a memo made before the restart")

    // b's avahi-daemon restarts (an upgrade, `systemctl restart avahi-daemon`): it forgets
    // b's advertisement, and b's daemon registers it again by itself.
    try Lab.restartAvahi("b")
    // Asked of b's own avahi-daemon (others may still hold b's old record in their caches).
    // Meanwhile b's status must show its live links all along: they work throughout, and
    // status once said 0 while b's daemon waited for avahi.
    var seen = ""
    var linksShown: [Int] = []
    let advertised = try Lab.waitUntil(seconds: 20) {
      let serve = object(try ok("b", ["status", "--json"]))["serve"] as? [String: Any]
      linksShown.append((serve?["live_peers"] as? [Any])?.count ?? 0)
      let instance = serve?["instance"] as? String
      seen = try Lab.exec("b", ["-p", "-t", "_memo-peer._tcp"], tool: "/usr/bin/avahi-browse").stdout
      return instance.map { seen.contains(";\($0);") } ?? false
    }
    XCTAssertTrue(advertised, "b's avahi-daemon has b's advertisement again after its restart: \(seen)")
    XCTAssertEqual(try livePeers("b"), Self.hosts.count - 1, "b's live links outlived the restart")
    XCTAssertEqual(
      linksShown.min(), Self.hosts.count - 1, "status showed b's live links throughout the restart: \(linksShown)")

    // A reload (SIGHUP, `systemctl reload`) re-reads the trust store: the links go on, and
    // so does what status shows of them.
    let b = try XCTUnwrap(daemons["b"])
    kill(b.process.processIdentifier, SIGHUP)
    var afterReload: [Int] = []
    for _ in 0..<6 {
      afterReload.append(try livePeers("b"))
      Thread.sleep(forTimeInterval: 0.5)
    }
    XCTAssertEqual(
      afterReload.min(), Self.hosts.count - 1, "status showed b's live links across a reload: \(afterReload)")

    // Changes still go both ways, and a daemon started after the restart links with b.
    _ = try newMemo("b", title: "made on b after its avahi-daemon restarted")
    _ = try newMemo("a", title: "made on a after b's avahi-daemon restarted")
    try assertConverged(on: 3, within: 30, "memos made after the restart")
    let c = try XCTUnwrap(daemons["c"])
    c.process.terminate()
    c.process.waitUntilExit()
    _ = try newMemo("b", title: "made on b while c's daemon was down")
    try startDaemon("c")
    try assertConverged(on: 4, within: 30, "after c's daemon started again")
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 30) { try livePeers("c") == Self.hosts.count - 1 },
      "c links with everyone again: \((try? livePeers("c")) ?? -1)")
  }

  func testEveryHostConvergesWhenOneLinkIsThrottledTo1MbitWhile200MemosAreMade() throws {
    try meshOfLiveDaemons()
    // e's link: 1 Mbit/s through a token bucket (this kernel has no netem).
    let throttle = try Lab.exec(
      "e", ["qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "1mbit", "burst", "32kbit", "latency", "400ms"],
      tool: "/usr/sbin/tc")
    XCTAssertEqual(throttle.status, 0, throttle.stderr)
    defer { _ = try? Lab.exec("e", ["qdisc", "del", "dev", "eth0", "root"], tool: "/usr/sbin/tc") }
    let makers = ["a", "b", "c"]
    let failures = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: makers.count) { index in
      let host = makers[index]
      for number in 0..<(index == 0 ? 68 : 66) {
        let made = try? Lab.exec(host, ["new", "--title", "\(host) \(number)"], stdin: "made while e was slow\n")
        if made?.status != 0 { failures.withLock { $0 += 1 } }
      }
    }
    XCTAssertEqual(failures.withLock { $0 }, 0, "every memo was made")
    try assertConverged(on: 200, within: 120, "200 memos made while e's link ran at 1 Mbit/s", look: listing)
  }
}
