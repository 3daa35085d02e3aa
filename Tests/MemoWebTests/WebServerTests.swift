import Foundation
import MemoCore
import Synchronization
import XCTest

@testable import MemoWeb

#if canImport(Glibc)
  import Glibc
#endif

/// The libmicrohttpd server on loopback with a recording API: real sockets, real HTTP.
final class WebServerTests: XCTestCase {
  /// Sends `request` (raw bytes) to 127.0.0.1:port and returns the whole answer.
  func exchange(_ request: [UInt8], port: UInt16) throws -> String { try Self.exchange(request, port: port) }

  static func exchange(_ request: [UInt8], port: UInt16) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw WebTestFailure("socket: \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { throw WebTestFailure("connect: \(errno)") }
    var sent = 0
    while sent < request.count {
      let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      guard count > 0 else { break }
      sent += count
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 { break }
      answer += buffer[0..<count]
    }
    return String(decoding: answer, as: UTF8.self)
  }

  func http(_ head: String, body: String = "") -> [UInt8] { Array((head + "\r\n\r\n" + body).utf8) }

  func testServesOnLoopbackBehindTheFrontDoor() throws {
    let api = RecordingAPI()
    let signedIn = Recorded()
    let server = try WebServer(
      addresses: [.ipv4], port: 0, api: api, logger: .disabled, onSignIn: { url in signedIn.append(url) })
    defer { server.stop() }
    let port = server.origins.port
    XCTAssertGreaterThan(port, 0)
    let host = "Host: 127.0.0.1:\(port)"

    let refused = try exchange(http("GET /api/memos HTTP/1.1\r\n\(host)\r\nConnection: close"), port: port)
    XCTAssertTrue(refused.hasPrefix("HTTP/1.1 401"), refused)
    XCTAssertTrue(refused.contains("Content-Security-Policy: default-src 'self'"), refused)
    let wrongHost = try exchange(http("GET /api/memos HTTP/1.1\r\nHost: evil.example\r\nConnection: close"), port: port)
    XCTAssertTrue(wrongHost.hasPrefix("HTTP/1.1 403"), wrongHost)

    let token = server.sessions.token
    let login = try exchange(http("GET /login?token=\(token) HTTP/1.1\r\n\(host)\r\nConnection: close"), port: port)
    XCTAssertTrue(login.hasPrefix("HTTP/1.1 303"), login)
    XCTAssertEqual(signedIn.all, [server.signInURL])
    let cookie = try XCTUnwrap(
      login.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }?.dropFirst("Set-Cookie: ".count)
        .split(separator: ";").first)
    let memos = try exchange(
      http("GET /api/memos HTTP/1.1\r\n\(host)\r\nCookie: \(cookie)\r\nConnection: close"), port: port)
    XCTAssertTrue(memos.hasPrefix("HTTP/1.1 200"), memos)

    let body = #"{"body":"milk"}"#
    let post = try exchange(
      http(
        "POST /api/memos HTTP/1.1\r\n\(host)\r\nCookie: \(cookie)\r\nOrigin: http://127.0.0.1:\(port)\r\n"
          + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close", body: body),
      port: port)
    XCTAssertTrue(post.hasPrefix("HTTP/1.1 200"), post)
    XCTAssertEqual(api.count, 2)

    // A body that grows past the limit in chunks is refused (its length is unknown: 411).
    let chunked = try exchange(
      http(
        "POST /api/memos HTTP/1.1\r\n\(host)\r\nCookie: \(cookie)\r\nOrigin: http://127.0.0.1:\(port)\r\n"
          + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close",
        body: "5\r\nhello\r\n0\r\n\r\n"), port: port)
    XCTAssertTrue(chunked.hasPrefix("HTTP/1.1 411"), chunked)
    // Headers beyond the per-connection memory are refused by libmicrohttpd itself.
    let huge = try exchange(
      http("GET /api/memos HTTP/1.1\r\n\(host)\r\nX-Filler: \(String(repeating: "a", count: 100_000))"), port: port)
    XCTAssertTrue(huge.hasPrefix("HTTP/1.1 4"), String(huge.prefix(40)))
    XCTAssertEqual(api.count, 2)
    server.stop()
    XCTAssertThrowsError(try exchange(http("GET / HTTP/1.1\r\n\(host)"), port: port), "stopped: the port is closed")
  }

  /// A status call that waits (`?wait=MARK`) is held without a thread until the mark
  /// moves, its longest wait passes or the server stops; one with another mark, or without
  /// a session, is answered at once.
  func testAWaitingStatusCallIsAnsweredWhenTheMarkMoves() throws {
    let api = MarkedAPI()
    let server = try WebServer(addresses: [.ipv4], port: 0, api: api, logger: .disabled, longestWait: 2)
    defer { server.stop() }
    let port = server.origins.port
    let host = "Host: 127.0.0.1:\(port)"
    let login = try exchange(
      http("GET /login?token=\(server.sessions.token) HTTP/1.1\r\n\(host)\r\nConnection: close"), port: port)
    let cookie = try XCTUnwrap(
      login.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }?.dropFirst("Set-Cookie: ".count)
        .split(separator: ";").first)
    func status(wait: String, cookie: Substring?) -> [UInt8] {
      let sent = cookie.map { "Cookie: \($0)\r\n" } ?? ""
      return http("GET /api/status?wait=\(wait) HTTP/1.1\r\n\(host)\r\n\(sent)Connection: close")
    }

