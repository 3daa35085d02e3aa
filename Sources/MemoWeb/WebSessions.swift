import FoundationEssentials
import MemoCore
import MemoCrypto
import Synchronization

/// Who may use the page: a one-time sign-in token per start, exchanged for a session
/// cookie (HttpOnly, SameSite=Strict, this port's name).
///
/// The token is 32 random bytes, printed (or written 0600 for `--open`) as part of the
/// sign-in URL. It works once: the exchange replaces it with a fresh one, so a copy of the
/// URL in a browser's history or a terminal's scrollback is worth nothing afterwards.
/// Sessions are 32 random bytes too, kept only as SHA-256 digests, in memory. A browser may
/// keep the cookie on disk (Chromium writes session cookies into its profile), so a session
/// does not live as long as the cookie: it ends after `idleSeconds` without use (the page's
/// own polling is not use), `absoluteSeconds` after sign-in whatever happens, on sign-out,
/// when the server stops, and when more than `maxSessions` exist (oldest first). A lock of
/// the node *suspends* every session: it then opens nothing but `POST /api/unlock`, and a
/// right passphrase there replaces it with a new session (a new cookie; the old value is
/// dead), while `maxUnlockAttempts` wrong ones end it.
public final class WebSessions: Sendable {
  /// At most this many signed-in browsers at once.
  public static let maxSessions = 16
  /// Wrong passphrases a suspended session may send before it ends.
  public static let maxUnlockAttempts = 5
  /// The idle lifetime unless `memo-peer web --session-timeout` says otherwise.
  public static let defaultIdleSeconds: Double = 30 * 60
  /// The absolute lifetime: a session ends this long after its sign-in.
  public static let absoluteSeconds: Double = 12 * 3600

  /// What a cookie is worth now.
  public enum Standing: Sendable, Equatable {
    /// A live session: everything a signed-in browser may do.
    case active
    /// A session suspended by a lock: only the unlock call.
    case suspended
    /// No session (never one, expired, signed out, ended).
    case none
  }

  /// A session one of a request's cookie values names.
  public struct Found: Sendable, Equatable {
    /// The cookie value (the caller's own copy: never logged).
    public let value: String
    /// `.active` or `.suspended`.
    public let standing: Standing
    /// The Unix user whose connection signed it in (nil: not told).
    public let user: UInt32?
  }

  struct Session {
    var digest: [UInt8]
    /// Who signed it in (`WebUserRule`).
    let user: UInt32?
    let signedIn: Double
    var lastUse: Double
    var suspended = false
    var failedUnlocks = 0
  }

  struct State {
    var token: String
    var tokenDigest: [UInt8]
    /// Sessions, oldest first.
    var sessions: [Session] = []
    /// When sessions were last suspended for a lock.
    var lastSuspension: Double?
    /// The newest look at the node's lock state: when it was asked, and what it saw (nil
    /// before the first look).
    var lastLook = -Double.infinity
    var lockedAtLastLook: Bool?
    /// When a look last saw the node unlocked.
    var lastSeenUnlocked = -Double.infinity
  }

  private let state: Mutex<State>
  private let random: @Sendable () throws -> [UInt8]
  private let clock: @Sendable () -> Double
  /// Seconds without use after which a session ends.
  public let idleSeconds: Double
  /// `memo_peer_session_PORT`: cookies do not tell ports apart, so two servers on one
  /// machine (two nodes) must not overwrite each other's session.
  public let cookieName: String

  /// - Parameters:
  ///   - random: 32 fresh random bytes per call (the system's CSPRNG; a fake in tests).
  ///   - clock: seconds on a clock that never goes back (the monotonic clock; a fake in tests).
  public init(
    port: UInt16, idleSeconds: Double = WebSessions.defaultIdleSeconds,
    random: @escaping @Sendable () throws -> [UInt8] = { try SystemRandom.bytes(32) },
    clock: @escaping @Sendable () -> Double = { monotonicSeconds() }
  ) throws {
    self.random = random
    self.clock = clock
    self.idleSeconds = min(idleSeconds, Self.absoluteSeconds)
    cookieName = "memo_peer_session_\(port)"
    let token = Self.encode(try random())
    state = Mutex(State(token: token, tokenDigest: try Self.digest(token)))
  }

