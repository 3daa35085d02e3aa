import MemoCore
import MemoCrypto
import XCTest

@testable import MemoWeb

/// The API's router and the decoding of request bodies: pure, no server.
final class WebRoutingTests: XCTestCase {
  func testRoutesMatchMethodAndPath() {
    let id = "3f2a1b2c-0000-4000-8000-000000000000"
    let cases: [(String, String, RouteMatch)] = [
      ("GET", "/api/status", .route(.status)),
      ("HEAD", "/api/status", .route(.status)),
      ("GET", "/api/memos", .route(.listMemos)),
      ("POST", "/api/memos", .route(.createMemo)),
      ("GET", "/api/memos/\(id)", .route(.showMemo(id))),
      ("PATCH", "/api/memos/3f2a", .route(.editMemo("3f2a"))),
      ("DELETE", "/api/memos/\(id)", .route(.deleteMemo(id))),
      ("POST", "/api/search", .route(.search)),
      ("GET", "/api/inbox", .route(.inbox)),
      ("POST", "/api/inbox/ab12/accept", .route(.acceptInbox("ab12"))),
      ("POST", "/api/inbox/ab12/drop", .route(.dropInbox("ab12"))),
      ("GET", "/api/conflicts", .route(.conflicts)),
      ("POST", "/api/conflicts/\(id)/resolve", .route(.resolveConflict(id))),
      ("GET", "/api/memos/\(id)/history", .route(.memoHistory(id))),
      ("POST", "/api/memos/\(id)/diff", .route(.diffMemo(id))),
      ("POST", "/api/memos/\(id)/restore", .route(.restoreMemo(id))),
      ("GET", "/api/trash", .route(.trash)),
      ("POST", "/api/trash/\(id)/restore", .route(.restoreFromTrash(id))),
      ("GET", "/api/memos/\(id)/restore", .methodNotAllowed(["POST"])),
      ("POST", "/api/memos/\(id)/history", .methodNotAllowed(["GET", "HEAD"])),
      ("GET", "/api/peers", .route(.peers)),
      ("GET", "/api/consent", .route(.consent)),
      ("POST", "/api/consent", .route(.recordConsent)),
      ("GET", "/api/sync", .route(.syncState)),
      ("POST", "/api/sync", .route(.startSync)),
      ("POST", "/api/unlock", .route(.unlock)),
      ("POST", "/api/lock", .route(.lock)),
      ("PUT", "/api/memos", .methodNotAllowed(["GET", "POST", "HEAD"])),
      ("GET", "/api/search", .methodNotAllowed(["POST"])),
      ("POST", "/api/memos/\(id)", .methodNotAllowed(["GET", "PATCH", "DELETE", "HEAD"])),
      ("GET", "/api/nothing", .notFound),
      ("GET", "/api/memos/", .notFound),
      ("GET", "/api/memos/a/b", .notFound),
      ("GET", "/api/memos/..", .notFound),
      ("GET", "/api/memos/a%2Fb", .notFound),
      ("GET", "/api/memos/\(String(repeating: "a", count: 65))", .notFound),
      ("GET", "/api/memos/caf\u{E9}", .notFound),
      ("GET", "/memos", .notFound),
      ("GET", "/api", .notFound),
    ]
    for (method, path, expected) in cases {
      XCTAssertEqual(APIRouter.match(method: method, path: path), expected, "\(method) \(path)")
    }
    XCTAssertEqual(APIRoute.showMemo(id).template, "GET /api/memos/{id}", "logs never carry the id")
  }

