import Foundation
import XCTest

/// A laptop that travels (`scripts/lab move`): its link leaves the home bridge and joins a
/// second bridge, the "café", with a gateway of its own. memo-peer uses only networks a
/// person allowed: at the café nothing of it reaches the network (a capture on the café's
/// bridge sees no mDNS of ours and no connection attempt) and `status` says why; back home
/// it catches up at once; and on a network nobody decided, `browse` asks, and the answer is
/// recorded with its reason.
final class RoamingLabTests: LiveDaemonLabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  override func tearDown() {
    _ = try? Lab.run(Lab.script, ["move", "b", "home"], environment: Lab.labEnvironment)
    super.tearDown()
  }

  func move(_ host: String, _ place: String) throws {
    let moved = try Lab.run(Lab.script, ["move", host, place], environment: Lab.labEnvironment)
    XCTAssertEqual(moved.status, 0, "scripts/lab move \(host) \(place): \(moved.stderr)")
  }

  /// What `host`'s daemon waits for (`status --json`'s `serve.waiting_for`), nil when it does not.
  func waitingFor(_ host: String) -> String? {
    guard let shown = try? Lab.exec(host, ["status", "--json"]), shown.status == 0 else { return nil }
    return (object(shown.stdout)["serve"] as? [String: Any])?["waiting_for"] as? String
  }

  /// `status --json`'s `network` of `host`.
  func network(_ host: String) throws -> [String: Any] {
    object(try ok(host, ["status", "--json"]))["network"] as? [String: Any] ?? [:]
  }

  func testAtTheCafeNothingOfOursIsOnTheNetworkAndBackHomeItCatchesUp() throws {
    try meshOfLiveDaemons()
    let home = try network("b")
    XCTAssertEqual(home["state"] as? String, "allowed", "\(home)")

    // Between networks: the link is down, no address.
    try move("b", "off")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) { waitingFor("b")?.contains("a network") == true },
      "b waits for a network: \(waitingFor("b") ?? "nothing")")

    // The café: everything b sends there is captured.
    let capture = Lab.directory + "/cafe-\(UUID().uuidString.prefix(8)).pcap"
    let tcpdump = try Lab.startCapture(capture, on: "cafe0")
    defer { Lab.stopCapture(tcpdump) }
    try move("b", "cafe")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 10) { waitingFor("b")?.contains("this network") == true },
      "status says why: \(waitingFor("b") ?? "nothing")")
    let cafe = try network("b")
    XCTAssertEqual(cafe["state"] as? String, "undetermined", "\(cafe)")
    XCTAssertNotEqual(cafe["id"] as? String, home["id"] as? String, "the café is another network")
    let shown = try ok("b", ["status"])
    XCTAssertTrue(shown.contains("network: eth0, gateway 169.254.0.1"), shown)
    XCTAssertTrue(shown.contains("waiting (this network"), shown)

    // Meanwhile a memo is made at home; at the café a person's own commands wait too,
    // sending nothing, and say why.
    let id = try newMemo("a", title: "made while b was away")
    let ping = try Lab.exec("b", ["ping", "host-a", "--timeout", "2"])
    XCTAssertNotEqual(ping.status, 0)
    XCTAssertTrue(ping.stderr.contains("still waiting: this network to be allowed"), ping.stderr)
    let doctor = object(try Lab.exec("b", ["doctor", "--json"]).stdout)["checks"] as? [[String: Any]] ?? []
    let check = try XCTUnwrap(doctor.first { $0["name"] as? String == "network" }, "\(doctor)")
    XCTAssertEqual(check["ok"] as? Bool, false, "\(check)")
    XCTAssertTrue((check["fix"] as? String ?? "").contains("network allow"), "\(check)")
    // A fixed window: what the capture holds over it is the measurement.
    Thread.sleep(forTimeInterval: 3)
    Lab.stopCapture(tcpdump)
    let packets = try Lab.run("/usr/bin/tcpdump", ["-r", capture, "-n", "-A"], environment: [:]).stdout
    XCTAssertFalse(packets.contains("_memo-peer"), "no mDNS of ours at the café:\n\(packets.suffix(3000))")
    let syns = try Lab.run(
      "/usr/bin/tcpdump", ["-r", capture, "-n", "tcp[tcpflags] & tcp-syn != 0"], environment: [:]
    ).stdout
    XCTAssertEqual(syns, "", "no connection attempt at the café")
    XCTAssertNotEqual(
      (try? Lab.exec("b", ["show", id]).status), 0, "nothing reached b at the café")

    // Home again: in sync at once, with nobody typing `sync`.
    let back = Date()
    try move("b", "home")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 30) { (try? Lab.exec("b", ["show", id]).status) == 0 },
      "b caught up at home: \(daemons["b"]?.text.suffix(2000) ?? "")")
    print(
      "back home, b had the memo made while it was away after \(String(format: "%.1f", Date().timeIntervalSince(back))) s"
    )
    XCTAssertNil(waitingFor("b"))
  }

  func testANewNetworkIsAskedOnBrowseAndTheAnswerRecordedWithItsReason() throws {
    try ok("b", ["consent", "grant"])
    try move("b", "cafe")
    XCTAssertEqual(try network("b")["state"] as? String, "undetermined")
    let refused = try Lab.exec("b", ["browse", "--timeout", "1"])
    XCTAssertNotEqual(refused.status, 0, "nobody to ask: refused")
    XCTAssertTrue(refused.stderr.contains("not been allowed on this network"), refused.stderr)

    let command = "\(Lab.binary) browse --timeout 1"
    let asked = try Lab.exec("b", ["-qefc", command, "/dev/null"], tool: "script", stdin: "allow\n")
    XCTAssertEqual(asked.status, 0, asked.stdout + asked.stderr)
    XCTAssertTrue(
      asked.stdout.contains("memo-peer has not been used on this network (eth0, gateway 169.254.0.1)"), asked.stdout)
    XCTAssertTrue(asked.stdout.contains("Allow / Don't Allow?"), asked.stdout)
    XCTAssertEqual(try network("b")["state"] as? String, "allowed")

    // The consent log holds the decision, the network and the reason shown.
    let log = try String(contentsOfFile: Lab.directory + "/b/home/state/consent.jsonl", encoding: .utf8)
    let last = object(String(log.split(separator: "\n").last ?? ""))
    XCTAssertEqual(last["scope"] as? String, "network")
    XCTAssertEqual(last["method"] as? String, "prompt")
    XCTAssertEqual(last["network_name"] as? String, "eth0, gateway 169.254.0.1")
    XCTAssertTrue((last["usage_text"] as? String ?? "").contains("to find your other devices"), "\(last)")
    let listed = object(try ok("b", ["network", "list", "--json"]))["networks"] as? [[String: Any]] ?? []
    XCTAssertEqual(listed.map { $0["state"] as? String }, ["allowed", "allowed"], "home and the café: \(listed)")
  }
}
