import Foundation
import MemoCore
import MemoCrypto

/// A call of the page's API with its body decoded and checked: what `WebAPI` performs.
/// Decoding is strict about types and sizes and says which field was wrong, never what
/// it held (it may be memo text).
public enum APICall: Sendable {
  case status
  case listMemos
  case search(MemoQuery)
  case createMemo(MemoDraft)
  case showMemo(String)
  case editMemo(String, MemoEdit)
  case deleteMemo(String)
  case inbox
  case acceptInbox(String)
  case dropInbox(String)
  case conflicts
  /// The conflict copy's (or memo's) id and `A`, `B` or `both`.
  case resolveConflict(String, keep: String)
  case peers
  case consent
  case recordConsent(ConsentAnswer)
  case syncState
  /// Sync with every trusted device, or only with the one named; `timeout`: seconds to
  /// wait for each device (nil: as `sync`).
  case startSync(peer: String?, timeout: Double?)
  /// The passphrase, exactly as sent (one line; a final newline is dropped).
  case unlock(SecureBytes)
  case lock

  /// The largest request body any call takes: a memo's 64 KiB body, even if every
  /// character had to be escaped in JSON, fits with room to spare.
  public static let maxBodyBytes = 512 * 1024
  /// The longest passphrase accepted, as on the command line.
  public static let maxPassphraseBytes = 4096
  /// The longest search text, as `search --stdin`.
  public static let maxQueryBytes = 4096

  /// Decodes the body that `route` takes. `contentType` must be `application/json` for
  /// JSON bodies and `application/octet-stream` for the passphrase.
  public static func decode(_ route: APIRoute, body: [UInt8], contentType: String?) throws -> APICall {
    switch route {
    case .status: return .status
    case .listMemos: return .listMemos
    case .showMemo(let id): return .showMemo(id)
    case .deleteMemo(let id): return .deleteMemo(id)
    case .inbox: return .inbox
    case .acceptInbox(let id): return .acceptInbox(id)
    case .dropInbox(let id): return .dropInbox(id)
    case .conflicts: return .conflicts
    case .peers: return .peers
    case .consent: return .consent
    case .syncState: return .syncState
    case .lock: return .lock
    case .search:
      let query: MemoQuery = try json(body, contentType)
      guard query.text.map({ !$0.trimmingWhitespace.isEmpty }) ?? false || query.tag != nil else {
        throw invalid("a search needs \"text\" or \"tag\"")
      }
      guard (query.text?.utf8.count ?? 0) <= maxQueryBytes else {
        throw MemoPeerError(.tooLarge, "the search text is longer than \(maxQueryBytes) bytes")
      }
      return .search(query)
    case .createMemo:
      let memo: NewMemo = try json(body, contentType)
      return .createMemo(
        MemoDraft(title: memo.title ?? "", body: memo.body, tags: memo.tags ?? [], isPrivate: memo.private ?? false))
    case .editMemo(let id):
      let edit: MemoEdit = try json(body, contentType)
      guard !edit.change.isEmpty || edit.pinned != nil else {
        throw invalid("an edit needs at least one of \"title\", \"body\", \"tags\", \"private\", \"pinned\"")
      }
      return .editMemo(id, edit)
    case .resolveConflict(let id):
      let answer: ConflictAnswer = try json(body, contentType)
      return .resolveConflict(id, keep: answer.keep)
    case .recordConsent:
      return .recordConsent(try json(body, contentType))
    case .startSync:
      if body.isEmpty { return .startSync(peer: nil, timeout: nil) }
      let request: SyncRequest = try json(body, contentType)
      if let timeout = request.timeout, !(1...300).contains(timeout) {
        throw invalid("\"timeout\" must be from 1 to 300 seconds")
      }
      return .startSync(peer: request.peer, timeout: request.timeout)
    case .unlock:
      guard mediaType(contentType) == "application/octet-stream" else {
        throw MemoPeerError(
          .invalidInput, "the passphrase must be sent as application/octet-stream", hint: "see docs/WEB.md")
      }
      guard body.count <= maxPassphraseBytes else {
        throw MemoPeerError(.tooLarge, "the passphrase is longer than \(maxPassphraseBytes) bytes")
      }
      var line = body[...]
      while let last = line.last, last == 0x0A || last == 0x0D { line = line.dropLast() }
      return .unlock(SecureBytes(copying: line))
    }
  }

