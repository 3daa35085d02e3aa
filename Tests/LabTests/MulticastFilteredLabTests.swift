import Foundation
import XCTest

/// A home network that filters multicast DNS (IGMP snooping, client isolation, a VLAN):
/// the lab's bridge drops 224.0.0.251 and ff02::fb (`scripts/lab multicast off`). Two
/// laptops that met once keep syncing through the addresses they were reached at, after
/// both daemons restart and DNS-SD shows neither; and an address a person gives is dialled
/// too.
final class MulticastFilteredLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  override func tearDown() {
    _ = try? Lab.run(Lab.script, ["multicast", "on"], environment: Lab.labEnvironment)
    super.tearDown()
  }

  func filterMulticast() throws {
    let result = try Lab.run(Lab.script, ["multicast", "off"], environment: Lab.labEnvironment)
    XCTAssertEqual(result.status, 0, "scripts/lab multicast off: \(result.stderr)")
  }

  /// The other hosts' memo-peer advertisements `host`'s avahi-daemon shows (`avahi-browse
  /// -t -p --ignore-local`).
  func advertisementsSeen(on host: String) throws -> [String] {
    let browsed = try Lab.exec(host, ["-t", "-p", "--ignore-local", "_memo-peer._tcp"], tool: "avahi-browse")
    return browsed.stdout.split(separator: "\n").filter { $0.hasPrefix("+") }.map(String.init)
  }

  /// Where `host` remembers `peer` was reached (`trust address PEER list --json`).
  func reached(_ host: String, peer: String) throws -> [String] {
    let listed = object(try ok(host, ["trust", "address", peer, "list", "--json"]))
    let addresses = listed["addresses"] as? [String: Any] ?? [:]
    return (addresses["reached"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
  }

  func testLaptopsThatMetKeepSyncingAfterARestartWithMulticastFiltered() throws {
    try meshOfLiveDaemons()
    // Each dialled the other for its live link: each remembers where.
    for (host, peer) in [("a", "host-b"), ("b", "host-a")] {
      XCTAssertFalse(try reached(host, peer: peer).isEmpty, "\(host) remembers where \(peer) was reached")
    }
    for daemon in daemons.values { daemon.terminate() }
    daemons = [:]
    try filterMulticast()
    // A reboot: both avahi-daemons start again with empty caches.
    for host in Self.hosts { try Lab.restartAvahi(host) }
    for host in Self.hosts { try startDaemon(host) }
    for host in Self.hosts {
      XCTAssertTrue(
        try Lab.waitUntil(seconds: 60) { try livePeers(host) == 1 },
        "\(host)'s live link is up again: \(daemons[host]?.text.suffix(3000) ?? "")")
    }

    // The daemons know it too: each dialled the other at an address DNS-SD did not show.
    let serve = object(try ok("b", ["status", "--json"]))["serve"] as? [String: Any]
    let dialled = serve?["live_addresses"] as? [String: String] ?? [:]
    XCTAssertEqual(dialled.count, 1, "\(serve ?? [:])")
    XCTAssertEqual(dialled.values.first?.hasPrefix("169.254.77."), true, "\(dialled)")
    XCTAssertTrue(try ok("b", ["status"]).contains("reached at an address DNS-SD did not show"))

    // Live sync: a memo made on a is on b with nobody typing `sync`.
    let started = Date()
    let id = try ok("a", ["new", "--title", "through the filter"], stdin: "made on a\n")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 30) { (try? Lab.exec("b", ["show", id]).status) == 0 }, "the memo reached b live")
    print("a memo made on a was readable on b after \(String(format: "%.2f", Date().timeIntervalSince(started))) s")

    // The commands a person types work too, through the remembered addresses.
    try ok("b", ["ping", "host-a"])
    try ok("b", ["sync", "--peer", "host-a"])
    try ok("a", ["send", "-", "--to", "host-b", "--wait", "10"], stdin: "sent through the filter\n")
    // Each daemon's advertisement is out (its own avahi-daemon shows it), and the other's
    // avahi-daemon still sees none of it through the filter.
    for host in Self.hosts {
      XCTAssertTrue(
        try Lab.waitUntil(seconds: 10) {
          !(try Lab.exec(host, ["-t", "-p", "_memo-peer._tcp"], tool: "avahi-browse").stdout.isEmpty)
        }, "\(host) advertises")
      XCTAssertEqual(try advertisementsSeen(on: host), [], "\(host) sees no other device through the filter")
    }

    // `doctor` names what happened, and the path it used.
    let checks = object(try Lab.exec("b", ["doctor", "--json"]).stdout)["checks"] as? [[String: Any]] ?? []
    let peers = try XCTUnwrap(checks.first { $0["name"] as? String == "trusted devices" }, "\(checks)")
    XCTAssertEqual(peers["ok"] as? Bool, true, "\(peers)")
    XCTAssertTrue(
      (peers["detail"] as? String ?? "").contains("host-a: not shown by DNS-SD, reached at 169.254."), "\(peers)")
    XCTAssertTrue((peers["fix"] as? String ?? "").contains("filter multicast DNS"), "\(peers)")

    // With a's daemon gone, no path is left: doctor says so and exits 1.
    daemons["a"]?.terminate()
    let lost = try Lab.exec("b", ["doctor", "--json"])
    XCTAssertEqual(lost.status, 1)
    let after = object(lost.stdout)["checks"] as? [[String: Any]] ?? []
    let none = try XCTUnwrap(after.first { $0["name"] as? String == "trusted devices" }, "\(after)")
    XCTAssertEqual(none["ok"] as? Bool, false)
    XCTAssertTrue(
      (none["detail"] as? String ?? "").contains("host-a: not shown by DNS-SD, and no answer at"), "\(none)")
  }

  func testALaptopWhoseAddressChangedIsReachedAgainWithMulticastFiltered() throws {
    try meshOfLiveDaemons()
    try filterMulticast()
    for host in Self.hosts { try Lab.restartAvahi(host) }
    // a gets a new address: its daemon hears of it, dials b where b was, and b learns
    // where a is now from that connection.
    let old = try labAddress(of: "a")
    XCTAssertEqual(try Lab.exec("a", ["addr", "flush", "dev", "eth0"], tool: "ip").status, 0)
    XCTAssertEqual(try Lab.exec("a", ["addr", "add", "169.254.77.99/16", "dev", "eth0"], tool: "ip").status, 0)
    let started = Date()
    let reachedAgain = Lab.waitUntil(seconds: 60) {
      (try? Lab.exec("b", ["ping", "host-a", "--count", "1", "--timeout", "3"]).status) == 0
    }
    XCTAssertTrue(reachedAgain, "b reaches a at its new address; a's daemon: \(daemons["a"]?.text.suffix(2000) ?? "")")
    print(
      "b reached a at its new address \(String(format: "%.1f", Date().timeIntervalSince(started))) s after it changed")
    XCTAssertEqual(
      try reached("b", peer: "host-a").first?.hasPrefix("169.254.77.99:"), true, "newest first, not \(old)")
    // a's hello said where it listens now, and b keeps that too.
    let listed = object(try ok("b", ["trust", "address", "host-a", "list", "--json"]))
    let said = ((listed["addresses"] as? [String: Any])?["announced"] as? [String: Any])?["addresses"] as? [String]
    XCTAssertEqual(said?.first?.hasPrefix("169.254.77.99:"), true, "\(listed)")
    let id = try ok("b", ["new", "--title", "after a moved"], stdin: "made on b\n")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 30) { (try? Lab.exec("a", ["show", id]).status) == 0 }, "b's memo reached a live")
  }

  func testAnAddressAPersonGaveIsDialledAndABadOneIsRefusedClearly() throws {
    try filterMulticast()
    for host in Self.hosts {
      try ok(host, ["consent", "grant"])
      try ok(host, ["consent", "grant", "--scope", "background-sync"])
    }
    let a = try deviceID("a")
    let b = try deviceID("b")
    // b serves on a port it was told; a is given that address, never having met b.
    try ok("b", ["trust", "add", a, "--name", "host-a"])
    let daemon = try start("b", ["--debug", "serve", "--port", "7878"])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { daemon.text.contains("advertising") }, daemon.text)
    let address = try labAddress(of: "b")
    for bad in ["garbage!", "\(address):0", "\(address):70000", "\(address)%eth0", "no-such-host.invalid"] {
      let refused = try Lab.exec("a", ["trust", "add", b, "--name", "host-b", "--address", bad])
      XCTAssertEqual(refused.status, 4, "\(bad): \(refused.stderr)")
      XCTAssertTrue(refused.stderr.contains("address") || refused.stderr.contains("resolve"), refused.stderr)
    }
    XCTAssertEqual((object(try ok("a", ["trust", "list", "--json"]))["peers"] as? [Any])?.count, 0, "nothing trusted")
    try ok("a", ["trust", "add", b, "--name", "host-b", "--address", "\(address):7878"])
    try ok("a", ["ping", "host-b"])
    let given = object(try ok("a", ["peers", "--json"]))["peers"] as? [[String: Any]] ?? []
    XCTAssertEqual(
      (given.first?["addresses"] as? [String: Any])?["given"] as? [String], ["\(address):7878"], "\(given)")
    try ok("a", ["trust", "address", "host-b", "remove", "\(address):7878"])
    let gone = try Lab.exec("a", ["trust", "address", "host-b", "remove", "\(address):7878"])
    XCTAssertEqual(gone.status, 3, gone.stderr)
  }

  /// `host`'s IPv4 address on the lab link.
  func labAddress(of host: String) throws -> String {
    let shown = try Lab.exec(host, ["-4", "-o", "addr", "show"], tool: "ip").stdout
    let field = try XCTUnwrap(shown.split(separator: " ").first { $0.hasPrefix("169.254.") }, shown)
    return String(field.split(separator: "/")[0])
  }
}
