import MemoCore
import MemoPresentation
import MemoSystem

/// Every request goes through here, in this order: it is HTTP/1.0 or 1.1, it comes from the
/// server's own Unix user or the session's (`WebUserRule`: a session cookie on another
/// user's connection ends that session), its path and query decode strictly, the
/// `Host` names this server, the method is one the server takes, a state-changing request
/// comes from this server's own page (`Origin`, `Sec-Fetch-Site`), its length is told once
/// and is not too large, and the browser is signed in (the one-time token's session
/// cookie, live; a session suspended by a lock opens only the page's files and the unlock
/// call). Only then does a request reach the assets or the API. Every response, refusals
/// included, leaves with `ResponsePolicy`'s headers; a refusal also closes the connection.
///
/// Pure apart from the sessions it holds: unit-tested without a socket.
public final class WebFrontDoor: Sendable {
  public let origins: WebOrigins
  public let sessions: WebSessions
  let api: any WebAPI
  let logger: Logger
  /// Called with the next sign-in token after a browser signed in.
  let onSignIn: @Sendable (String) -> Void
  /// Whether the node is locked now: asked before every request that needs a session, so a
  /// lock made elsewhere holds at once, not only when the server's lock watch sees it.
  let isLocked: @Sendable () -> Bool
  /// The Unix user who runs the server: the one whose requests it answers.
  let serverUser: UInt32

  static let methods = ["GET", "HEAD", "POST", "PATCH", "DELETE"]

  public init(
    origins: WebOrigins, sessions: WebSessions, api: any WebAPI, logger: Logger, serverUser: UInt32,
    onSignIn: @escaping @Sendable (String) -> Void = { _ in }, isLocked: @escaping @Sendable () -> Bool = { false }
  ) {
    self.isLocked = isLocked
    self.serverUser = serverUser
    self.origins = origins
    self.sessions = sessions
    self.api = api
    self.logger = logger
    self.onSignIn = onSignIn
  }

  /// Checks a request whose head has arrived, before any of its body is read: a refusal
  /// (with the policy's headers), or nil to go on reading.
  public func screen(_ head: HTTPRequest, contentLength: UInt64?) -> HTTPResponse? {
    if let refusal = refusal(head, contentLength: contentLength) {
      // The method only when it is one of ours: bytes from outside never reach a log raw.
      let method = Self.methods.contains(head.method) ? head.method : "another method"
      logger.debug("refused \(method, privacy: .public): \(refusal.status, privacy: .public)")
      var closing = refusal
      // Nothing more is read from a connection whose request was refused (its body, were
      // there one, could be read as a request of its own).
      closing.headers.append(HTTPField("Connection", "close"))
      return ResponsePolicy.apply(closing)
    }
    return nil
  }

  /// The answer to a complete request (checked again: nothing reaches the API unchecked).
  public func respond(to request: HTTPRequest) -> HTTPResponse {
    if let refusal = screen(request, contentLength: UInt64(request.body.count)) { return refusal }
    let response = dispatch(request)
    return ResponsePolicy.apply(response)
  }

  /// The longest mark a waiting status call may carry: the node's are a few numbers.
  static let longestWaitMark = 128

  /// The mark a status call waits on (`GET /api/status?wait=MARK`, docs/WEB.md): the one the
  /// page sent, when the request passes every check `respond` makes (a live session among
  /// them) and the node's mark is still that one. Nil: the call is answered at once (the
  /// mark moved, the node has none to tell, or it is not a waiting call).
  public func waitMark(for request: HTTPRequest) -> String? {
    guard request.method == "GET", request.path == "/api/status", let seen = request.queryValue("wait"),
      seen.utf8.count <= Self.longestWaitMark, refusal(request, contentLength: UInt64(request.body.count)) == nil,
      let current = api.changeMark(), current == seen
    else { return nil }
    return seen
  }

  // MARK: - Checks

  /// The versions the server speaks. libmicrohttpd 0.9.75 passes on any `HTTP/1.x` (as
  /// 1.1) and answers other versions itself (505).
  static let versions = ["HTTP/1.0", "HTTP/1.1"]

