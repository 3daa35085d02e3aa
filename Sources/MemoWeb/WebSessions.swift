import Foundation
import MemoCore
import MemoCrypto
import Synchronization

/// Who may use the page: a one-time sign-in token per start, exchanged for a session
/// cookie (HttpOnly, SameSite=Strict, this port's name).
///
/// The token is 32 random bytes, printed (or written 0600 for `--open`) as part of the
/// sign-in URL. It works once: the exchange replaces it with a fresh one, so a copy of the
/// URL in a browser's history or a terminal's scrollback is worth nothing afterwards.
/// Sessions are 32 random bytes too, kept only as SHA-256 digests, in memory: they end when
/// the server stops, on sign-out, or when more than `maxSessions` exist (oldest first).
public final class WebSessions: Sendable {
  /// At most this many signed-in browsers at once.
  public static let maxSessions = 16

  struct State {
    var token: String
    var tokenDigest: [UInt8]
    /// Session digests, oldest first.
    var sessions: [[UInt8]] = []
  }

  private let state: Mutex<State>
  private let random: @Sendable () throws -> [UInt8]
  /// `memo_peer_session_PORT`: cookies do not tell ports apart, so two servers on one
  /// machine (two nodes) must not overwrite each other's session.
  public let cookieName: String

  /// - Parameter random: 32 fresh random bytes per call (the system's CSPRNG; a fake in tests).
  public init(port: UInt16, random: @escaping @Sendable () throws -> [UInt8] = { try SystemRandom.bytes(32) }) throws {
    self.random = random
    cookieName = "memo_peer_session_\(port)"
    let token = Self.encode(try random())
    state = Mutex(State(token: token, tokenDigest: try Self.digest(token)))
  }

  /// The sign-in token that works now.
  public var token: String { state.withLock { $0.token } }

  /// Exchanges the current token for a new session. Returns the session's cookie value and
  /// the next token, or nil when `candidate` is not the current token.
  public func exchange(_ candidate: String) -> (session: String, nextToken: String)? {
    guard candidate.utf8.count <= 128, let candidateDigest = try? Self.digest(candidate) else { return nil }
    return state.withLock { state -> (String, String)? in
      guard Self.constantTimeEquals(candidateDigest, state.tokenDigest),
        let session = try? Self.encode(random()), let next = try? Self.encode(random()),
        let sessionDigest = try? Self.digest(session), let nextDigest = try? Self.digest(next)
      else { return nil }
      state.token = next
      state.tokenDigest = nextDigest
      state.sessions.append(sessionDigest)
      if state.sessions.count > Self.maxSessions { state.sessions.removeFirst(state.sessions.count - Self.maxSessions) }
      return (session, next)
    }
  }

  /// Whether `value` is the cookie of a live session.
  public func isSession(_ value: String?) -> Bool {
    guard let value, value.utf8.count <= 128, let digest = try? Self.digest(value) else { return false }
    return state.withLock { state in state.sessions.contains { Self.constantTimeEquals($0, digest) } }
  }

  /// Ends a session (sign-out).
  public func end(_ value: String) {
    guard let digest = try? Self.digest(value) else { return }
    state.withLock { state in state.sessions.removeAll { Self.constantTimeEquals($0, digest) } }
  }

  /// The `Set-Cookie` value of a new session: never stored on disk by the browser (no
  /// Expires or Max-Age), never sent to scripts (HttpOnly) or with another site's requests
  /// (SameSite=Strict).
  public func cookie(for session: String) -> String {
    "\(cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict"
  }

  /// The `Set-Cookie` value that removes the session cookie.
  public var expiredCookie: String { "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" }

  /// Base64url without padding: safe in a URL and a cookie as it is.
  static func encode(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
      .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
  }

  static func digest(_ text: String) throws -> [UInt8] { try SHA256.hash(Array(text.utf8)) }

  static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    SecureBytes(copying: a).constantTimeEquals(SecureBytes(copying: b))
  }
}