  static func json<T: Decodable>(_ body: [UInt8], _ contentType: String?) throws -> T {
    guard mediaType(contentType) == "application/json" else {
      throw MemoPeerError(.invalidInput, "this call takes a JSON body (Content-Type: application/json)")
    }
    do { return try JSONDecoder().decode(T.self, from: Data(body)) } catch let error as MemoPeerError {
      throw error
    } catch let DecodingError.keyNotFound(key, _) {
      throw invalid("the field \"\(key.stringValue)\" is missing")
    } catch let DecodingError.typeMismatch(_, context) {
      throw invalid("the field \"\(path(context))\" has the wrong type")
    } catch let DecodingError.valueNotFound(_, context) {
      throw invalid("the field \"\(path(context))\" is null")
    } catch {
      throw invalid("the body is not valid JSON")
    }
  }

  /// `application/json` of `application/json; charset=utf-8`, lowercased.
  static func mediaType(_ contentType: String?) -> String? {
    contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
  }

  static func path(_ context: DecodingError.Context) -> String {
    let path = context.codingPath.map(\.stringValue).joined(separator: ".")
    return path.count <= 40 && path.allSatisfy({ $0.isASCII }) ? path : "?"
  }

  static func invalid(_ message: String) -> MemoPeerError {
    MemoPeerError(.invalidInput, message, hint: "docs/WEB.md lists each call's fields")
  }
}

/// `POST /api/search`: `{"text", "tag"}`, at least one.
public struct MemoQuery: Decodable, Sendable, Equatable {
  public var text: String?
  public var tag: String?

  public init(text: String? = nil, tag: String? = nil) {
    self.text = text
    self.tag = tag
  }
}

/// `POST /api/memos`: `{"title", "body", "tags", "private"}`; only `body` is required.
struct NewMemo: Decodable {
  var title: String?
  var body: String
  var tags: [String]?
  var `private`: Bool?
}

/// `PATCH /api/memos/{id}`: any of `title`, `body`, `tags`, `private`, `pinned`, and the
/// `revision` the page started from: when the memo changed since (a sync brought an edit),
/// the text is saved as a memo of its own instead of overwriting that edit.
public struct MemoEdit: Decodable, Sendable, Equatable {
  public var title: String?
  public var body: String?
  public var tags: [String]?
  public var `private`: Bool?
  public var pinned: Bool?
  public var revision: Int64?

  public init(
    title: String? = nil, body: String? = nil, tags: [String]? = nil, private: Bool? = nil, pinned: Bool? = nil,
    revision: Int64? = nil
  ) {
    self.title = title
    self.body = body
    self.tags = tags
    self.private = `private`
    self.pinned = pinned
    self.revision = revision
  }

  /// The change to the memo's content (pinning is a local preference, not a change).
  public var change: MemoChange { MemoChange(title: title, body: body, tags: tags, isPrivate: `private`) }
}

/// `POST /api/conflicts/{id}/resolve`: `{"keep": "A" | "B" | "both"}`.
struct ConflictAnswer: Decodable {
  var keep: String
}

/// `POST /api/sync`: `{"peer", "timeout"}`, or no body: every trusted device, waiting for
/// each as long as `sync` does.
struct SyncRequest: Decodable {
  var peer: String?
  var timeout: Double?
}

/// `POST /api/consent`: `{"scope", "decision"}`; the scope defaults to `local-network`,
/// the decision is `granted`, `denied` or `revoked`.
public struct ConsentAnswer: Decodable, Sendable, Equatable {
  public var scope: ConsentScope
  public var decision: ConsentDecision

  public init(scope: ConsentScope, decision: ConsentDecision) {
    self.scope = scope
    self.decision = decision
  }

  enum CodingKeys: String, CodingKey { case scope, decision }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let scopeName = try container.decodeIfPresent(String.self, forKey: .scope) ?? ConsentScope.localNetwork.rawValue
    guard let scope = ConsentScope(rawValue: scopeName) else {
      throw APICall.invalid("\"scope\" must be local-network, all-service-types or background-sync")
    }
    guard let decision = ConsentDecision(rawValue: try container.decode(String.self, forKey: .decision)) else {
      throw APICall.invalid("\"decision\" must be granted, denied or revoked")
    }
    self.scope = scope
    self.decision = decision
  }
}
