import MemoCore
import Synchronization
import XCTest

@testable import MemoWeb

/// Strings recorded from several threads.
final class Recorded: Sendable {
  private let values = Mutex<[String]>([])
  func append(_ value: String) { values.withLock { $0.append(value) } }
  var all: [String] { values.withLock { $0 } }
}

/// Records the calls that got through, and answers each with 200.
final class RecordingAPI: WebAPI {
  let calls = Mutex<[String]>([])

  func perform(_ call: APICall) -> HTTPResponse {
    calls.withLock { $0.append(String(describing: call).prefix(40).description) }
    return .json(200, encoding: ["schema": 1])
  }

  var count: Int { calls.withLock { $0.count } }
}

/// The front door's checks, in order, with every refusal carrying the security headers.
final class WebFrontDoorTests: XCTestCase {
  let host = "127.0.0.1:8426"
  var api: RecordingAPI!
  var door: WebFrontDoor!
  let signIns = Recorded()

  override func setUpWithError() throws {
    api = RecordingAPI()
    let signIns = signIns
    door = WebFrontDoor(
      origins: WebOrigins(port: 8426, addresses: [.ipv4, .ipv6]), sessions: try WebSessions(port: 8426), api: api,
      logger: .disabled, serverUser: 1000, onSignIn: { token in signIns.append(token) })
  }

  func request(
    _ method: String, _ path: String, host: String? = nil, origin: String? = nil, session: String? = nil,
    headers: [HTTPField] = [], body: String = "", query: [HTTPField] = []
  ) -> HTTPRequest {
    var fields = [HTTPField("Host", host ?? self.host)] + headers
    if let origin { fields.append(HTTPField("Origin", origin)) }
    if !body.isEmpty {
      fields += [HTTPField("Content-Type", "application/json"), HTTPField("Content-Length", "\(body.utf8.count)")]
    }
    return HTTPRequest(
      method: method, path: path, query: query, headers: fields,
      cookies: session.map { [HTTPField("memo_peer_session_8426", $0)] } ?? [], body: Array(body.utf8), user: 1000)
  }

  func signIn() throws -> String {
    let token = door.sessions.token
    let response = door.respond(to: request("GET", "/login", query: [HTTPField("token", token)]))
    XCTAssertEqual(response.status, 303)
    XCTAssertEqual(response.header("Location"), "/")
    let cookie = try XCTUnwrap(response.header("Set-Cookie"))
    return String(cookie.dropFirst("memo_peer_session_8426=".count).prefix { $0 != ";" })
  }

