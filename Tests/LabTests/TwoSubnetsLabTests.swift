import Foundation
import XCTest

/// Two subnets joined by a router, with no multicast between them (issue 41): the home
/// server b lives behind the lab's router (`scripts/lab subnet b`), the laptop a stays on
/// the home subnet. DNS-SD cannot cross, so a reaches b only at an address a person gave
/// (`trust address`): once an IP address, once a name only a's hosts file knows. Through
/// either, a syncs with b and the two daemons keep a live link.
final class TwoSubnetsLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  /// The port b's daemon listens on: a person gives it with the address.
  static let port = 7878
  /// The ports a's daemon listens on, before and after the server moved.
  static let laptopPorts = (7901, 7902)
  /// A name for b in a's hosts file, and in no other resolver.
  static let name = "nas.home.arpa"

  override func setUpWithError() throws {
    try super.setUpWithError()
    // Again for each test: the lab may have been brought up afresh, and a test moves b.
    let moved = try Lab.run(Lab.script, ["subnet", "b"], environment: Lab.labEnvironment)
    XCTAssertEqual(moved.status, 0, "scripts/lab subnet b: \(moved.stderr)")
  }

  func testALaptopReachesAServerOnAnotherSubnetByAddressAndByName() throws {
    for host in Self.hosts {
      try ok(host, ["consent", "grant"])
      try ok(host, ["consent", "grant", "--scope", "background-sync"])
    }
    let a = try deviceID("a")
    let b = try deviceID("b")
    let server = try labAddress(of: "b")
    XCTAssertTrue(server.hasPrefix("169.254.200."), "b is on the far subnet: \(server)")
    XCTAssertTrue(try labAddress(of: "a").hasPrefix("169.254.77."), "a stays home")

    // (i) An IP address: b trusts a (knowing no address of it), a is given b's.
    try ok("b", ["trust", "add", a, "--name", "host-a"])
    try ok("a", ["trust", "add", b, "--name", "host-b", "--address", "\(server):\(Self.port)"])
    try Lab.shareOneNotebook(Self.hosts)
    try startDaemon("b", port: Self.port)
    try startDaemon("a", port: Self.laptopPorts.0)
    // b has no address of a: the link is a's dial of the IP address.
    try expectLiveLinks("through the IP address")
    try ok("a", ["ping", "host-b"])
    try ok("a", ["sync", "--peer", "host-b"])
    try expectLiveSync(title: "through the router")
    XCTAssertEqual(try reached("a", peer: "host-b").first, "\(server):\(Self.port)", "a remembers where b answered")

    // No multicast crosses the router: b advertises (its own avahi-daemon shows it), and
    // a's avahi-daemon never hears of it, nor of b's host name.
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) { !(try advertisements(on: "b", includingOwn: true)).isEmpty }, "b advertises")
    XCTAssertEqual(try advertisements(on: "a", includingOwn: false), [], "a sees no device across the router")
    XCTAssertEqual(try advertisements(on: "b", includingOwn: false), [], "b sees no device across the router")
    // (avahi-resolve exits 0 either way: what it printed tells.)
    let own = try Lab.exec("b", ["lab-b.local"], tool: "avahi-resolve-host-name")
    XCTAssertTrue(own.stdout.contains(server), "b resolves its own host name: \(own.stdout)\(own.stderr)")
    let resolved = try Lab.exec("a", ["lab-b.local"], tool: "avahi-resolve-host-name")
    XCTAssertFalse(resolved.stdout.contains("lab-b.local"), "b's host name resolved over mDNS on a: \(resolved.stdout)")

    // (ii) A name. The server restarts with a new lease; a's hosts file follows it, and the
    // IP address a was given is taken back: only the name leads to b now (where b was
    // reached before is nobody's address any more).
    for daemon in daemons.values { daemon.terminate() }
    daemons = [:]
    try ok("a", ["trust", "address", "host-b", "remove", "\(server):\(Self.port)"])
    let moved = "169.254.200.99"
    let subnet = try Lab.run(Lab.script, ["subnet", "b", moved], environment: Lab.labEnvironment)
    XCTAssertEqual(subnet.status, 0, "scripts/lab subnet b \(moved): \(subnet.stderr)")
    XCTAssertEqual(try labAddress(of: "b"), moved)
    let named = try Lab.run(Lab.script, ["hosts-name", "a", Self.name, moved], environment: Lab.labEnvironment)
    XCTAssertEqual(named.status, 0, "scripts/lab hosts-name: \(named.stderr)")
    // The name lives in a's hosts file alone: b's resolver does not know it, and b cannot
    // be given it.
    XCTAssertEqual(try Lab.exec("a", ["hosts", Self.name], tool: "getent").status, 0)
    XCTAssertNotEqual(try Lab.exec("b", ["hosts", Self.name], tool: "getent").status, 0)
    let unknown = try Lab.exec("b", ["trust", "address", "host-a", "add", "\(Self.name):\(Self.port)"])
    XCTAssertEqual(unknown.status, 4, unknown.stderr)
    XCTAssertTrue(unknown.stderr.contains("does not resolve"), unknown.stderr)

    try ok("a", ["trust", "address", "host-b", "add", "\(Self.name):\(Self.port)"])
    let listed = object(try ok("a", ["trust", "address", "host-b", "list", "--json"]))
    XCTAssertEqual(
      (listed["addresses"] as? [String: Any])?["given"] as? [String], ["\(Self.name):\(Self.port)"],
      "the name is kept as a name, resolved when dialled: \(listed)")
    try startDaemon("b", port: Self.port)
    // With a's daemon not running, the command line dials on its own: the name, first.
    try ok("a", ["ping", "host-b", "--count", "1"])
    XCTAssertEqual(
      try reached("a", peer: "host-b").first, "\(moved):\(Self.port)", "a reached b where the name leads")
    try ok("a", ["sync", "--peer", "host-b"])
    // a's daemon listens on another port now, so where b reached a before leads nowhere:
    // the live link is a's dial of the name, not b's dial back.
    try startDaemon("a", port: Self.laptopPorts.1)
    try expectLiveLinks("through the name")
    try expectLiveSync(title: "by name through the router")
    XCTAssertEqual(try advertisements(on: "a", includingOwn: false), [], "a still sees no device across the router")
  }

  /// Starts `serve --web` on `host`, listening on `port`, as `startDaemon(_:)` does.
  func startDaemon(_ host: String, port: Int) throws {
    let daemon = try start(host, ["--debug", "serve", "--web", "--port", String(port)])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { daemon.text.contains("advertising") }, daemon.text)
    daemons[host] = daemon
  }

  /// Waits (60 s at most) until each daemon has its live link with the other.
  func expectLiveLinks(_ how: String, file: StaticString = #filePath, line: UInt = #line) throws {
    for host in Self.hosts {
      XCTAssertTrue(
        try Lab.waitUntil(seconds: 60) { try livePeers(host) == 1 },
        "\(host)'s live link \(how): \(daemons[host]?.text.suffix(3000) ?? "")", file: file, line: line)
    }
  }

  /// A memo made on a is readable on b (within 30 s) with nobody typing `sync`.
  func expectLiveSync(title: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let started = Date()
    let id = try newMemo("a", title: title)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 30) { (try? Lab.exec("b", ["show", id]).status) == 0 },
      "\(title): the memo reached b live; b's daemon: \(daemons["b"]?.text.suffix(2000) ?? "")", file: file,
      line: line)
    print(
      "\(title): a memo made on a was readable on b after \(String(format: "%.2f", Date().timeIntervalSince(started))) s"
    )
  }

  /// The memo-peer advertisements `host`'s avahi-daemon shows (`avahi-browse -t -p`), its
  /// own left out unless `includingOwn`.
  func advertisements(on host: String, includingOwn: Bool) throws -> [String] {
    let arguments = ["-t", "-p"] + (includingOwn ? [] : ["--ignore-local"]) + ["_memo-peer._tcp"]
    let browsed = try Lab.exec(host, arguments, tool: "avahi-browse")
    return browsed.stdout.split(separator: "\n").filter { $0.hasPrefix("+") }.map(String.init)
  }

  /// Where `host` remembers `peer` was reached, newest first (`trust address PEER list --json`).
  func reached(_ host: String, peer: String) throws -> [String] {
    let listed = object(try ok(host, ["trust", "address", peer, "list", "--json"]))
    let addresses = listed["addresses"] as? [String: Any] ?? [:]
    return (addresses["reached"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
  }

  /// `host`'s IPv4 address on the lab link.
  func labAddress(of host: String) throws -> String {
    let shown = try Lab.exec(host, ["-4", "-o", "addr", "show"], tool: "ip").stdout
    let field = try XCTUnwrap(shown.split(separator: " ").first { $0.hasPrefix("169.254.") }, shown)
    return String(field.split(separator: "/")[0])
  }
}