    XCTAssertTrue(try exchange(status(wait: "1", cookie: nil), port: port).hasPrefix("HTTP/1.1 401"), "no session")
    XCTAssertEqual(server.waiting, 0)
    XCTAssertTrue(try exchange(status(wait: "0", cookie: cookie), port: port).hasPrefix("HTTP/1.1 200"), "moved")
    let longMark = String(repeating: "1", count: 129)
    api.mark.withLock { $0 = longMark }
    XCTAssertTrue(
      try exchange(status(wait: longMark, cookie: cookie), port: port).hasPrefix("HTTP/1.1 200"), "too long")
    api.mark.withLock { $0 = "1" }
    XCTAssertEqual(server.waiting, 0)

    // The current mark: held until it moves. Two waiting calls hold no thread: a third
    // request is answered meanwhile (the daemon has two threads).
    let answers = Recorded()
    let calls = DispatchGroup()
    for _ in 0..<2 {
      calls.enter()
      let request = status(wait: "1", cookie: cookie)
      Thread.detachNewThread {
        answers.append((try? Self.exchange(request, port: port)) ?? "failed")
        calls.leave()
      }
    }
    let deadline = Date().addingTimeInterval(5)
    while server.waiting < 2 && Date() < deadline { sched_yield() }
    XCTAssertEqual(server.waiting, 2)
    XCTAssertTrue(
      try exchange(http("GET /api/memos HTTP/1.1\r\n\(host)\r\nCookie: \(cookie)\r\nConnection: close"), port: port)
        .hasPrefix("HTTP/1.1 200"))
    server.wakeWaiters(mark: { "1" })
    XCTAssertEqual(server.waiting, 2, "the same mark: still waiting")
    XCTAssertEqual(answers.all, [])
    api.mark.withLock { $0 = "2" }
    server.wakeWaiters(mark: { api.changeMark() })
    XCTAssertEqual(calls.wait(timeout: .now() + 5), .success)
    XCTAssertEqual(answers.all.count, 2)
    XCTAssertTrue(answers.all.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(answers.all)")
    XCTAssertTrue(answers.all.allSatisfy { $0.contains("Content-Security-Policy:") })
    XCTAssertEqual(server.waiting, 0)

    // Nothing changes: answered after the longest wait (2 s here), by the server's watchdog.
    let started = Date()
    XCTAssertTrue(try exchange(status(wait: "2", cookie: cookie), port: port).hasPrefix("HTTP/1.1 200"))
    XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 1.9)

    // A call waiting when the server stops is let go, and the server stops.
    calls.enter()
    let last = status(wait: "2", cookie: cookie)
    Thread.detachNewThread {
      answers.append((try? Self.exchange(last, port: port)) ?? "failed")
      calls.leave()
    }
    while server.waiting < 1 && Date() < started.addingTimeInterval(10) { sched_yield() }
    XCTAssertEqual(server.waiting, 1)
    server.stop()
    XCTAssertEqual(calls.wait(timeout: .now() + 5), .success, "the stop did not wait for the call")
  }

  func testAPortInUseIsAClearError() throws {
    let first = try WebServer(addresses: [.ipv4], port: 0, api: RecordingAPI(), logger: .disabled)
    defer { first.stop() }
    XCTAssertThrowsError(
      try WebServer(addresses: [.ipv4], port: first.origins.port, api: RecordingAPI(), logger: .disabled)
    ) { error in
      XCTAssertEqual(
        (error as? MemoPeerError)?.message, "port \(first.origins.port) on 127.0.0.1 is in use by another program")
    }
  }

  func testBothAddressesShareOnePort() throws {
    let server = try WebServer(addresses: [.ipv4, .ipv6], port: 0, api: RecordingAPI(), logger: .disabled)
    defer { server.stop() }
    // ::1 exists on the build machines; without it the server says so and uses 127.0.0.1.
    if server.origins.addresses.count == 2 {
      XCTAssertEqual(
        server.baseURLs, ["http://127.0.0.1:\(server.origins.port)", "http://[::1]:\(server.origins.port)"])
    } else {
      XCTAssertEqual(server.notes.count, 1)
    }
  }
}

struct WebTestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// An API whose change mark the test moves.
final class MarkedAPI: WebAPI {
  let mark = Mutex("1")

  func perform(_ call: APICall) -> HTTPResponse { .json(200, encoding: ["changes": mark.withLock { $0 }]) }

  func changeMark() -> String? { mark.withLock { $0 } }
}
