import FoundationEssentials
import MemoCore
import MemoPresentation
import MemoStore

// The `--json` shapes of memos, which the web API answers with too: a stable, documented
// interface (docs/CLI.md, docs/WEB.md). Fields are only ever added; `schema` changes if one
// must change.

/// The device that signed a revision: its ID, its name here (null when it has none) and
/// whether it is this device. A revision from before signing has no author (`null`).
public struct AuthorJSON: Encodable, Sendable, Equatable {
  public let deviceID: String
  public let name: String?
  public let thisDevice: Bool

  enum CodingKeys: String, CodingKey {
    case name
    case deviceID = "device_id"
    case thisDevice = "this_device"
  }

  public init?(_ id: DeviceID?, names: Names?) {
    guard let id else { return nil }
    deviceID = id.compact
    thisDevice = names?.me == id
    name = thisDevice ? nil : names?.rawName(id)
  }
}

/// One memo in a list, or (with `body`) the memo of `show`.
public struct MemoSummaryJSON: Encodable, Sendable {
  public let id: String
  public let title: String
  public let tags: [String]
  public let created: String
  public let updated: String
  public let `private`: Bool
  public let revision: Int64
  public let body: String?
  public let pinned: Bool?
  /// Fields withheld because the node is locked (`{"title": "locked", "tags": "locked"}`);
  /// their values are then empty. Absent when nothing is withheld.
  public let redacted: [String: String]?
  /// On a conflict copy: the id of the memo it is a concurrent version of.
  public let conflictOf: String?
  /// On `list`: the memo has conflict copies or an overruled delete.
  public let conflict: Bool?
  /// The notebook's name here (null when this device has no name for it) and its id.
  public let notebook: String?
  public let notebookID: String?
  /// Who signed this revision (null: unsigned, from before sync version 3).
  public let author: AuthorJSON?

  enum CodingKeys: String, CodingKey {
    case id, title, tags, created, updated, `private`, revision, body, pinned, redacted, conflict, notebook, author
    case conflictOf = "conflict_of"
    case notebookID = "notebook_id"
  }

  public init(_ memo: MemoSummary, body: String? = nil, conflictOf: MemoID? = nil, names: Names? = nil) {
    id = memo.id.rawValue
    title = memo.title
    tags = memo.tags
    created = TimeText.iso(memo.created)
    updated = TimeText.iso(memo.updated)
    self.private = memo.isPrivate
    revision = memo.revision
    self.body = body
    pinned = nil
    redacted = nil
    self.conflictOf = conflictOf?.rawValue
    conflict = nil
    notebook = names?.notebook(memo.notebook)
    notebookID = memo.notebook?.rawValue
    author = AuthorJSON(memo.author, names: names)
  }

  public init(_ memo: MemoListing, names: Names? = nil) {
    id = memo.id.rawValue
    title = memo.title ?? ""
    tags = memo.tags ?? []
    created = TimeText.iso(memo.created)
    updated = TimeText.iso(memo.updated)
    self.private = memo.isPrivate
    revision = memo.revision
    body = nil
    pinned = memo.isPinned
    var withheld: [String: String] = [:]
    if memo.title == nil { withheld["title"] = RedactionReason.locked.rawValue }
    if memo.tags == nil { withheld["tags"] = RedactionReason.locked.rawValue }
    redacted = withheld.isEmpty ? nil : withheld
    conflictOf = memo.conflictOf?.rawValue
    conflict = memo.hasConflict
    notebook = names?.notebook(memo.notebook)
    notebookID = memo.notebook?.rawValue
    author = AuthorJSON(memo.author, names: names)
  }
}

/// `list --json`, `search --json`; `GET /api/memos` and `/api/search`.
public struct MemoListJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memos: [MemoSummaryJSON]
  /// Present on `list`: whether the node was locked (and so some fields are withheld).
  public var locked: Bool?
  /// Notebooks this device relays and cannot read: counts only (absent when none).
  public var relayed: [RelayedJSON]?

  public init(memos: [MemoSummaryJSON], locked: Bool? = nil, relayed: [RelayedJSON]? = nil) {
    self.memos = memos
    self.locked = locked
    self.relayed = relayed
  }

  /// `list`: the memos as the lock state lets them be read, and the relayed notebooks.
  public init(_ list: MemoList, names: Names) {
    self.init(
      memos: list.memos.map { .init($0, names: names) }, locked: list.locked,
      relayed: list.relayed.isEmpty ? nil : list.relayed.map { .init($0, names: names) })
  }

  /// `search`: the memos found, and the relayed notebooks it could not search.
  public init(_ found: MemoSearch, names: Names) {
    self.init(
      memos: found.memos.map { .init($0, names: names) },
      relayed: found.relayed.isEmpty ? nil : found.relayed.map { .init($0, names: names) })
  }
}

/// `MemoListJSON` written as the memos are read, one element at a time: the same bytes as
/// the whole object encoded by `JSONOutput.encode` (keys sorted: `locked`, `memos`,
/// `relayed`, `schema`), without holding the array. The opening is written with the first
/// memo or at `finish`, so an error before any memo leaves nothing on stdout.
public struct MemoListJSONWriter {
  private let encoder = JSONOutput.makeEncoder()
  private let locked: Bool?
  private let write: ([UInt8]) -> Void
  private var opened = false

  /// `locked` as `MemoListJSON.locked` (nil: absent, as for `search`); `write` gets the bytes.
  public init(locked: Bool?, write: @escaping ([UInt8]) -> Void) {
    self.locked = locked
    self.write = write
  }

  public mutating func add(_ memo: MemoSummaryJSON) {
    write((opened ? [UInt8(ascii: ",")] : opening()) + JSONOutput.encodeFragment(memo, with: encoder))
    opened = true
  }

  /// Closes the array and the object, with `relayed` as `MemoListJSON.relayed`.
  public mutating func finish(relayed: [RelayedJSON]?) {
    var tail = opened ? [] : opening()
    opened = true
    tail += Array("]".utf8)
    if let relayed { tail += Array(#","relayed":"#.utf8) + JSONOutput.encodeFragment(relayed, with: encoder) }
    tail += Array(#","schema":\#(JSONOutput.schema)}"#.utf8) + [0x0A]
    write(tail)
  }

  private func opening() -> [UInt8] {
    Array(("{" + (locked.map { #""locked":\#($0),"# } ?? "") + #""memos":["#).utf8)
  }
}

/// One memo: `new`, `show`, `edit`, `move`, `inbox accept` with `--json`, and the page's.
public struct MemoJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memo: MemoSummaryJSON

  public init(memo: MemoSummaryJSON) { self.memo = memo }
}

/// `delete --json`, `DELETE /api/memos/ID`.
public struct DeletedMemoJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let deleted: String

  public init(deleted: MemoID) { self.deleted = deleted.rawValue }
}

/// A pin changed while the node is locked (the pin is not content): the page's answer.
public struct PinnedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memo: String
  public let pinned: Bool

  public init(memo: MemoID, pinned: Bool) {
    self.memo = memo.rawValue
    self.pinned = pinned
  }
}
