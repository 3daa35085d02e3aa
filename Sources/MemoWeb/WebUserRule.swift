/// Who may use the page: the Unix user who runs the server, or the one who signed the
/// session in (docs/WEB.md, "Another user on this computer").
///
/// Cookies do not keep ports apart, and SameSite=Strict counts every loopback port as the
/// same site: a page another local user serves on another port gets the session cookie
/// from the person's browser, and any local user who can read the browser's profile can copy
/// it. What no other user can do is open a connection as the person: the kernel records
/// which user's socket opened each connection (`memo_peer_socket_uid`, as `ss -e` shows it).
/// So a cookie is worth something only on a connection of the right user, and a cookie that
/// arrives on another user's connection was stolen: it is refused, and its session ended.
///
/// Pure: the front door asks it with the request's user, its own and the session's.
public enum WebUserRule {
  public enum Verdict: Sendable, Equatable {
    /// The server's own user, or the user who signed the session in.
    case allowed
    /// The kernel could not say whose connection it is: refused, as a stranger's.
    case unknownUser
    /// Another local user.
    case otherUser
  }

  /// Whether a request from `requestUser` may go on. `sessionUser`: the user who signed in
  /// the session the request's cookie names, if it names one.
  public static func verdict(requestUser: UInt32?, serverUser: UInt32, sessionUser: UInt32?) -> Verdict {
    guard let requestUser else { return .unknownUser }
    if requestUser == serverUser { return .allowed }
    if let sessionUser, requestUser == sessionUser { return .allowed }
    return .otherUser
  }
}
