import MemoCore
import MemoCrypto
import Synchronization
import XCTest

@testable import MemoWeb

/// A clock the test moves by hand.
final class FakeClock: Sendable {
  private let now = Mutex(1000.0)
  func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
  var read: @Sendable () -> Double { { [self] in now.withLock { $0 } } }
}

/// Answers unlock with 200 for the passphrase "right", 403 otherwise; lock with 200; every
/// other call with 200.
final class LockingAPI: WebAPI {
  func perform(_ call: APICall) -> HTTPResponse {
    switch call {
    case .unlock(let passphrase):
      return passphrase.constantTimeEquals(SecureBytes(copying: Array("right".utf8)))
        ? .json(200, encoding: ["schema": 1]) : .error(MemoPeerError(.passphrase, "wrong passphrase"))
    default:
      return .json(200, encoding: ["schema": 1])
    }
  }
}

/// Sessions that end: after their idle lifetime (polling is not use), after their absolute
/// lifetime, and — suspended — at a lock; and the request parsing that leaves no second
/// reading of a request.
final class WebSessionLifetimeTests: XCTestCase {
  let host = "127.0.0.1:8426"
  let origin = "http://127.0.0.1:8426"
  let clock = FakeClock()
  var door: WebFrontDoor!

  override func setUpWithError() throws {
    door = WebFrontDoor(
      origins: WebOrigins(port: 8426, addresses: [.ipv4]),
      sessions: try WebSessions(port: 8426, idleSeconds: 600, clock: clock.read), api: LockingAPI(), logger: .disabled,
      serverUser: 1000)
  }

  func request(
    _ method: String, _ path: String, session: String? = nil, headers: [HTTPField] = [], body: [UInt8] = [],
    type: String = "application/json", query: [HTTPField] = []
  ) -> HTTPRequest {
    var fields = [HTTPField("Host", host)] + headers
    if method != "GET" && method != "HEAD" { fields.append(HTTPField("Origin", origin)) }
    if !body.isEmpty { fields += [HTTPField("Content-Type", type), HTTPField("Content-Length", "\(body.count)")] }
    return HTTPRequest(
      method: method, path: path, query: query, headers: fields,
      cookies: session.map { [HTTPField("memo_peer_session_8426", $0)] } ?? [], body: body, user: 1000)
  }

  func signIn() throws -> String {
    let response = door.respond(to: request("GET", "/login", query: [HTTPField("token", door.sessions.token)]))
    XCTAssertEqual(response.status, 303)
    return try cookieValue(response)
  }

  func cookieValue(_ response: HTTPResponse) throws -> String {
    let cookie = try XCTUnwrap(response.header("Set-Cookie"))
    return String(cookie.dropFirst("memo_peer_session_8426=".count).prefix { $0 != ";" })
  }

