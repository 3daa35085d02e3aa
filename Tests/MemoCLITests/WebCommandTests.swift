import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoWeb
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// `memo-peer web` from outside, without a browser: curl and raw sockets against the real
/// binary on loopback. Who may use it (token, cookie, Host, Origin), the headers, the
/// limits, the addresses it listens on, `--open`, `serve --web`, and the API's answers in
/// the command line's own JSON shapes.
final class WebCommandTests: XCTestCase {
  var runtime = ""

  override func setUpWithError() throws {
    runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-web-cli")
  }

  override func tearDown() {
    try? FileManager.default.removeItem(atPath: runtime)
    super.tearDown()
  }

  func node() throws -> CLIProcess {
    let cli = try CLIProcess()
    cli.environment["XDG_RUNTIME_DIR"] = runtime
    return cli
  }

  func object(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
  }

  /// `memo-peer web` when a server of the node runs: it prints that server's link. Bounded:
  /// were none running, it would start one and serve until stopped.
  func runningLink(_ cli: CLIProcess) throws -> CLIProcess.Result {
    try cli.run(executable: "/usr/bin/timeout", ["20", CLIProcess.binary, "web"], stdin: nil)
  }

  /// Whether a web server of some node wrote its files in this test's runtime directory.
  func serverFilesExist() -> Bool {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
    return entries.contains { FileManager.default.fileExists(atPath: runtime + "/" + $0 + "/web.json") }
  }