  private func refusal(_ request: HTTPRequest, contentLength: UInt64?) -> HTTPResponse? {
    guard Self.versions.contains(request.version) else {
      return .error(505, code: "http-version-not-supported", "this server speaks HTTP versions 1.0 and 1.1 only")
    }
    if let refusal = userRefusal(request) { return refusal }
    guard !request.malformed else {
      return .error(400, code: "invalid-input", "the request's path or query is not valid (a bad or NUL escape)")
    }
    let api = request.path.hasPrefix("/api/")
    guard let host = request.singleHeader("Host"), origins.accepts(host: host) else {
      return .error(
        403, code: "forbidden-host", "this server answers only to \(origins.hosts.joined(separator: ", "))",
        hint: "open the address memo-peer web printed")
    }
    guard Self.methods.contains(request.method) else {
      return HTTPResponse.error(405, code: "method-not-allowed", "the server does not take this method")
    }
    if request.changesState {
      guard origins.accepts(origin: request.singleHeader("Origin"), host: host) else {
        return .error(
          403, code: "forbidden-origin",
          "a request that changes something must come from memo-peer's own page (Origin http://\(host.lowercased()))")
      }
      if let site = request.singleHeader("Sec-Fetch-Site"), site != "same-origin" {
        return .error(403, code: "forbidden-origin", "a request that changes something must come from the same origin")
      }
    }
    let lengths = request.headerValues("Content-Length")
    guard lengths.count <= 1, lengths.isEmpty || request.headerValues("Transfer-Encoding").isEmpty else {
      // Two lengths (or a length and chunks) can be read two ways, by two parsers.
      return .error(400, code: "invalid-input", "the request tells its body's length more than once")
    }
    if lengths.isEmpty && !request.headerValues("Transfer-Encoding").isEmpty {
      // A body of unknown length could only be refused halfway through; the page always
      // sends a length.
      return .error(411, code: "length-required", "a request body needs a Content-Length")
    }
    if let contentLength, contentLength > UInt64(APICall.maxBodyBytes) {
      return .error(
        413, code: MemoPeerError.Code.tooLarge.rawValue,
        "the request body is larger than the limit of \(APICall.maxBodyBytes) bytes")
    }
    if isPublic(request) { return nil }
    sessions.observeLock(isLocked)
    let standing = sessions.find(request.cookieValues(sessions.cookieName)).map {
      sessions.standing($0.value, use: Self.countsAsUse(request))
    }
    switch standing ?? .none {
    case .active:
      return nil
    case .suspended where Self.isUnlock(request) || (!api && WebAssets.asset(at: request.path) != nil):
      // The page and the unlock call: enough to ask for the passphrase, nothing of the memos.
      return nil
    case .suspended:
      return .error(
        401, code: "session-locked", "the node was locked, and this page's session with it",
        hint: "enter the passphrase on the page to unlock it, or sign in again with the link `memo-peer web` printed")
    case .none:
      guard api else { return WebAssets.signInNotice }
      return .error(
        401, code: "unauthorized", "this browser is not signed in",
        hint: "open the one-time link `memo-peer web` printed, or run `memo-peer web --open`")
    }
  }

  /// A request from another Unix user than the server's (or the session's) is refused; when
  /// it carries a session's cookie, that cookie was taken from the person (out of the
  /// browser's profile, or sent by their browser to a page of another port) and its session
  /// ends, so it is worth nothing to anyone from now on. Logged without the cookie.
  private func userRefusal(_ request: HTTPRequest) -> HTTPResponse? {
    let values = request.cookieValues(sessions.cookieName)
    let found = sessions.find(values)
    let verdict = WebUserRule.verdict(requestUser: request.user, serverUser: serverUser, sessionUser: found?.user)
    guard verdict != .allowed else { return nil }
    let who = request.user.map { "user \($0)" } ?? "a user the kernel could not tell"
    if found != nil {
      sessions.endAll(values)
      logger.info(
        "a request from another local user (\(who, privacy: .public)) carried this page's session cookie: refused, and the session is ended"
      )
      return .error(
        403, code: "forbidden-user",
        "this page's session belongs to another user of this computer; it has been ended",
        hint: "the person who signed in must sign in again with a new link from `memo-peer web`")
    }
    logger.debug("refused a request from another local user (\(who, privacy: .public))")
    return .error(
      403, code: "forbidden-user", "this page answers only the user of this computer who runs memo-peer web",
      hint: "run memo-peer web as yourself, for your own memos")
  }

  /// The page's own polling (status, sync progress) is not use: a tab left open does not keep
  /// a session alive.
  static func countsAsUse(_ request: HTTPRequest) -> Bool {
    let reading = request.method == "GET" || request.method == "HEAD"
    return !(reading && (request.path == "/api/status" || request.path == "/api/sync"))
  }