  func code(_ response: HTTPResponse) -> String? {
    ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]).flatMap {
      ($0["error"] as? [String: Any])?["code"] as? String
    }
  }

  func testASessionEndsAfterItsIdleLifetimeAndPollingIsNotUse() throws {
    let session = try signIn()
    clock.advance(500)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200, "use")
    for _ in 0..<9 {
      clock.advance(60)
      XCTAssertEqual(door.respond(to: request("GET", "/api/status", session: session)).status, 200, "polling")
    }
    clock.advance(100)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 401, "idle too long")
    XCTAssertEqual(door.sessions.count, 0, "forgotten")
  }

  func testASessionEndsAfterItsAbsoluteLifetimeHoweverUsed() throws {
    let session = try signIn()
    var elapsed = 0.0
    while elapsed < WebSessions.absoluteSeconds - 300 {
      clock.advance(300)
      elapsed += 300
      XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200)
    }
    clock.advance(600)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 401)
  }

  func testALockSuspendsEverySessionAndAnUnlockGivesANewCookie() throws {
    let session = try signIn()
    let other = try signIn()
    XCTAssertEqual(door.respond(to: request("POST", "/api/lock", session: session)).status, 200)
    for cookie in [session, other] {
      let response = door.respond(to: request("GET", "/api/memos", session: cookie))
      XCTAssertEqual(response.status, 401, "a copy of the cookie is worth nothing after the lock")
      XCTAssertEqual(code(response), "session-locked")
    }
    // The page itself still loads (no memo data), so it can ask for the passphrase.
    XCTAssertEqual(door.respond(to: request("GET", "/app.js", session: session)).status, 200)
    XCTAssertEqual(door.respond(to: request("GET", "/api/status", session: session)).status, 401)
    let wrong = door.respond(
      to: request("POST", "/api/unlock", session: session, body: Array("wrong".utf8), type: "application/octet-stream"))
    XCTAssertEqual(wrong.status, 403)
    XCTAssertNil(wrong.header("Set-Cookie"))
    let right = door.respond(
      to: request("POST", "/api/unlock", session: session, body: Array("right".utf8), type: "application/octet-stream"))
    XCTAssertEqual(right.status, 200)
    let fresh = try cookieValue(right)
    XCTAssertNotEqual(fresh, session)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: fresh)).status, 200)
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", session: session)).status, 401, "the old value is dead")
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", session: other)).status, 401, "the other stays suspended")
  }

  /// Whether the fake node is locked, set by the test.
  final class LockFlag: Sendable {
    private let state: Mutex<Bool>
    init(_ value: Bool) { state = Mutex(value) }
    var isOn: Bool { state.withLock { $0 } }
    func set(_ value: Bool) { state.withLock { $0 = value } }
  }

  /// A front door whose node is locked while the returned flag is on.
  func lockableDoor(lockedAtStart: Bool) throws -> LockFlag {
    let locked = LockFlag(lockedAtStart)
    door = WebFrontDoor(
      origins: WebOrigins(port: 8426, addresses: [.ipv4]),
      sessions: try WebSessions(port: 8426, idleSeconds: 600, clock: clock.read), api: LockingAPI(), logger: .disabled,
      serverUser: 1000, isLocked: { locked.isOn })
    return locked
  }

  /// A lock made elsewhere holds from the next request on, before any watch has seen it; the
  /// page's unlock right after it renews the session as after the page's own Lock.
  func testALockElsewhereHoldsAtTheNextRequestAndThePagesUnlockRenews() throws {
    let locked = try lockableDoor(lockedAtStart: false)
    let session = try signIn()
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200)
    locked.set(true)
    let refused = door.respond(to: request("GET", "/api/memos", session: session))
    XCTAssertEqual(refused.status, 401)
    XCTAssertEqual(code(refused), "session-locked")
    clock.advance(1)
    let unlocked = door.respond(
      to: request("POST", "/api/unlock", session: session, body: Array("right".utf8), type: "application/octet-stream"))
    XCTAssertEqual(unlocked.status, 200)
    let renewed = try cookieValue(unlocked)
    XCTAssertNotEqual(renewed, session)
    locked.set(false)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: renewed)).status, 200)
    XCTAssertEqual(
      door.respond(to: request("GET", "/api/memos", session: session)).status, 401, "the old value is dead")
  }

  /// A node locked since before the sign-in: the session stays (the page shows the list
  /// locked) until an unlock and a lock; a stale look never undoes a newer one.
  func testASessionSignedInWhileLockedLivesUntilTheNextLock() throws {
    let locked = try lockableDoor(lockedAtStart: true)
    let session = try signIn()
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200)
    clock.advance(1)
    locked.set(false)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 200)
    clock.advance(1)
    door.sessions.observeLock(true, askedAt: 0)
    XCTAssertEqual(door.sessions.standing(session), .active, "a look older than the newest is ignored")
    locked.set(true)
    XCTAssertEqual(door.respond(to: request("GET", "/api/memos", session: session)).status, 401)
  }

  func testWrongPassphrasesEndASuspendedSession() throws {
    let session = try signIn()
    door.sessions.suspendAll()
    for _ in 0..<WebSessions.maxUnlockAttempts {
      _ = door.respond(
        to: request(
          "POST", "/api/unlock", session: session, body: Array("wrong".utf8), type: "application/octet-stream"))
    }
    let late = door.respond(
      to: request("POST", "/api/unlock", session: session, body: Array("right".utf8), type: "application/octet-stream"))
    XCTAssertEqual(late.status, 401)
    XCTAssertEqual(code(late), "unauthorized")
  }

  func testHeadDoesNotSpendTheToken() throws {
    let token = door.sessions.token
    let head = door.respond(to: request("HEAD", "/login", query: [HTTPField("token", token)]))
    XCTAssertEqual(head.status, 405)
    XCTAssertEqual(head.header("Allow"), "GET")
    XCTAssertNil(head.header("Set-Cookie"))
    XCTAssertEqual(door.sessions.token, token, "the token still works")
    _ = try signIn()
  }

  func testRequestsThatCouldBeReadTwoWaysAreRefusedAndCloseTheConnection() throws {
    let session = try signIn()
    let body = Array(#"{"text":"milk"}"#.utf8)
    var twice = request("POST", "/api/search", session: session, body: body)
    twice.headers.append(HTTPField("Content-Length", "2"))
    var chunked = request("POST", "/api/search", session: session, body: body)
    chunked.headers.append(HTTPField("Transfer-Encoding", "chunked"))
    var nul = request("GET", "/api/memos", session: session)
    nul.malformed = true
    let noHost = HTTPRequest(
      method: "GET", path: "/", cookies: [HTTPField("memo_peer_session_8426", session)], user: 1000)
    for (name, refused, status) in [
      ("two lengths", twice, 400), ("length and chunks", chunked, 400),
      ("a NUL in the path", nul, 400), ("no Host", noHost, 403),
    ] {
      let response = door.respond(to: refused)
      XCTAssertEqual(response.status, status, name)
      XCTAssertEqual(response.header("Connection"), "close", name)
      for field in ResponsePolicy.headers { XCTAssertEqual(response.header(field.name), field.value, name) }
    }
  }

  func testPathsAreDecodedStrictly() {
    XCTAssertEqual(HTTPRequest.percentDecoded("/api/memos"), "/api/memos")
    XCTAssertEqual(HTTPRequest.percentDecoded("/api/memos/%61bc"), "/api/memos/abc")
    for raw in ["/api/memos%00x", "/api/memos%0a", "/a%2", "/a%zz", "/a b", "/a%ff", "/%7f"] {
      XCTAssertNil(HTTPRequest.percentDecoded(raw), raw)
    }
  }

  func testDuplicateJSONKeysAreRefused() throws {
    func decode(_ text: String) throws -> APICall {
      try APICall.decode(.createMemo, body: Array(text.utf8), contentType: "application/json")
    }
    XCTAssertNoThrow(try decode(#"{"body": "a", "tags": ["x", "x"], "title": "t"}"#))
    for text in [
      #"{"body": "a", "body": "b"}"#, #"{"body": "a", "b\u006fdy": "b"}"#,
      #"{"body": "a", "tags": [{"k": 1, "k": 2}]}"#,
    ] {
      XCTAssertThrowsError(try decode(text), text) { error in
        XCTAssertEqual((error as? MemoPeerError)?.code, .invalidInput)
        XCTAssertTrue((error as? MemoPeerError)?.message.contains("twice") ?? false, text)
      }
    }
    XCTAssertThrowsError(try decode(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)))
  }
}
