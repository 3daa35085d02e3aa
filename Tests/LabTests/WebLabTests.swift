import Foundation
import XCTest

/// The web page in the virtual home lab: it never answers on a host's link-local addresses
/// (only on loopback), and a sync started from the page's API reaches a trusted device.
final class WebLabTests: LabTestCase {
  let port = "18426"

  /// Runs curl on a host: the HTTP status, or "000" when nothing answered, and curl's exit.
  func curl(_ host: String, _ arguments: [String]) throws -> (code: String, exit: Int32, body: String) {
    let body = "\(Lab.directory)/curl-\(UUID().uuidString)"
    defer { unlink(body) }
    let result = try Lab.exec(
      host, ["-s", "-m", "10", "-o", body, "-w", "%{http_code}"] + arguments, tool: "/usr/bin/curl")
    return (result.stdout, result.status, (try? String(contentsOfFile: body, encoding: .utf8)) ?? "")
  }

  /// The host's lab addresses: IPv4 link-local from the lab's list, IPv6 link-local of eth0.
  func addresses(_ host: String) throws -> (v4: String, v6: String?) {
    let hosts = try String(contentsOfFile: Lab.directory + "/hosts", encoding: .utf8)
    let v4 = try XCTUnwrap(
      hosts.split(separator: "\n").map { $0.split(separator: " ") }.first { $0.first.map(String.init) == host }?.last)
    let shown = try Lab.exec(host, ["-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"], tool: "/usr/sbin/ip")
    let v6 = shown.stdout.split(separator: " ").first { $0.hasPrefix("fe80::") }.map {
      String($0.split(separator: "/")[0])
    }
    return (String(v4), v6)
  }

  func startWeb(_ host: String) throws -> (server: Background, link: String) {
    let server = try start(host, ["--debug", "web", "--port", port])
    XCTAssertTrue(Lab.waitUntil(seconds: 20) { server.text.contains("http://127.0.0.1:\(port)/login") }, server.text)
    let link = try XCTUnwrap(
      server.text.split(separator: "\n").first { $0.hasPrefix("http://127.0.0.1:\(port)/login") }.map(String.init))
    return (server, link)
  }

  func testThePageDoesNotAnswerOnTheLabNetwork() throws {
    let refused = try Lab.exec("a", ["web", "--address", try addresses("a").v4])
    XCTAssertEqual(refused.status, 2, refused.stderr)
    let (server, _) = try startWeb("a")
    XCTAssertEqual(try curl("a", ["http://127.0.0.1:\(port)/api/status"]).code, "401", "up on loopback")
    XCTAssertEqual(try curl("a", ["-g", "http://[::1]:\(port)/api/status"]).code, "401", "up on ::1")
    let a = try addresses("a")
    var targets = ["http://\(a.v4):\(port)/api/status"]
    if let v6 = a.v6 { targets.append("http://[\(v6)%25eth0]:\(port)/api/status") }
    XCTAssertNotNil(a.v6, "the lab gives eth0 an IPv6 link-local address")
    for host in ["a", "b"] {
      for target in targets {
        let result = try curl(host, ["-g", target])
        XCTAssertEqual(result.code, "000", "\(host) → \(target) answered \(result.code)")
        XCTAssertEqual(result.exit, 7, "\(host) → \(target): connection refused")
      }
    }
    XCTAssertEqual(server.terminate(), 0)
  }

  func testASyncStartedFromThePageReachesATrustedDevice() throws {
    // b's consent is granted on its terminal; a's comes from the page below.
    try ok("b", ["consent", "grant"])
    let aID = try deviceID("a")
    let bID = try deviceID("b")
    try ok("a", ["trust", "add", bID, "--name", "host-b"])
    try ok("b", ["trust", "add", aID, "--name", "host-a", "--share", "personal"])
    let memo = try ok("b", ["new", "--title", "From b"], stdin: "made on b\n")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let serve = try start("b", ["--debug", "serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 15) { serve.text.contains("advertising") }, serve.text)

    let (server, link) = try startWeb("a")
    let jar = "\(Lab.directory)/web-jar-\(UUID().uuidString)"
    defer { unlink(jar) }
    let base = "http://127.0.0.1:\(port)"
    XCTAssertEqual(try curl("a", ["-c", jar, link]).code, "303")
    func post(_ path: String, _ json: String) throws -> (code: String, exit: Int32, body: String) {
      try curl(
        "a",
        [
          "-b", jar, "-H", "Origin: \(base)", "-H", "Content-Type: application/json", "--data-binary", json,
          base + path,
        ])
    }
    XCTAssertEqual(try post("/api/sync", "{}").code, "403", "no sync before the consent")
    XCTAssertEqual(try post("/api/consent", #"{"decision":"granted"}"#).code, "200")
    var state: [String: Any] = [:]
    func syncOnThePage() throws -> [String: Any] {
      let started = try post("/api/sync", #"{"timeout":30}"#)
      XCTAssertEqual(started.code, "202", started.body)
      XCTAssertTrue(
        try Lab.waitUntil(seconds: 90) {
          let polled = try curl("a", ["-b", jar, base + "/api/sync"])
          state = (try? JSONSerialization.jsonObject(with: Data(polled.body.utf8))) as? [String: Any] ?? [:]
          return state["state"] as? String == "done"
        }, "\(state)")
      return try XCTUnwrap(state["result"] as? [String: Any], "\(state)")
    }
    // The first sync brings b's notebook as an invitation, which the person accepts on the
    // page; the next one brings its memo.
    let first = try syncOnThePage()
    let invited = try XCTUnwrap((first["peers"] as? [[String: Any]])?.first?["invited"] as? [String], "\(first)")
    XCTAssertEqual(invited.count, 1)
    XCTAssertEqual(first["received"] as? Int, 0, "nothing of it before a person accepts")
    let listed = try curl("a", ["-b", jar, base + "/api/invitations"])
    XCTAssertTrue(listed.body.contains(invited[0]), listed.body)
    XCTAssertEqual(try post("/api/invitations/\(invited[0])/accept", "{}").code, "200")
    let result = try syncOnThePage()
    let peers = try XCTUnwrap(result["peers"] as? [[String: Any]])
    XCTAssertEqual(peers.first?["status"] as? String, "synced", "\(state)")
    XCTAssertEqual(peers.first?["name"] as? String, "host-b")
    XCTAssertEqual(result["received"] as? Int, 1)
    XCTAssertTrue(try ok("a", ["list", "--json"]).contains(memo), "a has b's memo")
    let page = try curl("a", ["-b", jar, base + "/api/memos/" + memo])
    XCTAssertTrue(page.body.contains("made on b"), page.body)
    XCTAssertEqual(server.terminate(), 0)
    XCTAssertFalse(server.text.contains("made on b"), "no memo text in the server's log")
  }
}
