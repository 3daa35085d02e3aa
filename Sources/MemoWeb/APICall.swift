import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoSystem

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
  /// The revisions of a memo this device kept (`history --json`).
  case memoHistory(String)
  /// A line diff between two revisions (nil: as `diff` without N or M).
  case diffMemo(String, from: Int64?, to: Int64?)
  /// A line diff from the memo's current revision to its conflict copy's (the conflict view).
  case diffCopy(String, copy: String)
  /// Revision N's content as a new revision (`restore --revision N`).
  case restoreMemo(String, revision: Int64)
  case trash
  case restoreFromTrash(String)
  case peers
  /// An address a person gave a trusted device (HOST[:PORT], as `trust address PEER add`),
  /// by the device's id (or a name, as the command takes).
  case addPeerAddress(peer: String, address: String)
  /// An address taken back (`trust address PEER remove`).
  case removePeerAddress(peer: String, address: String)
  /// Notebooks shared with this device that a person has not taken (by notebook id).
  case invitations
  case acceptInvitation(String)
  case declineInvitation(String)
  case consent
  case recordConsent(ConsentAnswer)
  /// The network this device is on now, allowed (`granted`) or denied on the page
  /// (`network allow|deny`); sent as scope `network` to `POST /api/consent`.
  case decideNetwork(ConsentDecision)
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
  /// The longest address text: longer than any `PeerAddress` takes, so its own reason is
  /// given for most, but never a long text in an error.
  public static let maxAddressBytes = 512

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
    case .memoHistory(let id): return .memoHistory(id)
    case .trash: return .trash
    case .restoreFromTrash(let id): return .restoreFromTrash(id)
    case .invitations: return .invitations
    case .acceptInvitation(let id): return .acceptInvitation(id)
    case .declineInvitation(let id): return .declineInvitation(id)
    case .diffMemo(let id):
      let request: RevisionPair = body.isEmpty ? RevisionPair() : try json(body, contentType)
      for number in [request.from, request.to].compactMap({ $0 }) where number < 1 {
        throw invalid("\"from\" and \"to\" must be revision numbers (1 or more)")
      }
      if let copy = request.copy {
        guard request.from == nil, request.to == nil else {
          throw invalid("\"copy\" goes without \"from\" and \"to\"")
        }
        return .diffCopy(id, copy: copy)
      }
      return .diffMemo(id, from: request.from, to: request.to)
    case .restoreMemo(let id):
      let request: RevisionChoice = try json(body, contentType)
      guard request.revision >= 1 else { throw invalid("\"revision\" must be a revision number (1 or more)") }
      return .restoreMemo(id, revision: request.revision)
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
      let request: ConsentRequest = try json(body, contentType)
      // The network is not one of `consent`'s scopes (ConsentScope(named:) refuses it): it
      // is decided only as `network allow|deny` does, for the network this device is on.
      if request.scope == ConsentScope.network.rawValue {
        guard let decision = request.decision.flatMap(ConsentDecision.init(rawValue:)),
          decision == .granted || decision == .denied
        else { throw invalid("a network's \"decision\" must be granted or denied") }
        return .decideNetwork(decision)
      }
      return .recordConsent(try ConsentAnswer(scopeName: request.scope, decisionName: request.decision))
    case .addPeerAddress(let peer):
      return .addPeerAddress(peer: peer, address: try addressText(body, contentType))
    case .removePeerAddress(let peer):
      return .removePeerAddress(peer: peer, address: try addressText(body, contentType))
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

  /// `{"address": "HOST[:PORT]"}`: the text, checked for what `PeerAddress.parse` does not
  /// tell apart (empty, overlong); the use case says what else is wrong with it.
  static func addressText(_ body: [UInt8], _ contentType: String?) throws -> String {
    let request: AddressRequest = try json(body, contentType)
    let text = request.address.trimmingBlanks()
    guard !text.isEmpty else { throw invalid("\"address\" is empty: give HOST[:PORT]") }
    guard text.utf8.count <= maxAddressBytes else {
      throw MemoPeerError(.tooLarge, "the address is longer than \(maxAddressBytes) bytes")
    }
    return text
  }

  static func json<T: Decodable>(_ body: [UInt8], _ contentType: String?) throws -> T {
    guard mediaType(contentType) == "application/json" else {
      throw MemoPeerError(.invalidInput, "this call takes a JSON body (Content-Type: application/json)")
    }
    do { try DuplicateKeys.check(body) } catch let found as DuplicateKeys.Found {
      throw invalid(found.key.map { "the field \"\($0)\" is given twice" } ?? "a field is given twice")
    } catch {
      throw invalid("the body is not valid JSON")
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
    contentType?.split(separator: ";").first?.trimmingBlanks().lowercased()
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

/// `POST /api/memos/{id}/diff`: `{"from", "to"}`, both optional, or `{"copy"}`: a conflict
/// copy's id, for the diff from the memo to it.
struct RevisionPair: Decodable {
  var from: Int64?
  var to: Int64?
  var copy: String?
}

/// `POST /api/memos/{id}/restore`: `{"revision": N}`.
struct RevisionChoice: Decodable {
  var revision: Int64
}

/// `POST /api/sync`: `{"peer", "timeout"}`, or no body: every trusted device, waiting for
/// each as long as `sync` does.
struct SyncRequest: Decodable {
  var peer: String?
  var timeout: Double?
}

/// `POST /api/peers/{id}/addresses` and `…/addresses/remove`: `{"address": "HOST[:PORT]"}`.
struct AddressRequest: Decodable {
  var address: String
}

/// `POST /api/consent` as sent: the scope (`network` among them) and the decision, both
/// read as text first, so a network decision can be told from a consent scope's.
struct ConsentRequest: Decodable {
  var scope: String?
  var decision: String?
}

/// `POST /api/consent`: `{"scope", "decision"}`; the scope defaults to `local-network`,
/// the decision is `granted`, `denied` or `revoked`. (Scope `network` is `decideNetwork`.)
public struct ConsentAnswer: Decodable, Sendable, Equatable {
  public var scope: ConsentScope
  public var decision: ConsentDecision

  public init(scope: ConsentScope, decision: ConsentDecision) {
    self.scope = scope
    self.decision = decision
  }

  enum CodingKeys: String, CodingKey { case scope, decision }

  /// From the texts sent: a missing scope is `local-network`; a missing decision is refused.
  init(scopeName: String?, decisionName: String?) throws {
    guard let scope = ConsentScope(named: scopeName ?? ConsentScope.localNetwork.rawValue) else {
      throw APICall.invalid("\"scope\" must be local-network, all-service-types, background-sync or network")
    }
    guard let decisionName else { throw APICall.invalid("the field \"decision\" is missing") }
    guard let decision = ConsentDecision(rawValue: decisionName) else {
      throw APICall.invalid("\"decision\" must be granted, denied or revoked")
    }
    self.init(scope: scope, decision: decision)
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try self.init(
      scopeName: try container.decodeIfPresent(String.self, forKey: .scope),
      decisionName: try container.decode(String.self, forKey: .decision))
  }
}

/// A check JSONDecoder does not make: no object has the same key twice (`{"body": "a",
/// "body": "b"}`), which two parsers could read two ways. Keys are compared after their
/// escapes are decoded (`"b\u006fdy"` is `"body"`); nesting is bounded. Only the structure
/// is read here; JSONDecoder then decodes (and validates) the values.
enum DuplicateKeys {
  static let maxDepth = 64

  struct Found: Error {
    /// The key, when it is a plain short name (never memo text).
    let key: String?
  }

  struct Malformed: Error {}

  static func check(_ bytes: [UInt8]) throws {
    var index = 0
    try value(bytes, &index, depth: 0)
  }

  private static func skipSpace(_ bytes: [UInt8], _ index: inout Int) {
    while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
  }

  private static func value(_ bytes: [UInt8], _ index: inout Int, depth: Int) throws {
    guard depth <= maxDepth else { throw Malformed() }
    skipSpace(bytes, &index)
    guard index < bytes.count else { throw Malformed() }
    switch bytes[index] {
    case UInt8(ascii: "{"):
      index += 1
      var keys = Set<[UInt8]>()
      skipSpace(bytes, &index)
      if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
        index += 1
        return
      }
      while true {
        skipSpace(bytes, &index)
        let key = try string(bytes, &index)
        guard keys.insert(key).inserted else {
          let name = String(decoding: key, as: UTF8.self)
          throw Found(
            key: name.count <= 32 && name.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") } ? name : nil)
        }
        skipSpace(bytes, &index)
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Malformed() }
        index += 1
        try value(bytes, &index, depth: depth + 1)
        skipSpace(bytes, &index)
        guard index < bytes.count else { throw Malformed() }
        if bytes[index] == UInt8(ascii: ",") {
          index += 1
          continue
        }
        guard bytes[index] == UInt8(ascii: "}") else { throw Malformed() }
        index += 1
        return
      }
    case UInt8(ascii: "["):
      index += 1
      skipSpace(bytes, &index)
      if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
        index += 1
        return
      }
      while true {
        try value(bytes, &index, depth: depth + 1)
        skipSpace(bytes, &index)
        guard index < bytes.count else { throw Malformed() }
        if bytes[index] == UInt8(ascii: ",") {
          index += 1
          continue
        }
        guard bytes[index] == UInt8(ascii: "]") else { throw Malformed() }
        index += 1
        return
      }
    case UInt8(ascii: "\""):
      _ = try string(bytes, &index)
    default:
      // A number, true, false or null: its characters, checked by JSONDecoder afterwards.
      let start = index
      while index < bytes.count, !",]} \t\r\n".utf8.contains(bytes[index]) { index += 1 }
      guard index > start else { throw Malformed() }
    }
  }

  /// A string's bytes with escapes decoded (`\u` as UTF-8), the index after its quote.
  private static func string(_ bytes: [UInt8], _ index: inout Int) throws -> [UInt8] {
    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Malformed() }
    index += 1
    var result: [UInt8] = []
    var pendingHigh: UInt32?
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        if let high = pendingHigh { append(high, to: &result) }
        return result
      case UInt8(ascii: "\\"):
        guard index < bytes.count else { throw Malformed() }
        let escape = bytes[index]
        index += 1
        if escape == UInt8(ascii: "u") {
          guard index + 4 <= bytes.count,
            let unit = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
          else { throw Malformed() }
          index += 4
          if let high = pendingHigh {
            pendingHigh = nil
            if (0xDC00...0xDFFF).contains(unit) {
              append(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00), to: &result)
              continue
            }
            append(high, to: &result)
          }
          if (0xD800...0xDBFF).contains(unit) { pendingHigh = unit } else { append(unit, to: &result) }
          continue
        }
        if let high = pendingHigh {
          append(high, to: &result)
          pendingHigh = nil
        }
        let simple: [UInt8: UInt8] = [
          UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
          UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        guard let decoded = simple[escape] else { throw Malformed() }
        result.append(decoded)
      default:
        if let high = pendingHigh {
          append(high, to: &result)
          pendingHigh = nil
        }
        result.append(byte)
      }
    }
    throw Malformed()
  }

  /// A code point as UTF-8 (a lone surrogate as U+FFFD, as JSONDecoder would refuse it anyway).
  private static func append(_ scalar: UInt32, to result: inout [UInt8]) {
    let value = Unicode.Scalar(scalar) ?? "\u{FFFD}"
    result.append(contentsOf: Array(String(Character(value)).utf8))
  }
}