  func testBodiesAreDecodedStrictly() throws {
    let json = "application/json; charset=utf-8"
    guard
      case .createMemo(let draft) = try APICall.decode(
        .createMemo, body: Array(#"{"body":"milk","tags":["home"],"private":true}"#.utf8), contentType: json)
    else { return XCTFail("not a create") }
    XCTAssertEqual(draft, MemoDraft(title: "", body: "milk", tags: ["home"], isPrivate: true))

    guard
      case .editMemo(let id, let edit) = try APICall.decode(
        .editMemo("ab"), body: Array(#"{"body":"x","revision":3}"#.utf8), contentType: "application/json")
    else { return XCTFail("not an edit") }
    XCTAssertEqual(id, "ab")
    XCTAssertEqual(edit, MemoEdit(body: "x", revision: 3))

    guard
      case .recordConsent(let answer) = try APICall.decode(
        .recordConsent, body: Array(#"{"decision":"granted"}"#.utf8), contentType: json)
    else { return XCTFail("not a consent") }
    XCTAssertEqual(answer, ConsentAnswer(scope: .localNetwork, decision: .granted))

    guard case .startSync(let peer, let timeout) = try APICall.decode(.startSync, body: [], contentType: nil) else {
      return XCTFail("not a sync")
    }
    XCTAssertNil(peer)
    XCTAssertNil(timeout)

    func refusal(_ route: APIRoute, _ body: String, _ type: String? = json) -> MemoPeerError? {
      do {
        _ = try APICall.decode(route, body: Array(body.utf8), contentType: type)
        return nil
      } catch { return error as? MemoPeerError }
    }
    XCTAssertEqual(refusal(.createMemo, #"{"title":"x"}"#)?.message, #"the field "body" is missing"#)
    XCTAssertEqual(refusal(.createMemo, #"{"body":5}"#)?.message, #"the field "body" has the wrong type"#)
    XCTAssertEqual(refusal(.createMemo, #"{"body":"x"}"#, "text/plain")?.code, .invalidInput)
    XCTAssertEqual(refusal(.createMemo, #"{"body":"x"}"#, nil)?.code, .invalidInput, "no Content-Type")
    XCTAssertEqual(refusal(.createMemo, "not json secret text")?.message, "the body is not valid JSON")
    XCTAssertEqual(refusal(.editMemo("a"), "{}")?.code, .invalidInput, "an edit that changes nothing")
    XCTAssertEqual(refusal(.search, #"{"text":"   "}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.search, #"{"text":"\#(String(repeating: "a", count: 4097))"}"#)?.code, .tooLarge)
    XCTAssertEqual(refusal(.recordConsent, #"{"decision":"maybe"}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.recordConsent, #"{"scope":"everything","decision":"granted"}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.resolveConflict("a"), #"{}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.restoreMemo("a"), #"{}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.restoreMemo("a"), #"{"revision":0}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.restoreMemo("a"), #"{"revision":"1"}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.diffMemo("a"), #"{"from":-1}"#)?.code, .invalidInput)
    guard case .diffMemo("a", nil, nil) = try APICall.decode(.diffMemo("a"), body: [], contentType: nil) else {
      return XCTFail("a diff without a body is the current revision against the one before")
    }
    guard
      case .diffCopy("a", "b") = try APICall.decode(
        .diffMemo("a"), body: Array(#"{"copy":"b"}"#.utf8), contentType: "application/json")
    else { return XCTFail("a diff with a copy is the memo against its conflict copy") }
    XCTAssertEqual(refusal(.diffMemo("a"), #"{"copy":"b","from":1}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.diffMemo("a"), #"{"copy":7}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.startSync, #"{"timeout":0}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(.startSync, #"{"timeout":301}"#)?.code, .invalidInput)
    for (route, body) in [(APIRoute.createMemo, #"{"body":"my secret memo"#), (.createMemo, #"{"body":true}"#)] {
      XCTAssertFalse(refusal(route, body)?.message.contains("secret") ?? true, "errors never repeat the body")
    }
  }

  func testThePassphraseIsTakenRawAndBounded() throws {
    guard
      case .unlock(let passphrase) = try APICall.decode(
        .unlock, body: Array("correct horse\n".utf8), contentType: "application/octet-stream")
    else { return XCTFail("not an unlock") }
    XCTAssertTrue(passphrase.constantTimeEquals(SecureBytes(copying: Array("correct horse".utf8))))
    XCTAssertThrowsError(try APICall.decode(.unlock, body: Array("x".utf8), contentType: "application/json"))
    XCTAssertThrowsError(
      try APICall.decode(
        .unlock, body: Array(repeating: 0x41, count: 4097), contentType: "application/octet-stream"))
  }

  /// Every code's status, pinned: a change here is a change of the API (docs/WEB.md).
  func testErrorCodesMapToStatuses() {
    let statuses: [MemoPeerError.Code: Int] = [
      .usage: 400, .invalidInput: 400, .invalidUTF8: 400, .ambiguousID: 400, .tooLarge: 413, .notFound: 404,
      .passphrase: 403, .consentRequired: 403, .policyDenied: 403, .noAuth: 403, .sealed: 403, .locked: 423,
      .notProtected: 409, .conflict: 409, .syncHeld: 409, .cancelled: 409,
      .untrustedPeer: 502, .connection: 502, .daemonUnavailable: 502, .discovery: 502, .protocolViolation: 502,
      .permissionsTooOpen: 500, .keyMissing: 500, .wrongKey: 500, .integrity: 500, .corruptDatabase: 500,
      .foreignDatabase: 500, .newerDatabase: 500, .diskFull: 500, .storage: 500, .crypto: 500, .io: 500,
      .editor: 500, .archive: 500,
    ]
    XCTAssertEqual(Set(statuses.keys), Set(MemoPeerError.Code.allCases), "every code has its status pinned here")
    for code in MemoPeerError.Code.allCases {
      XCTAssertEqual(WebStatus.of(code), statuses[code], code.rawValue)
      XCTAssertTrue((400...599).contains(WebStatus.of(code)), code.rawValue)
    }
    XCTAssertEqual(HTTPResponse.error(MemoPeerError(.locked, "locked")).status, 423)
  }
}
