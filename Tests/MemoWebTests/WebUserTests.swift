import MemoCore
import XCTest

@testable import MemoWeb

/// The page belongs to the Unix user who signed in (issue 38): a session cookie on another
/// user's connection reads and writes nothing and ends its session; a cookie name sent
/// several times (a shadow set by a page of another port) never signs the person out.
final class WebUserTests: XCTestCase {
  let host = "127.0.0.1:8426"
  let origin = "http://127.0.0.1:8426"
  let me: UInt32 = 1000
  let stranger: UInt32 = 1001
  var api: RecordingAPI!
  var door: WebFrontDoor!

  override func setUpWithError() throws {
    api = RecordingAPI()
    door = WebFrontDoor(
      origins: WebOrigins(port: 8426, addresses: [.ipv4]), sessions: try WebSessions(port: 8426), api: api,
      logger: .disabled, serverUser: me)
  }

  func request(
    _ method: String, _ path: String, user: UInt32?, cookies: [String] = [], query: [HTTPField] = [],
    version: String = "HTTP/1.1"
  ) -> HTTPRequest {
    var headers = [HTTPField("Host", host)]
    if method != "GET" && method != "HEAD" { headers.append(HTTPField("Origin", origin)) }
    var request = HTTPRequest(
      method: method, path: path, query: query, headers: headers,
      cookies: cookies.map { HTTPField("memo_peer_session_8426", $0) }, user: user)
    request.version = version
    return request
  }

  func signIn(as user: UInt32? = nil) throws -> String {
    let response = door.respond(
      to: request("GET", "/login", user: user ?? me, query: [HTTPField("token", door.sessions.token)]))
    XCTAssertEqual(response.status, 303)
    let cookie = try XCTUnwrap(response.header("Set-Cookie"))
    return String(cookie.dropFirst("memo_peer_session_8426=".count).prefix { $0 != ";" })
  }