  static func isUnlock(_ request: HTTPRequest) -> Bool { request.method == "POST" && request.path == "/api/unlock" }

  /// The sign-in route and the style sheet (the sign-in pages use it) need no session.
  private func isPublic(_ request: HTTPRequest) -> Bool {
    (request.method == "GET" || request.method == "HEAD")
      && (request.path == "/login" || WebAssets.publicPaths.contains(request.path))
  }

  // MARK: - Dispatch

  private func dispatch(_ request: HTTPRequest) -> HTTPResponse {
    if request.path == "/login" {
      // GET only: the sign-in spends the token, which a HEAD (a link checker, a preview)
      // must not do.
      guard request.method == "GET" else { return methodNotAllowed(["GET"]) }
      return signIn(request)
    }
    if request.path == "/api/session" {
      guard request.method == "DELETE" else { return methodNotAllowed(["DELETE"]) }
      sessions.endAll(request.cookieValues(sessions.cookieName))
      var response = HTTPResponse.json(200, encoding: SignedOut())
      response.headers.append(HTTPField("Set-Cookie", sessions.expiredCookie))
      return response
    }
    guard request.path.hasPrefix("/api/") else {
      guard request.method == "GET" || request.method == "HEAD" else { return methodNotAllowed(["GET", "HEAD"]) }
      return WebAssets.asset(at: request.path) ?? .error(404, code: "not-found", "there is no page here")
    }
    switch APIRouter.match(method: request.method, path: request.path) {
    case .notFound:
      return .error(404, code: "not-found", "there is no such API call", hint: "docs/WEB.md lists the calls")
    case .methodNotAllowed(let allowed):
      return methodNotAllowed(allowed)
    case .route(let route):
      var response: HTTPResponse
      do {
        let call = try APICall.decode(route, body: request.body, contentType: request.singleHeader("Content-Type"))
        response = api.perform(call)
        sessionsFollow(route, request, &response)
      } catch let error as MemoPeerError {
        response = .error(error)
      } catch {
        response = .error(400, code: "invalid-input", "the request could not be read")
      }
      logger.debug("\(route.template, privacy: .public): \(response.status, privacy: .public)")
      return response
    }
  }

  /// A lock suspends every session at once (the page's own included; the lock watch of the
  /// server catches one made elsewhere). An unlock from a suspended session gives it a new
  /// cookie; a wrong passphrase counts against it.
  private func sessionsFollow(_ route: APIRoute, _ request: HTTPRequest, _ response: inout HTTPResponse) {
    switch route {
    case .lock where response.status == 200:
      sessions.suspendAll()
    case .unlock:
      guard let found = sessions.find(request.cookieValues(sessions.cookieName)), found.standing == .suspended
      else { return }
      let cookie = found.value
      if response.status == 200 {
        if let fresh = sessions.resume(cookie) {
          response.headers.append(HTTPField("Set-Cookie", sessions.cookie(for: fresh)))
        }
      } else if response.status == 403 {
        sessions.unlockFailed(cookie)
      }
    default:
      break
    }
  }

  private func signIn(_ request: HTTPRequest) -> HTTPResponse {
    if sessions.find(request.cookieValues(sessions.cookieName))?.standing == .active { return Self.redirect(to: "/") }
    guard let token = request.queryValue("token"), let exchanged = sessions.exchange(token, user: request.user) else {
      logger.info("a sign-in with a wrong or used token was refused")
      return WebAssets.usedLinkNotice
    }
    logger.info("a browser signed in")
    onSignIn(exchanged.nextToken)
    var response = Self.redirect(to: "/")
    response.headers.append(HTTPField("Set-Cookie", sessions.cookie(for: exchanged.session)))
    return response
  }

  static func redirect(to location: String) -> HTTPResponse {
    HTTPResponse(status: 303, headers: [HTTPField("Location", location)])
  }

  private func methodNotAllowed(_ allowed: [String]) -> HTTPResponse {
    var response = HTTPResponse.error(405, code: "method-not-allowed", "this path does not take this method")
    response.headers.append(HTTPField("Allow", allowed.joined(separator: ", ")))
    return response
  }

  struct SignedOut: Encodable {
    let schema = JSONOutput.schema
    let signedOut = true
    enum CodingKeys: String, CodingKey {
      case schema
      case signedOut = "signed_out"
    }
  }
}
