/// One head of a memo as it travels between replicas: its place in history and, unless it
/// is a tombstone, its content. Conflict copies travel as the heads they are, under the
/// memo's own id; each replica derives the copy's row itself.
public struct SyncRevision: Equatable, Sendable {
  public var memo: MemoID
  public var head: HeadSummary
  public var created: Timestamp
  public var updated: Timestamp
  public var isPrivate: Bool
  public var title: String
  public var body: String
  public var tags: [String]
  /// The notebook the revision belongs to (sync version 2 carries it beside the sealed
  /// content; nil only where no notebook applies, as in a delivered memo).
  public var notebook: NotebookID?

  public init(
    memo: MemoID, head: HeadSummary, created: Timestamp, updated: Timestamp, isPrivate: Bool, title: String,
    body: String, tags: [String], notebook: NotebookID? = nil
  ) {
    self.notebook = notebook
    self.memo = memo
    self.head = head
    self.created = created
    self.updated = updated
    self.isPrivate = isPrivate
    self.title = title
    self.body = body
    self.tags = tags
  }
}

/// A replica's sync bookkeeping about one peer's change feed: the peer's replica id (a new
/// id means a new database, so the position starts again) and how far in its feed every
/// change has been received and committed here.
public struct FeedPosition: Codable, Equatable, Sendable {
  public var replica: String
  public var position: UInt64

  public init(replica: String, position: UInt64) {
    self.replica = replica
    self.position = position
  }
}
