/// The calls of the page's JSON API under `/api/` (docs/WEB.md). The router only matches
/// method and path; `APICall` adds the decoded body.
public enum APIRoute: Equatable, Sendable {
  case status
  case listMemos
  case createMemo
  case search
  case showMemo(String)
  case editMemo(String)
  case deleteMemo(String)
  case inbox
  case acceptInbox(String)
  case dropInbox(String)
  case conflicts
  case resolveConflict(String)
  case memoHistory(String)
  case diffMemo(String)
  case restoreMemo(String)
  case trash
  case restoreFromTrash(String)
  case peers
  case addPeerAddress(String)
  case removePeerAddress(String)
  case invitations
  case acceptInvitation(String)
  case declineInvitation(String)
  case consent
  case recordConsent
  case syncState
  case startSync
  case unlock
  case lock

  /// The route's pattern, for logs: never the id a request named.
  public var template: String {
    switch self {
    case .status: "GET /api/status"
    case .listMemos: "GET /api/memos"
    case .createMemo: "POST /api/memos"
    case .search: "POST /api/search"
    case .showMemo: "GET /api/memos/{id}"
    case .editMemo: "PATCH /api/memos/{id}"
    case .deleteMemo: "DELETE /api/memos/{id}"
    case .inbox: "GET /api/inbox"
    case .acceptInbox: "POST /api/inbox/{id}/accept"
    case .dropInbox: "POST /api/inbox/{id}/drop"
    case .conflicts: "GET /api/conflicts"
    case .resolveConflict: "POST /api/conflicts/{id}/resolve"
    case .memoHistory: "GET /api/memos/{id}/history"
    case .diffMemo: "POST /api/memos/{id}/diff"
    case .restoreMemo: "POST /api/memos/{id}/restore"
    case .trash: "GET /api/trash"
    case .restoreFromTrash: "POST /api/trash/{id}/restore"
    case .peers: "GET /api/peers"
    case .addPeerAddress: "POST /api/peers/{id}/addresses"
    case .removePeerAddress: "POST /api/peers/{id}/addresses/remove"
    case .invitations: "GET /api/invitations"
    case .acceptInvitation: "POST /api/invitations/{id}/accept"
    case .declineInvitation: "POST /api/invitations/{id}/decline"
    case .consent: "GET /api/consent"
    case .recordConsent: "POST /api/consent"
    case .syncState: "GET /api/sync"
    case .startSync: "POST /api/sync"
    case .unlock: "POST /api/unlock"
    case .lock: "POST /api/lock"
    }
  }
}

/// What the router made of a method and a path.
public enum RouteMatch: Equatable, Sendable {
  case route(APIRoute)
  case notFound
  /// The path exists; these methods are the ones it takes (the `Allow` header).
  case methodNotAllowed([String])
}

/// Matches `/api/…` paths against the API's table. Pure: no I/O, no state.
public enum APIRouter {
  /// One row: the path's segments (`{id}` matches an id) and a route per method.
  private static let table: [(pattern: [String], methods: [(String, @Sendable (String) -> APIRoute)])] = [
    (["status"], [("GET", { _ in .status })]),
    (["memos"], [("GET", { _ in .listMemos }), ("POST", { _ in .createMemo })]),
    (["memos", "{id}"], [("GET", APIRoute.showMemo), ("PATCH", APIRoute.editMemo), ("DELETE", APIRoute.deleteMemo)]),
    (["memos", "{id}", "history"], [("GET", APIRoute.memoHistory)]),
    (["memos", "{id}", "diff"], [("POST", APIRoute.diffMemo)]),
    (["memos", "{id}", "restore"], [("POST", APIRoute.restoreMemo)]),
    (["trash"], [("GET", { _ in .trash })]),
    (["trash", "{id}", "restore"], [("POST", APIRoute.restoreFromTrash)]),
    (["search"], [("POST", { _ in .search })]),
    (["inbox"], [("GET", { _ in .inbox })]),
    (["inbox", "{id}", "accept"], [("POST", APIRoute.acceptInbox)]),
    (["inbox", "{id}", "drop"], [("POST", APIRoute.dropInbox)]),
    (["conflicts"], [("GET", { _ in .conflicts })]),
    (["conflicts", "{id}", "resolve"], [("POST", APIRoute.resolveConflict)]),
    (["peers"], [("GET", { _ in .peers })]),
    (["peers", "{id}", "addresses"], [("POST", APIRoute.addPeerAddress)]),
    (["peers", "{id}", "addresses", "remove"], [("POST", APIRoute.removePeerAddress)]),
    (["invitations"], [("GET", { _ in .invitations })]),
    (["invitations", "{id}", "accept"], [("POST", APIRoute.acceptInvitation)]),
    (["invitations", "{id}", "decline"], [("POST", APIRoute.declineInvitation)]),
    (["consent"], [("GET", { _ in .consent }), ("POST", { _ in .recordConsent })]),
    (["sync"], [("GET", { _ in .syncState }), ("POST", { _ in .startSync })]),
    (["unlock"], [("POST", { _ in .unlock })]),
    (["lock"], [("POST", { _ in .lock })]),
  ]

  /// The longest id a path may carry (memo ids are 36 characters, device ids 52, entry ids
  /// shorter).
  static let maxIDLength = 64

  public static func match(method: String, path: String) -> RouteMatch {
    guard path.hasPrefix("/api/") else { return .notFound }
    let segments = path.dropFirst("/api/".count).split(separator: "/", omittingEmptySubsequences: false).map(
      String.init)
    // HEAD is a GET without the body (libmicrohttpd drops the body).
    let verb = method == "HEAD" ? "GET" : method
    for row in table where row.pattern.count == segments.count {
      var id: String?
      let matches = zip(row.pattern, segments).allSatisfy { pattern, segment in
        guard pattern == "{id}" else { return pattern == segment }
        guard isID(segment) else { return false }
        id = segment
        return true
      }
      guard matches else { continue }
      guard let (_, make) = row.methods.first(where: { $0.0 == verb }) else {
        let allowed = row.methods.map(\.0)
        return .methodNotAllowed(allowed.contains("GET") ? allowed + ["HEAD"] : allowed)
      }
      return .route(make(id ?? ""))
    }
    return .notFound
  }

  /// Ids and id prefixes: letters, digits and `-`, nothing that could be a path or text.
  static func isID(_ segment: String) -> Bool {
    (1...maxIDLength).contains(segment.utf8.count)
      && segment.utf8.allSatisfy {
        ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D
      }
  }
}