  /// The sign-in token that works now.
  public var token: String { state.withLock { $0.token } }

  /// Exchanges the current token for a new session of `user` (the connection's Unix user).
  /// Returns the session's cookie value and the next token, or nil when `candidate` is not
  /// the current token.
  public func exchange(_ candidate: String, user: UInt32? = nil) -> (session: String, nextToken: String)? {
    guard candidate.utf8.count <= 128, let candidateDigest = try? Self.digest(candidate) else { return nil }
    let now = clock()
    return state.withLock { state -> (String, String)? in
      guard Self.constantTimeEquals(candidateDigest, state.tokenDigest),
        let session = try? Self.encode(random()), let next = try? Self.encode(random()),
        let sessionDigest = try? Self.digest(session), let nextDigest = try? Self.digest(next)
      else { return nil }
      state.token = next
      state.tokenDigest = nextDigest
      state.sessions.append(Session(digest: sessionDigest, user: user, signedIn: now, lastUse: now))
      if state.sessions.count > Self.maxSessions { state.sessions.removeFirst(state.sessions.count - Self.maxSessions) }
      return (session, next)
    }
  }

  /// What the cookie `value` is worth now; with `use`, the request counts as use (its idle
  /// lifetime starts again). Expired sessions are forgotten on the way.
  public func standing(_ value: String?, use: Bool = false) -> Standing {
    guard let value, value.utf8.count <= 128, let digest = try? Self.digest(value) else { return .none }
    let now = clock()
    return state.withLock { state in
      expire(&state, now: now)
      guard let index = state.sessions.firstIndex(where: { Self.constantTimeEquals($0.digest, digest) }) else {
        return .none
      }
      if state.sessions[index].suspended { return .suspended }
      if use { state.sessions[index].lastUse = now }
      return .active
    }
  }

  /// The session among `values` (every value a request sent under the cookie's name,
  /// `HTTPRequest.cookieValues`): a live one before a suspended one, nil when none is a
  /// session. A value that is no session (a shadow another page set) is passed over, so it
  /// cannot sign the person out. Nothing counts as use here (`standing(_:use:)` does).
  public func find(_ values: [String]) -> Found? {
    let digests = values.compactMap { value in
      value.utf8.count <= 128 ? (try? Self.digest(value)).map { (value, $0) } : nil
    }
    guard !digests.isEmpty else { return nil }
    let now = clock()
    return state.withLock { state -> Found? in
      expire(&state, now: now)
      var suspended: Found?
      for (value, digest) in digests {
        guard let session = state.sessions.first(where: { Self.constantTimeEquals($0.digest, digest) }) else {
          continue
        }
        if !session.suspended { return Found(value: value, standing: .active, user: session.user) }
        if suspended == nil { suspended = Found(value: value, standing: .suspended, user: session.user) }
      }
      return suspended
    }
  }

  /// Ends every session among `values`: a cookie that came from another user was stolen, and
  /// is worth nothing from now on (nor are the others it came with).
  public func endAll(_ values: [String]) {
    for value in values { end(value) }
  }

  /// Whether `value` is the cookie of a live (not suspended) session.
  public func isSession(_ value: String?) -> Bool { standing(value) == .active }

  /// Ends a session (sign-out).
  public func end(_ value: String) {
    guard let digest = try? Self.digest(value) else { return }
    state.withLock { state in state.sessions.removeAll { Self.constantTimeEquals($0.digest, digest) } }
  }

  /// The node was locked (through the page's own Lock): every session is suspended (opens
  /// only the unlock call).
  public func suspendAll() {
    let now = clock()
    state.withLock { state in
      for index in state.sessions.indices { state.sessions[index].suspended = true }
      state.lastSuspension = now
    }
  }

  /// Looks at the node's lock state now (`isLocked`), as `observeLock(_:askedAt:)` says.
  public func observeLock(_ isLocked: () -> Bool) {
    let asked = clock()
    observeLock(isLocked(), askedAt: asked)
  }

