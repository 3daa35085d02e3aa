/// Milliseconds since the Unix epoch, UTC. Stored as an integer so values compare and
/// round-trip exactly across devices and SQLite.
public typealias Timestamp = Int64

/// One memo as the store holds it, decrypted. Sync fields are present from the first
/// schema so replication (a later issue) needs no lossy migration.
public struct Memo: Sendable, Equatable {
  public var id: MemoID
  public var title: String
  public var body: String
  /// Normalised tags (see `MemoRules.normalizeTags`), in the order given.
  public var tags: [String]
  public var created: Timestamp
  public var updated: Timestamp
  /// Marked private: hidden from widgets and lock screens (privacy issue).
  public var isPrivate: Bool
  /// Increases by one on every change; bound into every sealed field's additional data.
  public var revision: Int64
  /// Who made this revision: the replica of its dot, or the device that delivered it.
  public var origin: MemoOrigin
  /// A tombstone: content wiped, kept so deletion can replicate.
  public var isDeleted: Bool
  /// This revision's identity in replication (nil until the store assigns one).
  public var dot: Dot?
  /// Every revision of this memo this one has seen (docs/PROTOCOL.md, "Sync").
  public var clock: VersionVector
  /// Set on a conflict copy: the memo it is a concurrent version of.
  public var conflictOf: MemoID?
  /// The notebook this revision belongs to (nil: the store's default, for a memo not
  /// stored yet).
  public var notebook: NotebookID?
  /// The revision as it travels (sync version 3): sealed under its notebook key and
  /// signed by its author. Nil for a revision from before signing, and for one not yet
  /// stored.
  public var record: SealedRecord?

  public init(
    id: MemoID, title: String, body: String, tags: [String], created: Timestamp,
    updated: Timestamp, isPrivate: Bool, revision: Int64, origin: MemoOrigin, isDeleted: Bool = false,
    dot: Dot? = nil, clock: VersionVector = VersionVector(), conflictOf: MemoID? = nil, notebook: NotebookID? = nil,
    record: SealedRecord? = nil
  ) {
    self.notebook = notebook
    self.record = record
    self.dot = dot
    self.clock = clock
    self.conflictOf = conflictOf
    self.id = id
    self.title = title
    self.body = body
    self.tags = tags
    self.created = created
    self.updated = updated
    self.isPrivate = isPrivate
    self.revision = revision
    self.origin = origin
    self.isDeleted = isDeleted
  }

  public var summary: MemoSummary {
    MemoSummary(
      id: id, title: title, tags: tags, created: created, updated: updated,
      isPrivate: isPrivate, revision: revision, notebook: notebook, author: record?.author)
  }
}

/// A revision's record as its author sealed and signed it (docs/design/sync-v3.md,
/// section 3): kept beside the readable copy so it is forwarded exactly as signed.
public struct SealedRecord: Sendable, Equatable {
  /// The notebook key generation that sealed it.
  public var keyID: String
  public var sealed: [UInt8]
  /// The author's Ed25519 signature; nil for a record from before signing.
  public var signature: [UInt8]?
  /// The device bound to the revision's replica: who wrote it.
  public var author: DeviceID?

  public init(keyID: String, sealed: [UInt8], signature: [UInt8]?, author: DeviceID?) {
    self.keyID = keyID
    self.sealed = sealed
    self.signature = signature
    self.author = author
  }
}

/// What `list` and `search` return: everything but the body, which is never decrypted
/// for a listing.
public struct MemoSummary: Sendable, Equatable {
  public var id: MemoID
  public var title: String
  public var tags: [String]
  public var created: Timestamp
  public var updated: Timestamp
  public var isPrivate: Bool
  public var revision: Int64
  public var notebook: NotebookID?
  /// The device that signed this revision (nil: unsigned, from before sync version 3).
  public var author: DeviceID?

  public init(
    id: MemoID, title: String, tags: [String], created: Timestamp, updated: Timestamp,
    isPrivate: Bool, revision: Int64, notebook: NotebookID? = nil, author: DeviceID? = nil
  ) {
    self.author = author
    self.notebook = notebook
    self.id = id
    self.title = title
    self.tags = tags
    self.created = created
    self.updated = updated
    self.isPrivate = isPrivate
    self.revision = revision
  }
}

/// A memo the user is creating, before it has an id or times.
public struct MemoDraft: Sendable, Equatable {
  public var title: String
  public var body: String
  public var tags: [String]
  public var isPrivate: Bool

  public init(title: String, body: String, tags: [String] = [], isPrivate: Bool = false) {
    self.title = title
    self.body = body
    self.tags = tags
    self.isPrivate = isPrivate
  }
}

/// A change to an existing memo; nil fields stay as they are.
public struct MemoChange: Sendable, Equatable {
  public var title: String?
  public var body: String?
  public var tags: [String]?
  public var isPrivate: Bool?

  public init(title: String? = nil, body: String? = nil, tags: [String]? = nil, isPrivate: Bool? = nil) {
    self.title = title
    self.body = body
    self.tags = tags
    self.isPrivate = isPrivate
  }

  public var isEmpty: Bool { title == nil && body == nil && tags == nil && isPrivate == nil }
}

/// A memo as a listing or the widget shows it, in any lock state: a field that could not be
/// decrypted (the node is locked; tags always, titles of private memos) is nil.
public struct MemoListing: Sendable, Equatable {
  public var id: MemoID
  public var title: String?
  public var tags: [String]?
  public var created: Timestamp
  public var updated: Timestamp
  public var isPrivate: Bool
  /// Pinned for the widget (a local preference, not part of the memo's revisions).
  public var isPinned: Bool
  public var revision: Int64
  /// Set on a conflict copy: the memo it is a concurrent version of.
  public var conflictOf: MemoID?
  /// The memo has conflict copies, or a delete on another device lost to an edit: `conflicts`
  /// lists it until a person resolves it.
  public var hasConflict: Bool
  public var notebook: NotebookID?
  /// The device that signed this revision (nil: unsigned, from before sync version 3).
  public var author: DeviceID?

  public init(
    id: MemoID, title: String?, tags: [String]?, created: Timestamp, updated: Timestamp, isPrivate: Bool,
    isPinned: Bool, revision: Int64, conflictOf: MemoID? = nil, hasConflict: Bool = false,
    notebook: NotebookID? = nil, author: DeviceID? = nil
  ) {
    self.author = author
    self.notebook = notebook
    self.conflictOf = conflictOf
    self.hasConflict = hasConflict
    self.id = id
    self.title = title
    self.tags = tags
    self.created = created
    self.updated = updated
    self.isPrivate = isPrivate
    self.isPinned = isPinned
    self.revision = revision
  }
}
