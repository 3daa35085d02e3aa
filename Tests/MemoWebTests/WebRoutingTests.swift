import MemoCore
import MemoCrypto
import XCTest

@testable import MemoWeb

/// The API's router and the decoding of request bodies: pure, no server.
final class WebRoutingTests: XCTestCase {
  func testRoutesMatchMethodAndPath() {
    let id = "3f2a1b2c-0000-4000-8000-000000000000"
    let device = "5HUOJLKAPDGZ36YZNUDCM3MKC7OEYQTJLE4KXELYDPX3COPYZXFA"
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
      ("POST", "/api/peers/\(device)/addresses", .route(.addPeerAddress(device))),
      ("POST", "/api/peers/\(device)/addresses/remove", .route(.removePeerAddress(device))),
      ("GET", "/api/peers/\(device)/addresses", .methodNotAllowed(["POST"])),
      ("DELETE", "/api/peers/\(device)/addresses", .methodNotAllowed(["POST"])),
      ("POST", "/api/peers/\(device)/addresses/10.0.0.2:8426", .notFound),
      ("POST", "/api/peers/a.b/addresses", .notFound),
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
    XCTAssertEqual(APIRoute.addPeerAddress(device).template, "POST /api/peers/{id}/addresses")
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

  /// Scope `network` is not one of `consent`'s scopes: it is this network's decision, granted
  /// or denied only (as `network allow|deny`); every other scope decodes as before.
  func testANetworkDecisionIsTakenApartFromTheConsentScopes() throws {
    func decode(_ body: String) throws -> APICall {
      try APICall.decode(.recordConsent, body: Array(body.utf8), contentType: "application/json")
    }
    guard case .decideNetwork(.granted) = try decode(#"{"scope":"network","decision":"granted"}"#) else {
      return XCTFail("allowing this network")
    }
    guard case .decideNetwork(.denied) = try decode(#"{"decision":"denied","scope":"network"}"#) else {
      return XCTFail("denying this network")
    }
    guard case .recordConsent(let answer) = try decode(#"{"scope":"background-sync","decision":"revoked"}"#) else {
      return XCTFail("a consent scope is still a consent")
    }
    XCTAssertEqual(answer, ConsentAnswer(scope: .backgroundSync, decision: .revoked))
    for body in [
      #"{"scope":"network","decision":"revoked"}"#, #"{"scope":"network"}"#, #"{"scope":"network","decision":"yes"}"#,
      #"{"scope":"network","decision":true}"#, #"{"scope":"Network","decision":"granted"}"#, #"{"decision":5}"#,
      #"{"scope":"network","scope":"local-network","decision":"granted"}"#,
    ] {
      XCTAssertThrowsError(try decode(body), body) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput, body) }
    }
    XCTAssertThrowsError(try decode("{}")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.message, #"the field "decision" is missing"#)
    }
  }

  /// `{"address": "HOST[:PORT]"}`: the text, blanks around it dropped; empty, overlong or
  /// mistyped bodies are refused here, a wrong address by the use case (it says why).
  func testAnAddressBodyIsDecodedStrictly() throws {
    let device = "5HUOJLKAPDGZ36YZ"
    func decode(_ route: APIRoute, _ body: String) throws -> APICall {
      try APICall.decode(route, body: Array(body.utf8), contentType: "application/json")
    }
    guard
      case .addPeerAddress(let peer, let address) = try decode(
        .addPeerAddress(device), #"{"address":" 192.168.7.20:8426 "}"#)
    else { return XCTFail("not an address to add") }
    XCTAssertEqual(peer, device)
    XCTAssertEqual(address, "192.168.7.20:8426")
    guard
      case .removePeerAddress(device, "[fe80::1%eth0]:8426") = try decode(
        .removePeerAddress(device), #"{"address":"[fe80::1%eth0]:8426"}"#)
    else { return XCTFail("not an address to remove") }
    func refusal(_ body: String, _ type: String? = "application/json") -> MemoPeerError? {
      do {
        _ = try APICall.decode(.addPeerAddress(device), body: Array(body.utf8), contentType: type)
        return nil
      } catch { return error as? MemoPeerError }
    }
    XCTAssertEqual(refusal("{}")?.message, #"the field "address" is missing"#)
    XCTAssertEqual(refusal(#"{"address":"  "}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(#"{"address":8426}"#)?.message, #"the field "address" has the wrong type"#)
    XCTAssertEqual(refusal(#"{"address":"a","address":"b"}"#)?.code, .invalidInput)
    XCTAssertEqual(refusal(#"{"address":"10.0.0.2"}"#, "text/plain")?.code, .invalidInput)
    let long = String(repeating: "a", count: APICall.maxAddressBytes + 1)
    XCTAssertEqual(refusal(#"{"address":"\#(long)"}"#)?.code, .tooLarge)
    XCTAssertFalse(refusal(#"{"address":"\#(long)"}"#)?.message.contains(long) ?? true, "never the long text")
    XCTAssertEqual(refusal(#"{"address":"\#(String(repeating: "a", count: 512))"}"#), nil, "the use case judges it")
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
