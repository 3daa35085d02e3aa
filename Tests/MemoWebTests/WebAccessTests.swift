import MemoCore
import MemoCrypto
import Synchronization
import XCTest

@testable import MemoWeb

/// The rules of who may use the page: loopback addresses only, the Host and Origin checks,
/// the one-time token and its sessions.
final class WebAccessTests: XCTestCase {
  func testOnlyLoopbackAddressesAreAccepted() throws {
    XCTAssertEqual(try LoopbackAddress.parse([]), [.ipv4, .ipv6])
    XCTAssertEqual(try LoopbackAddress.parse(["localhost"]), [.ipv4, .ipv6])
    XCTAssertEqual(try LoopbackAddress.parse(["::1"]), [.ipv6])
    XCTAssertEqual(try LoopbackAddress.parse(["[::1]", "127.0.0.1", "::1"]), [.ipv6, .ipv4])
    for refused in [
      "0.0.0.0", "::", "[::]", "192.168.1.20", "169.254.77.10", "fe80::1", "127.0.0.2", "example.org", "",
    ] {
      XCTAssertThrowsError(try LoopbackAddress.parse([refused]), refused) { error in
        let error = error as? MemoPeerError
        XCTAssertEqual(error?.code, .usage)
        XCTAssertTrue(error?.message.contains("listens only on this machine") ?? false)
      }
    }
    XCTAssertThrowsError(try LoopbackAddress.parse(["127.0.0.1", "0.0.0.0"]), "one bad address refuses all")
    let message = LoopbackAddress.refusal("my secret memo text").message
    XCTAssertFalse(message.contains("secret"), "text that is not an address is not repeated")
  }

  func testHostMustNameThisServerAndPort() {
    let origins = WebOrigins(port: 8426, addresses: [.ipv4, .ipv6])
    XCTAssertEqual(origins.hosts, ["127.0.0.1:8426", "[::1]:8426", "localhost:8426"])
    for host in ["127.0.0.1:8426", "[::1]:8426", "localhost:8426", "LOCALHOST:8426"] {
      XCTAssertTrue(origins.accepts(host: host), host)
    }
    for host in [
      "evil.example", "evil.example:8426", "127.0.0.1", "127.0.0.1:8427", "localhost", "127.0.0.1.nip.io:8426",
      "[::1]", "0.0.0.0:8426", "",
    ] {
      XCTAssertFalse(origins.accepts(host: host), host)
    }
    XCTAssertFalse(origins.accepts(host: nil))
    let v4Only = WebOrigins(port: 9000, addresses: [.ipv4])
    XCTAssertFalse(v4Only.accepts(host: "[::1]:9000"), "an address not listened on is not a name of this server")
    XCTAssertEqual(v4Only.signInURL(token: "abc"), "http://127.0.0.1:9000/login?token=abc")
  }

  func testOriginMustBeThisServerAsReached() {
    let origins = WebOrigins(port: 8426, addresses: [.ipv4, .ipv6])
    XCTAssertTrue(origins.accepts(origin: "http://127.0.0.1:8426", host: "127.0.0.1:8426"))
    XCTAssertTrue(origins.accepts(origin: "http://localhost:8426", host: "localhost:8426"))
    XCTAssertFalse(origins.accepts(origin: "http://localhost:8426", host: "127.0.0.1:8426"))
    XCTAssertFalse(origins.accepts(origin: "https://127.0.0.1:8426", host: "127.0.0.1:8426"))
    XCTAssertFalse(origins.accepts(origin: "http://evil.example", host: "127.0.0.1:8426"))
    XCTAssertFalse(origins.accepts(origin: "null", host: "127.0.0.1:8426"))
    XCTAssertFalse(origins.accepts(origin: nil, host: "127.0.0.1:8426"))
  }

  func testTheTokenWorksOnceAndSessionsAreKeptAsDigests() throws {
    let sessions = try WebSessions(port: 8426)
    XCTAssertEqual(sessions.cookieName, "memo_peer_session_8426")
    let token = sessions.token
    XCTAssertEqual(token.count, 43, "32 random bytes in base64url")
    XCTAssertTrue(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    XCTAssertNil(sessions.exchange("wrong"))
    XCTAssertNil(sessions.exchange(String(token.dropLast())))
    let first = try XCTUnwrap(sessions.exchange(token))
    XCTAssertNotEqual(first.nextToken, token)
    XCTAssertEqual(sessions.token, first.nextToken)
    XCTAssertNil(sessions.exchange(token), "the token works once")
    XCTAssertTrue(sessions.isSession(first.session))
    XCTAssertFalse(sessions.isSession(token))
    XCTAssertFalse(sessions.isSession(nil))
    XCTAssertFalse(sessions.isSession(""))
    let second = try XCTUnwrap(sessions.exchange(first.nextToken))
    XCTAssertTrue(sessions.isSession(second.session))
    sessions.end(first.session)
    XCTAssertFalse(sessions.isSession(first.session), "signed out")
    XCTAssertTrue(sessions.isSession(second.session))
    let cookie = sessions.cookie(for: second.session)
    XCTAssertTrue(cookie.hasPrefix("memo_peer_session_8426=\(second.session);"))
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] { XCTAssertTrue(cookie.contains(attribute), attribute) }
    XCTAssertFalse(cookie.contains("Expires") || cookie.contains("Max-Age"), "a session cookie, never on disk")
    XCTAssertTrue(sessions.expiredCookie.contains("Max-Age=0"))
  }

  func testOnlyTheNewestSessionsSurvive() throws {
    let sessions = try WebSessions(port: 1)
    var made: [String] = []
    for _ in 0..<(WebSessions.maxSessions + 3) {
      made.append(try XCTUnwrap(sessions.exchange(sessions.token)).session)
    }
    XCTAssertEqual(made.filter { sessions.isSession($0) }, Array(made.suffix(WebSessions.maxSessions)))
  }

  func testAFailingRandomGeneratorSignsNobodyIn() throws {
    struct Broken: Error {}
    let calls = Mutex(0)
    let sessions = try WebSessions(port: 1) {
      try calls.withLock { count in
        count += 1
        if count > 1 { throw Broken() }
        return Array(repeating: 7, count: 32)
      }
    }
    XCTAssertNil(sessions.exchange(sessions.token))
    XCTAssertEqual(sessions.token, WebSessions.encode(Array(repeating: 7, count: 32)), "the token stays")
  }
}