  func code(_ response: HTTPResponse) -> String? {
    ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]).flatMap {
      ($0["error"] as? [String: Any])?["code"] as? String
    }
  }

  func assertPolicy(_ response: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) {
    for field in ResponsePolicy.headers {
      XCTAssertEqual(
        response.header(field.name), field.value, "\(response.status) \(field.name)", file: file, line: line)
    }
  }

  func testSigningInExchangesTheTokenOnce() throws {
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos")).status, 401)
    XCTAssertEqual(door.respond(to: request("GET", "/")).status, 401, "the page needs a session too")
    XCTAssertEqual(
      door.respond(to: request("GET", "/login", query: [HTTPField("token", "guess")])).status, 403)
    let token = door.sessions.token
    let session = try signIn()
    XCTAssertEqual(signIns.all, [door.sessions.token], "the next token is announced")
    XCTAssertEqual(door.respond(to: request("GET", "/login", query: [HTTPField("token", token)])).status, 403)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200)
    XCTAssertEqual(door.respond(to: request("GET", "/", session: session)).status, 200)
    XCTAssertEqual(
      door.respond(to: request("GET", "/app.js", session: session)).header("Content-Type"),
      "text/javascript; charset=utf-8")
    let repeated = request(
      "GET", "/login", query: [HTTPField("token", door.sessions.token), HTTPField("token", door.sessions.token)])
    XCTAssertEqual(door.respond(to: repeated).status, 403, "a repeated parameter is not the token")
    XCTAssertEqual(
      door.respond(to: request("GET", "/login", session: session)).status, 303, "signed in: on to the page")
    let out = door.respond(to: request("DELETE", "/api/session", origin: "http://\(host)", session: session))
    XCTAssertEqual(out.status, 200)
    XCTAssertTrue(out.header("Set-Cookie")?.contains("Max-Age=0") ?? false)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 401, "signed out")
    XCTAssertEqual(api.count, 1)
  }

  func testHostAndOriginAreChecked() throws {
    let session = try signIn()
    for host in ["evil.example", "evil.example:8426", "127.0.0.1:8427", "localhost"] {
      let response = door.respond(to: request("GET", "/api/memos", host: host, session: session))
      XCTAssertEqual(response.status, 403, host)
      XCTAssertEqual(code(response), "forbidden-host")
      assertPolicy(response)
    }
    var twoHosts = request("GET", "/api/memos", session: session)
    twoHosts.headers.append(HTTPField("host", "evil.example"))
    XCTAssertEqual(door.respond(to: twoHosts).status, 403, "a second Host header")
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", host: "localhost:8426", session: session)).status, 200)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", host: "[::1]:8426", session: session)).status, 200)

    let body = #"{"body":"x"}"#
    for origin in [nil, "http://evil.example", "null", "http://localhost:8426", "https://127.0.0.1:8426"] {
      let response = door.respond(to: request("POST", "/api/memos", origin: origin, session: session, body: body))
      XCTAssertEqual(response.status, 403, origin ?? "no Origin")
      XCTAssertEqual(code(response), "forbidden-origin")
    }
    let crossSite = request(
      "POST", "/api/memos", origin: "http://\(host)", session: session,
      headers: [HTTPField("Sec-Fetch-Site", "cross-site")], body: body)
    XCTAssertEqual(door.respond(to: crossSite).status, 403)
    XCTAssertEqual(door.respond(to: request("POST", "/api/memos", origin: "http://\(host)", body: body)).status, 401)
    XCTAssertEqual(
      door.respond(to: request("POST", "/api/memos", origin: "http://\(host)", session: session, body: body)).status,
      200)
    XCTAssertEqual(api.count, 3)
  }

  func testLimitsAndUnknownRequests() throws {
    let session = try signIn()
    let origin = "http://\(host)"
    let big = request(
      "POST", "/api/memos", origin: origin, session: session,
      headers: [HTTPField("Content-Length", "\(10 << 20)")])
    XCTAssertEqual(door.screen(big, contentLength: 10 << 20)?.status, 413, "refused on the head alone")
    let chunked = request(
      "POST", "/api/memos", origin: origin, session: session, headers: [HTTPField("Transfer-Encoding", "chunked")])
    XCTAssertEqual(door.screen(chunked, contentLength: nil)?.status, 411)
    XCTAssertEqual(door.respond(to: request("PUT", "/api/memos", origin: origin, session: session)).status, 405)
    let wrongMethod = door.respond(to: request("GET", "/api/search", session: session))
    XCTAssertEqual(wrongMethod.status, 405)
    XCTAssertEqual(wrongMethod.header("Allow"), "POST")
    XCTAssertEqual(door.respond(to: request("GET", "/api/nothing", session: session)).status, 404)
    XCTAssertEqual(door.respond(to: request("GET", "/etc/passwd", session: session)).status, 404)
    XCTAssertEqual(door.respond(to: request("POST", "/", origin: origin, session: session)).status, 405)
    XCTAssertEqual(door.respond(to: request("POST", "/login", origin: origin, session: session)).status, 405)
    let bad = door.respond(to: request("POST", "/api/memos", origin: origin, session: session, body: "{not json"))
    XCTAssertEqual(bad.status, 400)
    XCTAssertEqual(code(bad), "invalid-input")
    assertPolicy(bad)
    XCTAssertEqual(api.count, 0, "nothing reached the API")
  }

  func testPublicFilesAndPagesCarryThePolicy() throws {
    let css = door.respond(to: request("GET", "/app.css"))
    XCTAssertEqual(css.status, 200, "the style sheet needs no session")
    assertPolicy(css)
    assertPolicy(door.respond(to: request("GET", "/")))
    assertPolicy(door.respond(to: request("GET", "/login", query: [HTTPField("token", "x")])))
    let session = try signIn()
    let page = door.respond(to: request("GET", "/", session: session))
    assertPolicy(page)
    let html = String(decoding: page.body, as: UTF8.self)
    XCTAssertTrue(html.contains(#"<script type="module" src="/app.js"></script>"#))
    XCTAssertFalse(html.contains("<style"), "no inline style")
    XCTAssertFalse(html.contains(" style="), "no inline style attribute")
    XCTAssertFalse(html.contains(" on"), "no inline event handler")
    XCTAssertEqual(html.components(separatedBy: "<script").count, 2, "one script, from a file")
    for asset in [WebAssets.script, WebAssets.style, WebAssets.indexPage] {
      XCTAssertFalse(asset.contains("http://") || asset.contains("https://"), "nothing from another site")
      XCTAssertFalse(asset.contains("localStorage") || asset.contains("sessionStorage") || asset.contains("indexedDB"))
    }
    XCTAssertFalse(WebAssets.script.contains("innerHTML"), "memo text never becomes markup")
  }
}