  /// JSON compared as sorted text.
  func canonical(_ value: Any) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else { return "?" }
    return String(decoding: data, as: UTF8.self)
  }

  // MARK: - Addresses and options

  func testAnythingButLoopbackIsRefused() throws {
    let cli = try node()
    for address in ["0.0.0.0", "::", "192.168.1.20", "169.254.77.10", "fe80::1", "example.org"] {
      let result = try cli.run(["web", "--address", address])
      XCTAssertEqual(result.status, 2, address)
      XCTAssertTrue(result.stderr.contains("listens only on this machine (127.0.0.1 and ::1)"), result.stderr)
      XCTAssertTrue(result.stderr.contains("hint: "), result.stderr)
    }
    XCTAssertEqual(try cli.run(["web", "--port", "70000"]).status, 2)
    XCTAssertEqual(try cli.run(["web", "--port", "x"]).status, 2)
    XCTAssertEqual(try cli.run(["web", "--adress", "::1"]).status, 2)
    XCTAssertEqual(try cli.run(["serve", "--web-port", "0"]).status, 2, "--web-port needs --web")
    let help = try cli.run(["web", "--help"])
    XCTAssertEqual(help.status, 0)
    for option in ["--port", "--address", "--open"] { XCTAssertTrue(help.stdout.contains(option), option) }
    XCTAssertTrue(try cli.run(["--help"]).stdout.contains("  web "))
  }

  func testItListensOnLoopbackAndNothingElse() throws {
    let cli = try node()
    let server = try WebServerProcess(cli)
    var listening: [String] = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
      let text = try String(contentsOfFile: table, encoding: .utf8)
      for line in text.split(separator: "\n").dropFirst() {
        let columns = line.split(separator: " ")
        guard columns.count > 3, columns[3] == "0A" else { continue }  // LISTEN
        let local = columns[1].split(separator: ":")
        guard local.count == 2, UInt16(local[1], radix: 16) == server.port else { continue }
        listening.append(String(local[0]))
      }
    }
    XCTAssertEqual(
      Set(listening), ["0100007F", "00000000000000000000000001000000"],
      "only 127.0.0.1 and ::1 listen on port \(server.port)")
    XCTAssertEqual(server.stop(), 0)
  }

  // MARK: - Access

  func testWhoMayUseThePage() throws {
    let cli = try node()
    let server = try WebServerProcess(cli)
    let base = server.base

    // No session: nothing but the sign-in route and the style sheet.
    for path in ["/", "/index.html", "/app.js", "/api/memos", "/api/status", "/api/consent"] {
      let response = try server.curl([base + path])
      XCTAssertEqual(response.status, 401, path)
    }
    XCTAssertEqual(
      try server.curl([base + "/api/memos"]).json["error"].flatMap { ($0 as? [String: Any])?["code"] as? String },
      "unauthorized")
    XCTAssertEqual(try server.curl([base + "/login?token=not-the-token"]).status, 403)
    XCTAssertEqual(try server.curl([base + "/login"]).status, 403)

    // The one-time link: a cookie, once.
    let signIn = try server.curl(["-c", server.cookies, server.link])
    XCTAssertEqual(signIn.status, 303)
    XCTAssertEqual(signIn.header("Location"), "/")
    let cookie = try XCTUnwrap(signIn.header("Set-Cookie"))
    XCTAssertTrue(cookie.hasPrefix("memo_peer_session_\(server.port)="), cookie)
    XCTAssertTrue(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), cookie)
    XCTAssertEqual(try server.curl([server.link]).status, 403, "the link works once")
    XCTAssertTrue(
      AuditScenario.waitUntil(seconds: 10) { server.stdout.split(separator: "\n").count == 2 },
      "the next one-time link is printed")
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 200)

    // DNS rebinding: the same cookie under another name, or another port.
    for host in ["evil.example", "evil.example:\(server.port)", "127.0.0.1:1", "localhost"] {
      let response = try server.curl(["-H", server.cookieHeader, "-H", "Host: \(host)", base + "/api/memos"])
      XCTAssertEqual(response.status, 403, host)
    }
    XCTAssertEqual(
      try server.curl(["-H", server.cookieHeader, "-H", "Host: localhost:\(server.port)", base + "/api/memos"]).status,
      200)

    // Cross-site requests that change something.
    let body = #"{"body":"from a form elsewhere"}"#
    for origin in ["Origin: http://evil.example", "Origin: null", "X-No-Origin: 1"] {
      let response = try server.curl([
        "-b", server.cookies, "-H", origin, "-H", "Content-Type: application/json", "--data-binary", body,
        base + "/api/memos",
      ])
      XCTAssertEqual(response.status, 403, origin)
    }
    XCTAssertEqual(try cli.listedIDs(), [], "nothing was created")
    XCTAssertEqual(try server.api("POST", "/api/memos", json: ["body": "from the page"]).status, 201)
    XCTAssertEqual(try cli.listedIDs().count, 1)

    // Signing out ends the session.
    XCTAssertEqual(try server.api("DELETE", "/api/session").status, 200)
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 401)
    XCTAssertEqual(server.stop(), 0)
  }

  func testEveryResponseCarriesTheHeaders() throws {
    let cli = try node()
    let id = try cli.new("A memo\n")
    let server = try WebServerProcess(cli)
    try server.signIn()
    let base = server.base
    var responses: [(String, WebServerProcess.Response)] = [
      ("401", try server.curl([base + "/api/memos"])),
      ("403 host", try server.curl(["-H", "Host: evil.example", base + "/"])),
      ("403 link", try server.curl([base + "/login?token=x"])),
      ("page", try server.curl(["-b", server.cookies, base + "/"])),
      ("script", try server.curl(["-b", server.cookies, base + "/app.js"])),
      ("style", try server.curl([base + "/app.css"])),
      ("404", try server.curl(["-b", server.cookies, base + "/nothing"])),
      ("405", try server.api("PUT", "/api/memos")),
      ("list", try server.api("GET", "/api/memos")),
      ("show", try server.api("GET", "/api/memos/" + id)),
      ("400", try server.api("POST", "/api/memos", json: ["title": "no body"])),
    ]
    let big = cli.home + "/big"
    try Data(count: 10 << 20).write(to: URL(fileURLWithPath: big))
    responses.append(
      (
        "413",
        try server.curl(
          [
            "-b", server.cookies, "-H", "Origin: \(server.origin)", "-H", "Content-Type: application/json",
            "--data-binary", "@" + big, base + "/api/memos",
          ])
      ))
    let statuses = Dictionary(uniqueKeysWithValues: responses.map { ($0.0, $0.1.status) })
    XCTAssertEqual(statuses["413"], 413, "a 10 MiB body is refused")
    XCTAssertEqual(statuses["page"], 200)
    XCTAssertEqual(statuses["404"], 404)
    XCTAssertEqual(statuses["400"], 400)
    for (name, response) in responses {
      let policy = try XCTUnwrap(response.header("Content-Security-Policy"), name)
      for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"] {
        XCTAssertTrue(policy.contains(directive), "\(name): \(directive)")
      }
      XCTAssertFalse(policy.contains("unsafe-inline") || policy.contains("unsafe-eval"), name)
      XCTAssertEqual(response.header("Cache-Control"), "no-store", name)
      XCTAssertEqual(response.header("Referrer-Policy"), "no-referrer", name)
      XCTAssertEqual(response.header("X-Content-Type-Options"), "nosniff", name)
      XCTAssertEqual(response.header("X-Frame-Options"), "DENY", name)
    }
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 200, "still up after the big body")
    XCTAssertEqual(try cli.listedIDs(), [id])
    XCTAssertEqual(server.stop(), 0)
  }

  func testTwoHundredConnectionsLeaveItUp() throws {
    let cli = try node()
    let server = try WebServerProcess(cli)
    try server.signIn()
    // 200 at once: half send a whole request, half only a part of one and then wait.
    var sockets: [Int32] = []
    defer { for fd in sockets { close(fd) } }
    for index in 0..<200 {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
      guard fd >= 0 else { break }
      sockets.append(fd)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = server.port.bigEndian
      address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard connected == 0 else { continue }
      let request =
        index.isMultiple(of: 2)
        ? "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n" : "GET /api/status HTTP/1.1\r\nHo"
      _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }
    XCTAssertEqual(sockets.count, 200)
    // Every connection either got an answer or was closed by the server's limit; none hangs
    // the server. Reads are bounded (non-blocking, a few rounds).
    var answered = 0
    for fd in sockets { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    for _ in 0..<50 where answered < 100 {
      answered = 0
      for (index, fd) in sockets.enumerated() where index.isMultiple(of: 2) {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
        if count != 0 || errno != EAGAIN { answered += 1 }
      }
      Thread.sleep(forTimeInterval: 0.1)
    }
    XCTAssertGreaterThan(answered, 0, "some of the complete requests were answered")
    XCTAssertTrue(server.process.isRunning, "the server is still up while they are open")
    for fd in sockets { close(fd) }
    sockets = []
    // Up and answering afterwards (bounded wait while the closed connections drain).
    XCTAssertTrue(
      AuditScenario.waitUntil(seconds: 15) { (try? server.api("GET", "/api/memos").status) == 200 },
      "it answers after the flood")
    XCTAssertEqual(server.stop(), 0)
  }

  // MARK: - The API in the command line's shapes

  func testTheAPIAnswersInTheCommandLinesJSON() throws {
    let cli = try node()
    let fixtures = try WebFixtures(cli)
    let server = try WebServerProcess(cli)
    try server.signIn()
    func same(_ path: String, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
      let api = try server.api("GET", path)
      XCTAssertEqual(api.status, 200, path, file: file, line: line)
      XCTAssertEqual(
        canonical(api.json), canonical(try cli.json(arguments)), "\(path) vs \(arguments)", file: file, line: line)
    }
    try same("/api/memos", ["list"])
    try same("/api/memos/" + fixtures.privateID, ["show", fixtures.privateID])
    try same("/api/memos/" + fixtures.conflictMemo, ["show", fixtures.conflictMemo])
    try same("/api/conflicts", ["conflicts"])
    try same("/api/inbox", ["inbox"])
    try same("/api/peers", ["peers"])
    try same("/api/consent", ["consent", "status"])
    try same("/api/status", ["status"])
    let search = try server.api("POST", "/api/search", json: ["text": fixtures.canaries[.privateBody]])
    XCTAssertEqual(
      canonical(search.json),
      canonical(try cli.json(["search", "--stdin"], stdin: Array(fixtures.canaries[.privateBody].utf8))))
    XCTAssertEqual((search.json["memos"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [fixtures.privateID])
    let byTag = try server.api("POST", "/api/search", json: ["tag": fixtures.canaries[.publicTag]])
    XCTAssertEqual(canonical(byTag.json), canonical(try cli.json(["list", "--tag", fixtures.canaries[.publicTag]])))

    // Changes answer as the commands that make them.
    let created = try server.api(
      "POST", "/api/memos", json: ["body": "Call the plumber\nabout the tap", "tags": ["home"]])
    XCTAssertEqual(created.status, 201)
    let memo = try XCTUnwrap(created.json["memo"] as? [String: Any])
    XCTAssertEqual(
      Set(memo.keys), Set((try cli.json(["new"], stdin: Array("x\n".utf8))["memo"] as! [String: Any]).keys))
    XCTAssertEqual(memo["title"] as? String, "Call the plumber")
    let id = try XCTUnwrap(memo["id"] as? String)
    let edited = try server.api(
      "PATCH", "/api/memos/" + id, json: ["body": "Call the plumber\ntomorrow", "revision": 1])
    XCTAssertEqual(edited.status, 200)
    XCTAssertEqual((edited.json["memo"] as? [String: Any])?["revision"] as? Int, 2)
    XCTAssertEqual(
      try cli.json(["show", id])["memo"].flatMap { ($0 as? [String: Any])?["body"] as? String },
      "Call the plumber\ntomorrow")
    let deleted = try server.api("DELETE", "/api/memos/" + id)
    XCTAssertEqual(canonical(deleted.json), canonical(["schema": 1, "deleted": id]))
    XCTAssertEqual(try cli.run(["show", id]).status, 3)

    let accepted = try server.api("POST", "/api/inbox/\(WebFixtures.inboxEntry)/accept")
    XCTAssertEqual(accepted.status, 200)
    let acceptedID = try XCTUnwrap((accepted.json["memo"] as? [String: Any])?["id"] as? String)
    XCTAssertEqual(
      try cli.json(["show", acceptedID])["memo"].flatMap { ($0 as? [String: Any])?["body"] as? String },
      fixtures.extra["inboxbody"])
    XCTAssertEqual(try server.api("POST", "/api/inbox/\(WebFixtures.inboxEntry)/drop").status, 404, "already accepted")

    let resolved = try server.api("POST", "/api/conflicts/\(fixtures.conflictMemo)/resolve", json: ["keep": "both"])
    XCTAssertEqual(resolved.status, 200)
    XCTAssertEqual(Set(resolved.json.keys), ["schema", "memo", "deleted", "new_memos"])
    XCTAssertEqual((try cli.json(["conflicts"])["conflicts"] as? [Any])?.count, 0)
    XCTAssertEqual(server.stop(), 0)
  }

  func testBadRequestsGetAJSONErrorAndChangeNothing() throws {
    let cli = try node()
    let fixtures = try WebFixtures(cli)
    let server = try WebServerProcess(cli)
    try server.signIn()
    let before = try cli.listedIDs()
    func error(_ response: WebServerProcess.Response) -> String? {
      (response.json["error"] as? [String: Any])?["code"] as? String
    }
    XCTAssertEqual(error(try server.api("GET", "/api/memos/ffffffff")), "not-found")
    XCTAssertEqual(try server.api("GET", "/api/memos/ffffffff").status, 404)
    XCTAssertEqual(error(try server.api("POST", "/api/memos", json: ["body": ""])), "invalid-input")
    XCTAssertEqual(
      error(try server.api("POST", "/api/memos", json: ["body": String(repeating: "a", count: 70_000)])), "too-large")
    XCTAssertEqual(
      error(try server.api("PATCH", "/api/memos/" + fixtures.conflictMemo, json: ["body": "x"])), "conflict")
    XCTAssertEqual(error(try server.api("DELETE", "/api/memos/" + fixtures.conflictMemo)), "conflict")
    XCTAssertEqual(
      error(try server.api("POST", "/api/conflicts/\(fixtures.conflictMemo)/resolve", json: ["keep": "C"])),
      "invalid-input")
    XCTAssertEqual(error(try server.api("POST", "/api/consent", json: ["decision": "perhaps"])), "invalid-input")
    XCTAssertEqual(error(try server.api("POST", "/api/unlock")), "invalid-input")
    XCTAssertEqual(error(try server.api("POST", "/api/lock")), "not-protected")
    XCTAssertEqual(try cli.listedIDs(), before)

    // An edit from a page that read an older revision keeps its text as a memo of its own.
    let stale = try server.api("PATCH", "/api/memos/" + fixtures.publicID, json: ["body": "stale edit", "revision": 0])
    XCTAssertEqual(stale.status, 409)
    XCTAssertTrue(
      (stale.json["error"] as? [String: Any])?["message"].map { "\($0)".contains("saved as memo") } ?? false)
    XCTAssertEqual(try cli.listedIDs().count, before.count + 1)
    XCTAssertTrue(server.process.isRunning)
    XCTAssertEqual(server.stop(), 0)
  }

  // MARK: - Consent and lock state

  func testConsentIsRecordedOnlyWhenAsked() throws {
    let cli = try node()
    let server = try WebServerProcess(cli)
    try server.signIn()
    for path in ["/api/memos", "/api/consent", "/api/status", "/api/peers", "/api/sync"] {
      XCTAssertEqual(try server.api("GET", path).status, 200, path)
    }
    let sync = try server.api("POST", "/api/sync")
    XCTAssertEqual(sync.status, 403, "no sync without consent")
    XCTAssertEqual((sync.json["error"] as? [String: Any])?["code"] as? String, "consent-required")
    XCTAssertEqual(try server.api("POST", "/api/consent", json: ["decision": "revoked"]).status, 200)
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.home + "/node/state/consent.jsonl"), "nothing recorded")

    let granted = try server.api("POST", "/api/consent", json: ["scope": "local-network", "decision": "granted"])
    XCTAssertEqual(granted.status, 200)
    let status = try cli.json(["consent", "status"])
    let scope = try XCTUnwrap((status["scopes"] as? [String: Any])?["local-network"] as? [String: Any])
    XCTAssertEqual(scope["state"] as? String, "granted")
    let record = try XCTUnwrap(scope["last"] as? [String: Any])
    XCTAssertEqual(record["method"] as? String, "web")
    XCTAssertEqual(record["usage_text"] as? String, status["usage_text"] as? String)
    XCTAssertEqual(canonical(granted.json), canonical(record), "answered with the record, as consent grant --json")
    let nobody = try server.api("POST", "/api/sync")
    XCTAssertEqual(nobody.status, 404, "nobody to sync with")
    XCTAssertEqual(server.stop(), 0)
  }

  func testALockedNodeShowsWhatListShowsLocked() throws {
    let cli = try node()
    let fixtures = try WebFixtures(cli)
    let passphrase = fixtures.canaries[.passphrase]
    XCTAssertEqual(
      try cli.run(["protect", "complete", "--new-passphrase-fd", "0"], stdin: Array((passphrase + "\n").utf8)).status, 0
    )
    let server = try WebServerProcess(cli)
    try server.signIn()
    let copied = server.cookieHeader
    XCTAssertEqual(try server.api("POST", "/api/lock").status, 200)
    // The lock suspended the session: its cookie, or a copy of it, opens nothing now.
    for path in ["/api/memos", "/api/status", "/api/memos/" + fixtures.publicID, "/api/inbox"] {
      let response = try server.curl(["-H", copied, server.base + path])
      XCTAssertEqual(response.status, 401, path)
      XCTAssertEqual((response.json["error"] as? [String: Any])?["code"] as? String, "session-locked", path)
    }
    // A browser that signs in while the node is locked sees what `list` shows locked.
    XCTAssertTrue(AuditScenario.waitUntil(seconds: 10) { server.links.count == 2 }, "the next link is printed")
    try server.signIn(with: server.links[1])
    XCTAssertEqual(canonical(try server.api("GET", "/api/memos").json), canonical(try cli.json(["list"])))
    let list = try server.api("GET", "/api/memos")
    XCTAssertEqual(list.json["locked"] as? Bool, true)
    XCTAssertFalse(list.text.contains(fixtures.canaries[.privateTitle]))
    for path in ["/api/memos/" + fixtures.publicID, "/api/inbox", "/api/conflicts"] {
      let response = try server.api("GET", path)
      XCTAssertEqual(response.status, 423, path)
      XCTAssertEqual((response.json["error"] as? [String: Any])?["code"] as? String, "locked")
    }
    XCTAssertEqual(try server.api("POST", "/api/search", json: ["text": "milk"]).status, 423)
    XCTAssertEqual(try server.api("POST", "/api/memos", json: ["body": "x"]).status, 423)
    func unlock(_ text: String, cookie: [String]) throws -> WebServerProcess.Response {
      try server.curl(
        cookie + [
          "-H", "Origin: \(server.origin)", "-H", "Content-Type: application/octet-stream", "--data-binary", "@-",
          server.base + "/api/unlock",
        ], stdin: Array(text.utf8))
    }
    let wrong = try unlock("not the passphrase", cookie: ["-b", server.cookies])
    XCTAssertEqual(wrong.status, 403)
    XCTAssertEqual((wrong.json["error"] as? [String: Any])?["code"] as? String, "passphrase")
    let right = try unlock(passphrase, cookie: ["-b", server.cookies])
    XCTAssertEqual(right.status, 200)
    XCTAssertEqual(right.json["state"] as? String, "unlocked")
    XCTAssertEqual(
      try cli.json(["status"])["protection"].flatMap { ($0 as? [String: Any])?["state"] as? String }, "unlocked")
    XCTAssertEqual(try server.api("GET", "/api/memos/" + fixtures.publicID).status, 200)
    XCTAssertEqual(try server.curl(["-H", copied, server.base + "/api/memos"]).status, 401, "still nothing")
    XCTAssertEqual(server.stop(), 0)
    XCTAssertFalse(server.stderr.contains(passphrase))
  }

  func testALockAnywhereEndsTheSessionsAndAnUnlockFromThePageRenewsOne() throws {
    let cli = try node()
    let passphrase = "a passphrase of the test"
    _ = try cli.new("A memo\n")
    XCTAssertEqual(
      try cli.run(
        ["protect", "after-first-unlock", "--new-passphrase-fd", "0"], stdin: Array((passphrase + "\n").utf8)
      )
      .status, 0)
    let server = try WebServerProcess(cli)
    try server.signIn()
    let copied = server.cookieHeader
    XCTAssertEqual(try server.curl(["-H", copied, server.base + "/api/memos"]).status, 200, "a copy works, before")
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    XCTAssertTrue(
      AuditScenario.waitUntil(seconds: 2) {
        (try? server.curl(["-H", copied, server.base + "/api/memos"]).status) == 401
      }, "memo-peer lock in a terminal suspends the page's sessions within a second")
    XCTAssertEqual(try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array((passphrase + "\n").utf8)).status, 0)
    XCTAssertEqual(
      try server.curl(["-H", copied, server.base + "/api/memos"]).status, 401, "an unlock elsewhere revives none")
    // The page's own unlock form: the suspended session and the passphrase give a new cookie.
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    let renewed = try server.curl(
      [
        "-b", server.cookies, "-c", server.cookies, "-H", "Origin: \(server.origin)", "-H",
        "Content-Type: application/octet-stream", "--data-binary", "@-", server.base + "/api/unlock",
      ], stdin: Array(passphrase.utf8))
    XCTAssertEqual(renewed.status, 200, renewed.text)
    XCTAssertNotNil(renewed.header("Set-Cookie"))
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 200, "the page goes on with its new cookie")
    XCTAssertEqual(try server.curl(["-H", copied, server.base + "/api/memos"]).status, 401)
    XCTAssertEqual(server.stop(), 0)
  }

  func testASessionEndsAfterItsIdleLifetime() throws {
    let cli = try node()
    let server = try WebServerProcess(cli, arguments: ["--port", "0", "--session-timeout", "10s"])
    try server.signIn()
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 200)
    // The page's polling is not use: it does not keep the session alive.
    let deadline = Date().addingTimeInterval(11.5)
    while Date() < deadline {
      _ = try server.api("GET", "/api/status")
      Thread.sleep(forTimeInterval: 1.5)
    }
    let ended = try server.api("GET", "/api/memos")
    XCTAssertEqual(ended.status, 401)
    XCTAssertEqual((ended.json["error"] as? [String: Any])?["code"] as? String, "unauthorized")
    XCTAssertEqual(try cli.run(["web", "--session-timeout", "5s"]).status, 2, "at least 10 s")
    XCTAssertEqual(server.stop(), 0)
  }

  // MARK: - Raw requests: refusals and strict parsing

  func testRefusalsCarryTheHeadersCloseAndParsingIsStrict() throws {
    let cli = try node()
    _ = try cli.new("A memo\n")
    let server = try WebServerProcess(cli)
    try server.signIn()
    let host = "Host: 127.0.0.1:\(server.port)\r\n"
    let cookie = server.cookieHeader + "\r\n"
    let origin = "Origin: \(server.origin)\r\n"
    let json = "Content-Type: application/json\r\n"
    func status(_ text: String) -> Int { Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0 }
    func headers(_ text: String) -> [String: String] {
      var found: [String: String] = [:]
      for line in text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n").dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        found[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      }
      return found
    }
    // memo-peer's own refusals: the headers, Connection: close, and the connection closed.
    let ours: [(String, String, Int)] = [
      ("a NUL escape in the path", "GET /api/memos%00x HTTP/1.1\r\n\(host)\(cookie)\r\n", 400),
      ("a bad escape", "GET /api/memos%zz HTTP/1.1\r\n\(host)\(cookie)\r\n", 400),
      ("a space in the path", "GET /api/me mos HTTP/1.1\r\n\(host)\(cookie)\r\n", 400),
      (
        "two lengths",
        "POST /api/search HTTP/1.1\r\n\(host)\(cookie)\(origin)\(json)Content-Length: 2\r\nContent-Length: 15\r\n\r\n{}",
        400
      ),
      (
        "a length and chunks",
        "POST /api/search HTTP/1.1\r\n\(host)\(cookie)\(origin)\(json)Content-Length: 2\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400
      ),
      ("no Host", "GET /api/memos HTTP/1.1\r\n\(cookie)\r\n", 403),
      ("two Hosts", "GET /api/memos HTTP/1.1\r\n\(host)\(host)\(cookie)\r\n", 403),
      ("no session", "GET /api/memos HTTP/1.1\r\n\(host)\r\n", 401),
      ("another origin", "DELETE /api/session HTTP/1.1\r\n\(host)\(cookie)Origin: http://evil.example\r\n\r\n", 403),
      // libmicrohttpd passes any HTTP/1.x on as 1.1; memo-peer refuses what it does not speak.
      ("HTTP/1.2", "GET /api/memos HTTP/1.2\r\n\(host)\(cookie)\r\n", 505),
      ("HTTP/1.9", "GET / HTTP/1.9\r\n\(host)\r\n", 505),
    ]
    for (name, request, expected) in ours {
      let (text, closed) = server.raw(Array(request.utf8))
      XCTAssertEqual(status(text), expected, "\(name): \(text.prefix(200))")
      let found = headers(text)
      for field in ResponsePolicy.headers {
        XCTAssertEqual(found[field.name.lowercased()], field.value, "\(name): \(field.name)")
      }
      XCTAssertEqual(found["connection"], "close", name)
      XCTAssertTrue(closed, "\(name): the connection is closed")
      XCTAssertEqual(text.components(separatedBy: "HTTP/1.1 ").count, 2, "\(name): one status line")
    }
    // A duplicate key in JSON: refused, with the headers.
    let body = #"{"text": "memo", "text": "other"}"#
    let (duplicate, _) = server.raw(
      Array(
        "POST /api/search HTTP/1.1\r\n\(host)\(cookie)\(origin)\(json)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
          .utf8))
    XCTAssertEqual(status(duplicate), 400, duplicate)
    XCTAssertTrue(duplicate.contains("given twice"), duplicate)
    XCTAssertNotNil(headers(duplicate)["content-security-policy"])
    // HEAD does not spend the one-time token.
    let next = try XCTUnwrap(server.links.last)
    let token = try XCTUnwrap(next.components(separatedBy: "token=").last)
    let (head, _) = server.raw(Array("HEAD /login?token=\(token) HTTP/1.1\r\n\(host)\r\n".utf8))
    XCTAssertEqual(status(head), 405, head)
    XCTAssertFalse(head.lowercased().contains("set-cookie"))
    XCTAssertEqual(try server.curl(["-c", cli.home + "/jar-head", next]).status, 303, "the token still signs in")

    // libmicrohttpd's own refusals, sent before memo-peer sees the request: the status, its
    // fixed text, the connection closed; none of memo-peer's headers (docs/WEB.md says so).
    let theirs: [(String, String, Int)] = [
      ("a length that is not a number", "GET / HTTP/1.1\r\n\(host)Content-Length: abc\r\n\r\n", 400),
      ("a length too large to hold", "GET / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999\r\n\r\n", 413),
      ("a head too large", "GET / HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "a", count: 70000))\r\n\r\n", 431),
      ("an unknown version", "GET / HTTP/3.7\r\n\(host)\r\n", 505),
      ("a header line without a colon", "GET / HTTP/1.1\r\n\(host)no colon here\r\n\r\n", 400),
      ("a request line of two words", "hello world\r\n\r\n", 400),
      ("a request line of three words, the last no version", "GET / FOO/1.1\r\n\(host)\r\n", 400),
    ]
    for (name, request, expected) in theirs {
      let (text, closed) = server.raw(Array(request.utf8))
      XCTAssertEqual(status(text), expected, "\(name): \(text.prefix(200))")
      XCTAssertTrue(closed, "\(name): the connection is closed")
      XCTAssertFalse(text.contains("schema"), "\(name): not an answer of memo-peer's")
    }
    // A request line without a space (one word): libmicrohttpd 0.9.75 closes the connection
    // at once, without any answer, before any of memo-peer's callbacks sees the line, so no
    // 400 can be sent (docs/WEB.md says exactly this).
    for garbage in ["GARBAGE\r\n\r\n", "GET\r\n\r\n"] {
      let (text, closed) = server.raw(Array(garbage.utf8))
      XCTAssertEqual(text, "", "no answer to \(garbage.debugDescription)")
      XCTAssertTrue(closed, "the connection is closed at once")
    }
    XCTAssertEqual(try server.api("GET", "/api/memos").status, 200, "still up")
    XCTAssertEqual(server.stop(), 0)
  }

  // MARK: - --open, a second start, serve --web

  func testOpenHandsTheBrowserAFileNotTheToken() throws {
    let cli = try node()
    let bin = cli.home + "/bin"
    try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
    let record = cli.home + "/xdg-open.record"
    // A stand-in for xdg-open: records its arguments and what the file said.
    let opener = try cli.script(
      "bin/xdg-open",
      "printf '%s\\n' \"$@\" > '\(record).args'\nstat -c '%a %U' \"$1\" \"$(dirname \"$1\")\" > '\(record).mode'\n"
        + "cat \"$1\" > '\(record).file'\n")
    XCTAssertTrue(FileManager.default.isExecutableFile(atPath: opener))
    let server = try WebServerProcess(
      cli, arguments: ["--port", "0", "--open"], extraEnvironment: ["PATH": bin + ":/usr/bin:/bin"])
    XCTAssertTrue(AuditScenario.waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: record + ".file") })
    Thread.sleep(forTimeInterval: 0.2)
    let arguments = try String(contentsOfFile: record + ".args", encoding: .utf8).split(separator: "\n")
    XCTAssertEqual(arguments.count, 1)
    let launcher = String(arguments[0])
    XCTAssertTrue(launcher.hasPrefix(runtime + "/memo-peer-web-"), launcher)
    XCTAssertFalse(launcher.contains("token"))
    XCTAssertEqual(try String(contentsOfFile: record + ".mode", encoding: .utf8), "600 root\n700 root\n")
    let page = try String(contentsOfFile: record + ".file", encoding: .utf8)
    XCTAssertTrue(page.contains("url=\(server.link)\""), page)

    // A second `web` finds the first: prints its current link, starts nothing.
    let second = try runningLink(cli)
    XCTAssertEqual(second.status, 0, second.stderr)
    XCTAssertEqual(second.stdout, server.link + "\n")
    XCTAssertTrue(second.stderr.contains("already running"))
    // After a sign-in the file holds the next link, and the used one is dead.
    try server.signIn()
    XCTAssertTrue(
      AuditScenario.waitUntil(seconds: 10) {
        let now = (try? self.runningLink(cli).stdout) ?? ""
        return now.hasPrefix("http://") && now != server.link + "\n"
      })
    let next = try runningLink(cli).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertEqual(try server.curl(["-c", cli.home + "/jar2", next]).status, 303)
    XCTAssertEqual(server.stop(), 0)
    XCTAssertEqual(
      try FileManager.default.contentsOfDirectory(atPath: runtime).filter { $0.hasPrefix("memo-peer-web-") }, [],
      "the link's files go with the server")
  }

  /// `web --open` while a server runs hands the page to xdg-open every time: it used to
  /// exit before the thread that started xdg-open ran, and the browser opened in 3 runs of
  /// 10 (issue 38).
  func testOpenWithAServerRunningOpensThePageEveryTime() throws {
    let cli = try node()
    let bin = cli.home + "/bin"
    try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
    let record = cli.home + "/xdg-open.calls"
    // A stand-in for xdg-open: one line per call, with the file it was given.
    _ = try cli.script("bin/xdg-open", "printf '%s\\n' \"$1\" >> '\(record)'\n")
    let server = try WebServerProcess(cli)
    let environment = ["PATH": bin + ":/usr/bin:/bin"]
    for run in 1...10 {
      let opened = try cli.run(
        executable: "/usr/bin/timeout", ["20", CLIProcess.binary, "web", "--open"], stdin: nil,
        extraEnvironment: environment)
      XCTAssertEqual(opened.status, 0, "run \(run): \(opened.stderr)")
      XCTAssertTrue(opened.stderr.contains("already running"), "run \(run): \(opened.stderr)")
    }
    // Each xdg-open was started before its memo-peer exited; each writes its line soon after.
    func calls() -> [Substring] {
      ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(separator: "\n")
    }
    _ = AuditScenario.waitUntil(seconds: 20) { calls().count >= 10 }
    XCTAssertEqual(calls().count, 10, "xdg-open ran once per `web --open`")
    XCTAssertTrue(calls().allSatisfy { $0.hasPrefix(self.runtime + "/memo-peer-web-") && $0.hasSuffix("/open.html") })
    XCTAssertEqual(server.stop(), 0)
  }

  func testServeWebServesThePageBesideTheDaemon() throws {
    let cli = try node()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    process.arguments = ["serve", "--web", "--web-port", "0"]
    process.environment = cli.environment
    let err = cli.home + "/serve.err"
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    process.standardError = FileHandle(forWritingAtPath: err)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    defer {
      if process.isRunning {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
      }
    }
    XCTAssertTrue(
      AuditScenario.waitUntil(seconds: 15) { self.serverFilesExist() },
      (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    let link = try runningLink(cli).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertTrue(link.hasPrefix("http://127.0.0.1:"), link)
    let log = try String(contentsOfFile: err, encoding: .utf8)
    XCTAssertTrue(log.contains("web page on http://127.0.0.1:"), log)
    XCTAssertFalse(log.contains("token="), "the link never reaches the daemon's log")
    let jar = cli.home + "/jar"
    let signIn = try cli.run(
      executable: "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-c", jar, link], stdin: nil)
    XCTAssertEqual(signIn.stdout, "303")
    let base = link.components(separatedBy: "/login")[0]
    let status = try cli.run(executable: "/usr/bin/curl", ["-s", "-b", jar, base + "/api/status"], stdin: nil)
    XCTAssertEqual(object(status.stdout)["schema"] as? Int, 1, status.stdout)
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0)
    XCTAssertEqual(
      try FileManager.default.contentsOfDirectory(atPath: runtime).filter { $0.hasPrefix("memo-peer-web-") }, [])
  }
}
