import FoundationEssentials
import MemoCore
import MemoPresentation

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
  private var memos: MemoJSONBytes
  /// One memo's bytes, the storage reused from memo to memo.
  private var scratch: [UInt8] = []

  /// `locked` as `MemoListJSON.locked` (nil: absent, as for `search`); `write` gets the
  /// bytes (an array it must not keep: it is reused); `names` as `MemoSummaryJSON`'s.
  public init(locked: Bool?, names: Names? = nil, write: @escaping ([UInt8]) -> Void) {
    self.locked = locked
    self.write = write
    memos = MemoJSONBytes(names: names)
  }

  public mutating func add(_ memo: MemoSummaryJSON) {
    startMemo()
    scratch += JSONOutput.encodeFragment(memo, with: encoder)
    write(scratch)
  }

  /// `add(MemoSummaryJSON(memo, names: names))`, written without the encoder.
  public mutating func add(_ memo: MemoListing) {
    startMemo()
    memos.append(memo, to: &scratch)
    write(scratch)
  }

  /// `add(MemoSummaryJSON(memo, names: names))`, written without the encoder.
  public mutating func add(_ memo: MemoSummary) {
    startMemo()
    memos.append(memo, to: &scratch)
    write(scratch)
  }

  private mutating func startMemo() {
    scratch.removeAll(keepingCapacity: true)
    if opened { scratch.append(UInt8(ascii: ",")) } else { scratch += opening() }
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

/// A memo of `list --json` or `search --json` as bytes: exactly what the encoder makes of
/// `MemoSummaryJSON(memo, names: names)` (keys sorted, absent when nil), written directly,
/// as JSONEncoder took two thirds of listing 100,000 memos; tests compare the two. The
/// author's and the notebook's parts are made once per run of memos that share them.
struct MemoJSONBytes {
  let names: Names?
  private var author: (device: DeviceID, bytes: [UInt8])?
  private var notebook: (id: NotebookID, bytes: [UInt8])?

  init(names: Names?) { self.names = names }

  /// `MemoSummaryJSON(memo, names: names)`: author, conflict, conflict_of, created, id,
  /// notebook, notebook_id, pinned, private, redacted, revision, tags, title, updated.
  mutating func append(_ memo: MemoListing, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "{"))
    appendAuthor(memo.author, to: &bytes)
    bytes += (memo.hasConflict ? #""conflict":true,"# : #""conflict":false,"#).utf8
    if let original = memo.conflictOf {
      bytes += #""conflict_of":"#.utf8
      JSONOutput.appendString(original.rawValue, to: &bytes)
      bytes.append(UInt8(ascii: ","))
    }
    appendMiddle(id: memo.id, created: memo.created, notebook: memo.notebook, to: &bytes)
    bytes += (memo.isPinned ? #""pinned":true,"# : #""pinned":false,"#).utf8
    bytes += (memo.isPrivate ? #""private":true,"# : #""private":false,"#).utf8
    switch (memo.title == nil, memo.tags == nil) {
    case (true, true): bytes += #""redacted":{"tags":"locked","title":"locked"},"#.utf8
    case (true, false): bytes += #""redacted":{"title":"locked"},"#.utf8
    case (false, true): bytes += #""redacted":{"tags":"locked"},"#.utf8
    case (false, false): break
    }
    appendEnd(
      revision: memo.revision, tags: memo.tags ?? [], title: memo.title ?? "", updated: memo.updated, to: &bytes)
  }

  /// `MemoSummaryJSON(memo, names: names)` of a memo found by `search`: author, created, id,
  /// notebook, notebook_id, private, revision, tags, title, updated.
  mutating func append(_ memo: MemoSummary, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "{"))
    appendAuthor(memo.author, to: &bytes)
    appendMiddle(id: memo.id, created: memo.created, notebook: memo.notebook, to: &bytes)
    bytes += (memo.isPrivate ? #""private":true,"# : #""private":false,"#).utf8
    appendEnd(revision: memo.revision, tags: memo.tags, title: memo.title, updated: memo.updated, to: &bytes)
  }

  /// `"author":{…},`, nothing for an unsigned revision.
  private mutating func appendAuthor(_ device: DeviceID?, to bytes: inout [UInt8]) {
    guard let device else { return }
    if author?.device != device, let json = AuthorJSON(device, names: names) {
      var part = Array(#""author":{"device_id":"#.utf8)
      JSONOutput.appendString(json.deviceID, to: &part)
      if let name = json.name {
        part += #","name":"#.utf8
        JSONOutput.appendString(name, to: &part)
      }
      part += (json.thisDevice ? #","this_device":true},"# : #","this_device":false},"#).utf8
      author = (device, part)
    }
    bytes += author!.bytes
  }

  /// `"created":…,"id":…,` and the notebook's name and id where there are.
  private mutating func appendMiddle(id: MemoID, created: Timestamp, notebook: NotebookID?, to bytes: inout [UInt8]) {
    bytes += #""created":""#.utf8
    TimeText.appendISO(created, to: &bytes)
    bytes += #"","id":"#.utf8
    JSONOutput.appendString(id.rawValue, to: &bytes)
    bytes.append(UInt8(ascii: ","))
    guard let id = notebook else { return }
    if self.notebook?.id != id {
      var part: [UInt8] = []
      if let name = names?.notebook(id) {
        part += #""notebook":"#.utf8
        JSONOutput.appendString(name, to: &part)
        part.append(UInt8(ascii: ","))
      }
      part += #""notebook_id":"#.utf8
      JSONOutput.appendString(id.rawValue, to: &part)
      part.append(UInt8(ascii: ","))
      self.notebook = (id, part)
    }
    bytes += self.notebook!.bytes
  }

  /// `"revision":…,"tags":[…],"title":…,"updated":…}`.
  private func appendEnd(revision: Int64, tags: [String], title: String, updated: Timestamp, to bytes: inout [UInt8]) {
    bytes += #""revision":"#.utf8
    bytes += String(revision).utf8
    bytes += #","tags":["#.utf8
    for (index, tag) in tags.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      JSONOutput.appendString(tag, to: &bytes)
    }
    bytes += #"],"title":"#.utf8
    JSONOutput.appendString(title, to: &bytes)
    bytes += #","updated":""#.utf8
    TimeText.appendISO(updated, to: &bytes)
    bytes += #""}"#.utf8
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