  func code(_ response: HTTPResponse) -> String? {
    ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]).flatMap {
      ($0["error"] as? [String: Any])?["code"] as? String
    }
  }

  // MARK: - The rule

  func testTheRuleAllowsTheServersUserAndTheSessionsUserOnly() {
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1000, serverUser: 1000, sessionUser: nil), .allowed)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1000, serverUser: 1000, sessionUser: 1000), .allowed)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1000, serverUser: 1000, sessionUser: 1001), .allowed)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1001, serverUser: 1000, sessionUser: 1001), .allowed)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1001, serverUser: 1000, sessionUser: nil), .otherUser)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 1001, serverUser: 1000, sessionUser: 1000), .otherUser)
    XCTAssertEqual(WebUserRule.verdict(requestUser: 0, serverUser: 1000, sessionUser: 1000), .otherUser, "root too")
    XCTAssertEqual(WebUserRule.verdict(requestUser: nil, serverUser: 1000, sessionUser: 1000), .unknownUser)
  }

  // MARK: - The front door

  func testASessionCookieFromAnotherUserReadsNothingWritesNothingAndEndsTheSession() throws {
    let session = try signIn()
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", user: me, cookies: [session])).status, 200)
    let calls = api.count

    let stolen = door.respond(to: request("GET", "/api/memos", user: stranger, cookies: [session]))
    XCTAssertEqual(stolen.status, 403)
    XCTAssertEqual(code(stolen), "forbidden-user")
    XCTAssertEqual(stolen.header("Connection"), "close")
    XCTAssertNotNil(stolen.header("Content-Security-Policy"))
    XCTAssertFalse(String(decoding: stolen.body, as: UTF8.self).contains(session), "the cookie is not repeated")
    let write = door.respond(to: request("POST", "/api/memos", user: stranger, cookies: [session]))
    XCTAssertEqual(write.status, 403)
    XCTAssertEqual(api.count, calls, "nothing reached the API")
    XCTAssertEqual(door.sessions.count, 0, "the stolen cookie's session is ended")
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", user: me, cookies: [session])).status, 401,
      "burned for the person too: they sign in again")
  }

  func testAConnectionWhoseUserIsUnknownIsRefusedAndEndsTheSession() throws {
    let session = try signIn()
    let response = door.respond(to: request("GET", "/api/status", user: nil, cookies: [session]))
    XCTAssertEqual(response.status, 403)
    XCTAssertEqual(code(response), "forbidden-user")
    XCTAssertEqual(door.sessions.count, 0)
  }

  func testAnotherUserCannotSignInNorSpendTheToken() throws {
    let token = door.sessions.token
    let response = door.respond(to: request("GET", "/login", user: stranger, query: [HTTPField("token", token)]))
    XCTAssertEqual(response.status, 403)
    XCTAssertNil(response.header("Set-Cookie"))
    XCTAssertEqual(door.sessions.token, token, "the token is not spent")
    XCTAssertEqual(door.respond(to: request("GET", "/", user: stranger)).status, 403, "nor the page")
    _ = try signIn()
  }

  func testTheSessionsOwnUserMayUseIt() throws {
    // A session signed in by a user other than the server's (recorded at sign-in) is
    // usable by that user: the rule is per session. (Sign-in itself takes the server's
    // user; this session is made directly.)
    let sessions = door.sessions
    let exchanged = try XCTUnwrap(sessions.exchange(sessions.token, user: stranger))
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", user: stranger, cookies: [exchanged.session])).status, 200)
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", user: 1002, cookies: [exchanged.session])).status, 403)
    XCTAssertEqual(sessions.count, 0)
  }

  // MARK: - A cookie name sent twice

  func testAShadowingCookieNeverSignsThePersonOut() throws {
    let session = try signIn()
    // A page of another port set the same name for Path=/api: the browser sends it first.
    let shadowed = request("GET", "/api/memos", user: me, cookies: ["shadow", session])
    XCTAssertEqual(door.respond(to: shadowed).status, 200)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", user: me, cookies: [session, "shadow"])).status, 200)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", user: me, cookies: ["a", "b"])).status, 401)
    // A fresh sign-in with the shadow still there: signed in (the old behaviour refused
    // every request whose cookie name came twice, until the browser restarted).
    let fresh = door.respond(
      to: request("GET", "/login", user: me, cookies: ["shadow"], query: [HTTPField("token", door.sessions.token)]))
    XCTAssertEqual(fresh.status, 303)
    let value = try XCTUnwrap(fresh.header("Set-Cookie")).dropFirst("memo_peer_session_8426=".count).prefix {
      $0 != ";"
    }
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", user: me, cookies: ["shadow", String(value)])).status, 200)
  }

  func testOnlyTheLastValuesAreTriedAndTheSessionsOwnComesLast() throws {
    let session = try signIn()
    let shadows = (0..<100).map { "shadow\($0)" }
    // Longer paths first (RFC 6265): any number of shadows before the session's own cookie.
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", user: me, cookies: shadows + [session])).status, 200)
    let pushedOut = request("GET", "/api/memos", user: me, cookies: [session] + shadows)
    XCTAssertEqual(pushedOut.cookieValues("memo_peer_session_8426").count, HTTPRequest.maxCookieValues)
    XCTAssertEqual(door.respond(to: pushedOut).status, 401, "bounded: a value before the last 16 is not tried")
  }

  func testCookieValuesKeepOrderAndTheName() {
    let request = HTTPRequest(
      method: "GET", path: "/",
      cookies: [
        HTTPField("memo_peer_session_8426", "a"), HTTPField("other", "x"), HTTPField("memo_peer_session_8426", "b"),
      ]
    )
    XCTAssertEqual(request.cookieValues("memo_peer_session_8426"), ["a", "b"])
    XCTAssertEqual(request.cookieValues("memo_peer_session_8427"), [])
  }

  func testALiveSessionIsPreferredToASuspendedOne() throws {
    let sessions = door.sessions
    let first = try XCTUnwrap(sessions.exchange(sessions.token, user: me)).session
    sessions.suspendAll()
    let second = try XCTUnwrap(sessions.exchange(sessions.token, user: me)).session
    XCTAssertEqual(sessions.find([first, second])?.standing, .active)
    XCTAssertEqual(sessions.find([first, second])?.value, second)
    XCTAssertEqual(sessions.find([first, "x"])?.standing, .suspended)
    XCTAssertNil(sessions.find(["x", "y"]))
  }

  func testSignOutEndsEverySessionItNames() throws {
    let first = try signIn()
    let second = try signIn()
    XCTAssertEqual(door.sessions.count, 2)
    XCTAssertEqual(door.respond(to: request("DELETE", "/api/session", user: me, cookies: [first, second])).status, 200)
    XCTAssertEqual(door.sessions.count, 0)
  }

  // MARK: - HTTP versions

  func testOnlyHTTP10And11AreServed() throws {
    let session = try signIn()
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", user: me, cookies: [session])).status, 200)
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", user: me, cookies: [session], version: "HTTP/1.0")).status, 200)
    for version in ["HTTP/1.2", "HTTP/1.9", "HTTP/2.0", "http/1.1", ""] {
      let response = door.respond(to: request("GET", "/api/memos", user: me, cookies: [session], version: version))
      XCTAssertEqual(response.status, 505, version)
      XCTAssertEqual(code(response), "http-version-not-supported", version)
      XCTAssertEqual(response.header("Connection"), "close", version)
      XCTAssertNotNil(response.header("X-Frame-Options"), version)
    }
  }
}