  /// What a look at the node's lock state saw, asked at `askedAt` (on this clock). Looks come
  /// from the server's lock watch and from every request that needs a session, so a lock
  /// made elsewhere holds from the next request on. The first look that sees the node locked
  /// after one that saw it unlocked suspends every session — unless a suspension since that
  /// unlocked look (the page's own Lock) already answered this lock, so a browser that signed
  /// in after it keeps the session it got while the node was locked, as does every session
  /// of a server that started locked. A look older than the newest one so far is ignored: a
  /// slow request's answer never undoes what a newer look saw.
  public func observeLock(_ locked: Bool, askedAt: Double) {
    let now = clock()
    state.withLock { state in
      guard askedAt >= state.lastLook else { return }
      state.lastLook = askedAt
      let before = state.lockedAtLastLook
      state.lockedAtLastLook = locked
      guard locked else {
        state.lastSeenUnlocked = askedAt
        return
      }
      guard before == false else { return }
      if let last = state.lastSuspension, last >= state.lastSeenUnlocked { return }
      for index in state.sessions.indices { state.sessions[index].suspended = true }
      state.lastSuspension = now
    }
  }

  /// A suspended session's browser unlocked the node: the session gets a new cookie value
  /// (returned; the old one is dead) and is live again, keeping its sign-in time.
  public func resume(_ value: String) -> String? {
    guard let digest = try? Self.digest(value), let fresh = try? Self.encode(random()),
      let freshDigest = try? Self.digest(fresh)
    else { return nil }
    let now = clock()
    return state.withLock { state -> String? in
      expire(&state, now: now)
      guard let index = state.sessions.firstIndex(where: { Self.constantTimeEquals($0.digest, digest) }),
        state.sessions[index].suspended
      else { return nil }
      state.sessions[index].digest = freshDigest
      state.sessions[index].suspended = false
      state.sessions[index].failedUnlocks = 0
      state.sessions[index].lastUse = now
      // The unlock just worked: a look at an unlocked node, so the next lock is one.
      state.lastLook = max(state.lastLook, now)
      state.lockedAtLastLook = false
      state.lastSeenUnlocked = now
      return fresh
    }
  }

  /// A suspended session sent a wrong passphrase; the last allowed one ends it.
  public func unlockFailed(_ value: String) {
    guard let digest = try? Self.digest(value) else { return }
    state.withLock { state in
      guard let index = state.sessions.firstIndex(where: { Self.constantTimeEquals($0.digest, digest) }),
        state.sessions[index].suspended
      else { return }
      state.sessions[index].failedUnlocks += 1
      if state.sessions[index].failedUnlocks >= Self.maxUnlockAttempts { state.sessions.remove(at: index) }
    }
  }

  /// Sessions that exist now (live or suspended).
  public var count: Int {
    let now = clock()
    return state.withLock { state in
      expire(&state, now: now)
      return state.sessions.count
    }
  }

  private func expire(_ state: inout State, now: Double) {
    state.sessions.removeAll { now - $0.lastUse > idleSeconds || now - $0.signedIn > Self.absoluteSeconds }
  }

  /// The `Set-Cookie` value of a new session: a session cookie (no Expires or Max-Age: the
  /// browser drops it when it closes, though it may have written it to its profile; the
  /// server's lifetimes above hold either way), never sent to scripts (HttpOnly) or with
  /// another site's requests (SameSite=Strict).
  public func cookie(for session: String) -> String {
    "\(cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict"
  }

  /// The `Set-Cookie` value that removes the session cookie.
  public var expiredCookie: String { "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" }

  /// Base64url without padding: safe in a URL and a cookie as it is.
  static func encode(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacing("+", with: "-")
      .replacing("/", with: "_").replacing("=", with: "")
  }

  static func digest(_ text: String) throws -> [UInt8] { try SHA256.hash(Array(text.utf8)) }

  static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    SecureBytes(copying: a).constantTimeEquals(SecureBytes(copying: b))
  }
}
