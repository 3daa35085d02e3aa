import Foundation
import XCTest

/// Discovery behind consent on real mDNS between lab hosts: a (the advertiser), b (the
/// browser), c (a plain avahi-browse client that nobody here wrote).
final class DiscoveryLabTests: LabTestCase {
  func serve(_ arguments: [String] = []) throws -> Background { try start("a", ["serve"] + arguments) }

  func status(_ host: String) throws -> [String: Any] {
    let result = try Lab.exec(host, ["status", "--json"])
    XCTAssertEqual(result.status, 0, result.stderr)
    return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
  }

  func advertisedInstance() throws -> (name: String, port: Int)? {
    let serve = try status("a")["serve"] as? [String: Any]
    guard serve?["state"] as? String == "advertising", let name = serve?["instance"] as? String,
      let port = serve?["port"] as? Int
    else { return nil }
    return (name, port)
  }

  func grant(_ host: String, scope: String = "local-network") throws {
    XCTAssertEqual(try Lab.exec(host, ["consent", "grant", "--scope", scope]).status, 0)
  }

  // MARK: - Acceptance

  func testServeIsSeenByBrowseAndByAPlainAvahiClient() throws {
    XCTAssertEqual(try Lab.exec("a", ["consent", "grant", "--provisioning"]).status, 0)
    let server = try serve()
    XCTAssertTrue(try Lab.waitUntil(seconds: 5) { try advertisedInstance() != nil }, server.text)
    let (instance, port) = try XCTUnwrap(try advertisedInstance())
    XCTAssertTrue(instance.hasPrefix("memo-peer-"))

    try grant("b")
    let browse = try Lab.exec("b", ["browse", "--json", "--timeout", "3"])
    XCTAssertEqual(browse.status, 0, browse.stderr)
    let seen = try XCTUnwrap(browse.jsonLines.first { $0["instance"] as? String == instance }, browse.stdout)
    XCTAssertEqual(seen["event"] as? String, "added")
    XCTAssertEqual(seen["version"] as? String, "1")
    XCTAssertEqual(seen["port"] as? Int, port)
    XCTAssertEqual(seen["interface"] as? String, "eth0")
    XCTAssertTrue((seen["addresses"] as? [String] ?? []).contains("169.254.77.11"), "\(seen)")
    XCTAssertTrue((seen["addresses"] as? [String] ?? []).contains { $0.hasPrefix("fe80:") && $0.hasSuffix("%eth0") })
    let tag = try XCTUnwrap(seen["tag"] as? String)
    XCTAssertEqual(tag.count, 16)

    let avahi = try Lab.exec("c", ["-rpt", "_memo-peer._tcp"], tool: "avahi-browse")
    XCTAssertEqual(avahi.status, 0, avahi.stderr)
    let resolved = avahi.stdout.split(separator: "\n").first {
      $0.hasPrefix("=;eth0;IPv4;\(instance);_memo-peer._tcp;local;")
    }
    let line = try XCTUnwrap(resolved, avahi.stdout)
    XCTAssertTrue(line.contains(";169.254.77.11;\(port);"), String(line))
    XCTAssertTrue(line.contains("\"tag=\(tag)\"") && line.contains("\"v=1\""), String(line))
    XCTAssertNotNil(instance.range(of: "^memo-peer-[0-9a-f]{8}$", options: .regularExpression), "a pseudonym only")

    XCTAssertEqual(server.terminate(), 0, "SIGTERM exits 0")
    XCTAssertTrue(server.text.contains("stopped"), server.text)
    XCTAssertEqual(try status("a")["running"] as? Bool, false)
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 3) {
        !(try Lab.exec("c", ["-pt", "_memo-peer._tcp"], tool: "avahi-browse").stdout.contains(instance))
      }, "withdrawn on SIGTERM: c's cache drops it after the goodbye packets")
  }

  func testServeWaitsForConsentThenFollowsGrantAndRevokeWithoutRestart() throws {
    let server = try serve()
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 5) {
        (try status("a")["serve"] as? [String: Any])?["waiting_for"] as? String == "local-network consent"
      }, server.text)
    XCTAssertEqual(server.text.components(separatedBy: "waiting (local-network consent)").count - 1, 1, "says so once")
    XCTAssertEqual((try status("a")["serve"] as? [String: Any])?["port"] as? Int, 0, "no listener without consent")
    let human = try Lab.exec("a", ["status"])
    XCTAssertTrue(human.stdout.contains("daemon: waiting (local-network consent)"), human.stdout)

    try grant("b")
    let nothing = try Lab.exec("b", ["browse", "--json", "--timeout", "2"])
    XCTAssertEqual(nothing.status, 0)
    XCTAssertEqual(nothing.jsonLines.count, 0, "A is invisible without its consent: \(nothing.stdout)")

    let watcher = try Lab.start("b", ["browse", "--json", "--timeout", "20"])
    background.append(watcher)
    Thread.sleep(forTimeInterval: 0.5)
    try grant("a")
    XCTAssertTrue(
      Lab.waitUntil(seconds: 3) { watcher.jsonLines.contains { $0["event"] as? String == "added" } },
      "B sees A within 3 s of the grant: \(watcher.text) / \(server.text)")
    let instance = try XCTUnwrap(watcher.jsonLines.first?["instance"] as? String)
    XCTAssertEqual(try advertisedInstance()?.name, instance)

    XCTAssertEqual(try Lab.exec("a", ["consent", "revoke"]).status, 0)
    XCTAssertTrue(
      Lab.waitUntil(seconds: 3) {
        watcher.jsonLines.contains { $0["event"] as? String == "removed" && $0["instance"] as? String == instance }
      }, "B sees A leave: \(watcher.text)")
    XCTAssertTrue(server.process.isRunning, "no restart")
    XCTAssertTrue(try Lab.exec("a", ["status"]).stdout.contains("waiting (local-network consent (revoked))"))
  }

  func testUnattendedBrowseWithoutConsentSendsNothing() throws {
    func transmitted() throws -> Int {
      Int(
        try Lab.exec("b", ["/sys/class/net/eth0/statistics/tx_packets"], tool: "cat").stdout
          .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
    // Wait for a quiet link (avahi's start-up announcements are over).
    var quiet = false
    for _ in 0..<20 where !quiet {
      let before = try transmitted()
      Thread.sleep(forTimeInterval: 1)
      quiet = try transmitted() == before
    }
    XCTAssertTrue(quiet, "b's link never went quiet")
    let before = try transmitted()
    let result = try Lab.exec("b", ["browse", "--timeout", "2"])
    XCTAssertEqual(result.status, 11, result.stderr)
    XCTAssertTrue(result.stderr.contains("needs your consent"), result.stderr)
    XCTAssertTrue(result.stderr.contains("memo-peer consent grant"), result.stderr)
    XCTAssertEqual(result.stdout, "")
    Thread.sleep(forTimeInterval: 0.5)
    XCTAssertEqual(try transmitted(), before, "not one packet left b")
    XCTAssertEqual(
      try Lab.exec("b", ["consent", "status"]).stdout.split(separator: "\n").first, "local-network: undetermined")
  }

  func testATerminalPromptShowsTheReasonAndRecordsTheAnswer() throws {
    let command = "\(Lab.binary) browse --timeout 1"
    let allowed = try Lab.exec("b", ["-qefc", command, "/dev/null"], tool: "script", stdin: "allow\n")
    XCTAssertEqual(allowed.status, 0, allowed.stdout + allowed.stderr)
    XCTAssertTrue(
      allowed.stdout.contains("memo-peer would like to find and connect to devices on your local network: "),
      allowed.stdout)
    XCTAssertTrue(allowed.stdout.contains("Allow / Don't Allow?"), allowed.stdout)
    let consent = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(try Lab.exec("b", ["consent", "status", "--json"]).stdout.utf8))
        as? [String: Any])
    let scope = try XCTUnwrap((consent["scopes"] as? [String: Any])?["local-network"] as? [String: Any])
    XCTAssertEqual(scope["state"] as? String, "granted")
    let last = try XCTUnwrap(scope["last"] as? [String: Any])
    XCTAssertEqual(last["method"] as? String, "prompt")
    XCTAssertEqual(last["user"] as? String, "root")
    let shown = try XCTUnwrap(last["usage_text"] as? String)
    XCTAssertTrue(allowed.stdout.contains(shown), "the record holds the exact text shown")
    XCTAssertEqual(last["service_types"] as? [String], ["_memo-peer._tcp"])

    try Lab.resetHomes()
    let refused = try Lab.exec("b", ["-qefc", command, "/dev/null"], tool: "script", stdin: "don't allow\n")
    XCTAssertEqual(refused.status, 12, refused.stdout)
    XCTAssertTrue(try Lab.exec("b", ["consent", "status"]).stdout.hasPrefix("local-network: denied"))
  }

  func testUndeclaredTypesAndAllTypesAreRefused() throws {
    try grant("b")
    let undeclared = try Lab.exec("b", ["browse", "--type", "_printer._tcp", "--timeout", "1"])
    XCTAssertEqual(undeclared.status, 13, undeclared.stderr)
    XCTAssertTrue(undeclared.stderr.contains("NoAuth (-65555)"), undeclared.stderr)
    XCTAssertTrue(undeclared.stderr.contains("_printer._tcp"), undeclared.stderr)
    XCTAssertTrue(undeclared.stderr.contains("service_types"), undeclared.stderr)

    let allTypes = try Lab.exec("b", ["browse", "--all-types", "--timeout", "1"])
    XCTAssertEqual(allTypes.status, 11, allTypes.stderr)
    XCTAssertTrue(allTypes.stderr.contains("all-service-types"), allTypes.stderr)
    try grant("b", scope: "all-service-types")
    XCTAssertEqual(try Lab.exec("b", ["browse", "--all-types", "--timeout", "1"]).status, 0)
  }

  func testDeniedConsentIsPolicyDeniedInJSON() throws {
    XCTAssertEqual(try Lab.exec("b", ["consent", "deny"]).status, 0)
    let denied = try Lab.exec("b", ["browse", "--json", "--timeout", "1"])
    XCTAssertEqual(denied.status, 12)
    let error = try XCTUnwrap(
      (JSONSerialization.jsonObject(with: Data(denied.stderr.utf8)) as? [String: Any])?["error"] as? [String: Any])
    XCTAssertEqual(error["code"] as? String, "policy-denied")
    XCTAssertEqual(error["dns_sd_error"] as? Int, -65570)
    XCTAssertTrue((error["hint"] as? String ?? "").contains("memo-peer consent grant"), "\(error)")
  }

  func testTwoPeriodsShareNoInstanceNameOrTag() throws {
    try grant("a")
    try grant("b")
    _ = try serve(["--rotation", "2"])
    let watcher = try Lab.exec("b", ["browse", "--json", "--timeout", "6"])
    let added = watcher.jsonLines.filter { $0["event"] as? String == "added" }
    let names = Set(added.compactMap { $0["instance"] as? String })
    let tags = Set(added.compactMap { $0["tag"] as? String })
    XCTAssertGreaterThanOrEqual(names.count, 2, watcher.stdout)
    XCTAssertEqual(tags.count, names.count, "a new tag with every new name: \(watcher.stdout)")
  }

  func testMissingAvahiDaemonIsExplainedAndTheDoctorNamesIt() throws {
    try grant("b")
    let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/memo-peer-test-bus"]
    let browse = try Lab.exec("b", ["browse", "--timeout", "1"], environment: noBus)
    XCTAssertEqual(browse.status, 14, browse.stderr)
    XCTAssertTrue(browse.stderr.contains("avahi-daemon"), browse.stderr)
    XCTAssertTrue(browse.stderr.contains("systemctl start avahi-daemon"), browse.stderr)
    let doctor = try Lab.exec("b", ["doctor"], environment: noBus)
    XCTAssertEqual(doctor.status, 1)
    XCTAssertTrue(doctor.stdout.contains("FAIL avahi-daemon: avahi-daemon cannot be reached"), doctor.stdout)
    XCTAssertTrue(doctor.stdout.contains("FAIL dbus"), doctor.stdout)
    let healthy = try Lab.exec("b", ["doctor", "--json"])
    let checks =
      (try JSONSerialization.jsonObject(with: Data(healthy.stdout.utf8)) as? [String: Any])?["checks"]
      as? [[String: Any]]
    XCTAssertEqual(checks?.first { $0["name"] as? String == "avahi-daemon" }?["ok"] as? Bool, true, healthy.stdout)
  }
}
