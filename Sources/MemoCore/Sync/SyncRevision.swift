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
  /// The record it arrived as (sync version 3: sealed and signed by its author), kept so
  /// it is stored and forwarded exactly as signed; nil for a revision from before signing.
  public var record: SealedRecord?

  public init(
    memo: MemoID, head: HeadSummary, created: Timestamp, updated: Timestamp, isPrivate: Bool, title: String,
    body: String, tags: [String], notebook: NotebookID? = nil, record: SealedRecord? = nil
  ) {
    self.notebook = notebook
    self.record = record
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
  public var replica: ReplicaID
  public var position: UInt64

  public init(replica: ReplicaID, position: UInt64) {
    self.replica = replica
    self.position = position
  }
}
