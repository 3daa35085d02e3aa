import Foundation
import MemoTestSupport
import XCTest

/// The network half of the canary audit, in the virtual home lab: host a holds memos full
/// of canaries, advertises (`serve`, unlocked; locked, it withdraws) and sends both memos to b over
/// TLS, and the two sync both ways; b browses with memo-peer and receives with its own `serve`; c browses with
/// avahi-browse; tcpdump records every packet on the lab's bridge. No canary may be
/// in any output, in the capture, in the lab's files or in any process's arguments and
/// environment.
///
/// The steps are a list, sync included.
final class CanaryLabAuditTests: XCTestCase {
  let canaries = Canaries()
  var findings: [String] = []

  /// One command on one lab host.
  struct Step {
    let host: String
    let scenario: AuditScenario
    /// Another program than memo-peer (avahi-browse), run without `--debug`.
    var tool: String?
  }

  override class func setUp() {
    super.setUp()
    if getuid() == 0 { try? Lab.up(3) }
  }

  override class func tearDown() {
    if getuid() == 0 { Lab.down() }
    super.tearDown()
  }

  override func setUpWithError() throws {
    try Lab.require()
    try Lab.ensureHealthy(3)
    try Lab.resetHomes()
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tcpdump") else {
      if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("tcpdump is missing (scripts/deps.sh installs it); CI=true requires the lab audit")
      }
      throw XCTSkip("tcpdump is missing: run `make deps`")
    }
  }

  func testNoCanaryReachesTheNetworkOrTheLab() throws {
    let c = canaries
    // Host a: the memos (tags through argv in setup only), protection, consent.
    var ids: [String] = []
    for (body, options) in [
      ("\(c[.publicTitle])\n\(c[.publicBody])", ["--tag", c[.publicTag]]),
      ("\(c[.privateTitle])\n\(c[.privateBody])", ["--tag", c[.privateTag], "--private"]),
    ] {
      let created = try Lab.exec("a", ["new"] + options, stdin: body)
      XCTAssertEqual(created.status, 0)
      ids.append(created.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    XCTAssertEqual(
      try Lab.exec("a", ["protect", "complete", "--new-passphrase-fd", "0"], stdin: c[.passphrase]).status, 0)
    // The lab's hosts share this machine's kernel keyring: leave nothing of a's in it.
    addTeardownBlock { [c] in
      _ = try? Lab.exec("a", ["protect", "none", "--passphrase-fd", "0"], stdin: c[.passphrase])
    }
    XCTAssertEqual(try Lab.exec("a", ["consent", "grant", "--provisioning"]).status, 0)
    XCTAssertEqual(try Lab.exec("b", ["consent", "grant"]).status, 0)
    // a and b trust each other, so a can send both memos to b's daemon.
    let deviceIDs = try ["a", "b"].map {
      try Lab.exec($0, ["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    // Each shares its own notebook with the other, so both memos travel (sealed with it).
    XCTAssertEqual(
      try Lab.exec("a", ["trust", "add", deviceIDs[1], "--name", "bee", "--share", "personal"]).status, 0)
    XCTAssertEqual(
      try Lab.exec("b", ["trust", "add", deviceIDs[0], "--name", "ay", "--share", "personal"]).status, 0)

    let capture = Lab.directory + "/audit-\(UUID().uuidString.prefix(8)).pcap"
    let tcpdump = try Lab.startCapture(capture)
    defer { Lab.stopCapture(tcpdump) }
    let server = try Lab.start("a", ["--debug", "serve"])
    defer { server.terminate() }
    XCTAssertTrue(try Lab.waitUntil(seconds: 10) { try daemon("a")?["state"] as? String == "advertising" }, server.text)
    let receiver = try Lab.start("b", ["--debug", "serve"])
    defer { receiver.terminate() }
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) { try daemon("b")?["state"] as? String == "advertising" }, receiver.text)

    // A freshly started lab host's avahi-daemon may not answer its first D-Bus clients yet:
    // wait (bounded) until b and c can browse at all, so the steps audit output, not start-up.
    _ = try Lab.waitUntil(seconds: 20) { try Lab.exec("b", ["browse", "--timeout", "1"]).status == 0 }
    _ = try Lab.waitUntil(seconds: 20) {
      try Lab.exec("c", ["-t", "-p", "_memo-peer._tcp"], tool: "avahi-browse").status == 0
    }

    let steps: [Step] = [
      Step(host: "b", scenario: AuditScenario(["browse", "--json", "--timeout", "3"])),
      Step(host: "c", scenario: AuditScenario(["-a", "-r", "-t", "-p"]), tool: "avahi-browse"),
      Step(host: "a", scenario: AuditScenario(["status", "--json"])),
      Step(host: "a", scenario: AuditScenario(["doctor", "--json"], status: nil)),
      Step(host: "a", scenario: AuditScenario(["widget", "--json"], mayShow: [.privateTitle, .privateTag])),
      // Sending: both memos cross the lab, inside TLS, to b's inbox.
      Step(host: "a", scenario: AuditScenario(["send", ids[0], "--to", "bee", "--wait", "30"])),
      Step(host: "a", scenario: AuditScenario(["send", ids[1], "--to", "bee", "--wait", "30"])),
      Step(host: "a", scenario: AuditScenario(["outbox", "--json"])),
      Step(
        host: "b",
        scenario: AuditScenario(["inbox", "--json"], mayShow: [.publicTitle, .publicTag, .privateTitle, .privateTag])),
      // Sync: b's first sync with a's daemon brings a's notebook as an invitation, which a
      // person on b accepts (by the name a gave it: the key is sealed to b in its log); then
      // a asks b's daemon and sends both memos, and takes b's invitation in turn. Only
      // counts and names may show, and b's listing its titles and tags.
      Step(host: "b", scenario: AuditScenario(["sync", "--peer", "ay", "--json", "--timeout", "30"])),
      Step(host: "b", scenario: AuditScenario(["notebook", "invitations", "--json"])),
      Step(host: "b", scenario: AuditScenario(["notebook", "accept", "personal"])),
      Step(host: "a", scenario: AuditScenario(["sync", "--peer", "bee", "--timeout", "30"])),
      Step(host: "a", scenario: AuditScenario(["notebook", "accept", "personal"])),
      Step(
        host: "b",
        scenario: AuditScenario(["list", "--json"], mayShow: [.publicTitle, .publicTag, .privateTitle, .privateTag])),
      Step(host: "b", scenario: AuditScenario(["peers", "--json"])),
      Step(host: "a", scenario: AuditScenario(["conflicts", "--json"])),
      Step(host: "a", scenario: AuditScenario(["lock"])),
      // Locked: the daemon withdraws its advertisement, closes its sessions and says so.
      Step(host: "b", scenario: AuditScenario(["browse", "--timeout", "3"])),
      Step(host: "c", scenario: AuditScenario(["-r", "-t", "-p", "_memo-peer._tcp"]), tool: "avahi-browse"),
      Step(host: "a", scenario: AuditScenario(["status"])),
      Step(host: "b", scenario: AuditScenario(["doctor"], status: nil)),
      // A locked node cannot be reached (it cannot prove who it is), and nothing leaks on the way.
      Step(host: "b", scenario: AuditScenario(["sync", "--peer", "ay", "--timeout", "5"], status: 17)),
      // Nor can it act as itself.
      Step(host: "a", scenario: AuditScenario(["sync", "--peer", "bee", "--timeout", "5"], status: 18)),
    ]
    var sawA = false
    for step in steps {
      let arguments = step.tool == nil ? ["--debug"] + step.scenario.arguments : step.scenario.arguments
      let result = try Lab.exec(step.host, arguments, tool: step.tool, stdin: step.scenario.stdin)
      findings += step.scenario.findings(
        stdout: result.stdout, stderr: result.stderr, status: result.status, canaries: c
      ).map { "host \(step.host): \($0)" }
      if step.host == "b" && step.scenario.arguments.first == "browse" {
        sawA = sawA || result.stdout.contains("memo-peer-")
      }
    }
    XCTAssertTrue(sawA, "b saw a's advertisement: the audit looked at real traffic")
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) { try daemon("a")?["store"] as? String == "locked" }, "the daemon reports locked")
    XCTAssertEqual(try daemon("a")?["state"] as? String, "waiting", "and no longer advertises")

    // While everything runs: every process's arguments and environment.
    for (path, kinds) in LeakScanner.scanProcesses(for: c) { findings.append("\(path) holds \(kinds.map(\.rawValue))") }

    XCTAssertEqual(server.terminate(), 0)
    XCTAssertEqual(receiver.terminate(), 0)
    findings += AuditScenario(["serve"]).findings(stdout: "", stderr: server.text, status: 0, canaries: c)
    findings += AuditScenario(["serve"]).findings(stdout: "", stderr: receiver.text, status: 0, canaries: c)
    Lab.stopCapture(tcpdump)
    let packets = try Data(contentsOf: URL(fileURLWithPath: capture))
    XCTAssertNotNil(packets.range(of: Data("_memo-peer".utf8)), "the capture holds the mDNS traffic")
    for kind in c.found(in: packets) { findings.append("the packet capture holds \(kind.rawValue)") }
    try? FileManager.default.removeItem(atPath: capture)

    // The lab's files (each host's memo-peer home, daemons' logs) and /tmp.
    for root in [Lab.directory, "/tmp", "/dev/shm"] {
      for (path, kinds) in LeakScanner.scanFiles(under: root, for: c) {
        findings.append("\(path) holds \(kinds.map(\.rawValue))")
      }
    }
    XCTAssertEqual(findings, [], findings.joined(separator: "\n"))
  }

  func daemon(_ host: String) throws -> [String: Any]? {
    let result = try Lab.exec(host, ["status", "--json"])
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    return json?["serve"] as? [String: Any]
  }
}
