import MemoCore
import MemoPresentation
import MemoStore

// The `--json` shapes of the outbox and the inbox (`send`, `outbox`, `inbox`; the page's
// inbox).

/// `inbox --json`, `GET /api/inbox`: the entries, without their text (`accept` makes one a
/// memo to read).
public struct InboxJSON: Encodable, Sendable {
  public struct Entry: Encodable, Sendable {
    /// `device_id`: the sender's compact ID (empty for a row that names no device).
    public let id, from, deviceID, title, received, sent: String
    public let tags: [String]
    enum CodingKeys: String, CodingKey {
      case id, from, title, received, sent, tags
      case deviceID = "device_id"
    }
  }
  public let schema = JSONOutput.schema
  public let entries: [Entry]

  public init(_ entries: [InboxEntry], names: PeerNames) {
    self.entries = entries.map {
      Entry(
        id: $0.id, from: names[$0.sender], deviceID: $0.sender?.compact ?? "", title: $0.memo.title,
        received: TimeText.iso($0.received), sent: TimeText.iso($0.memo.sent), tags: $0.memo.tags)
    }
  }
}

/// `inbox drop --json`, `POST /api/inbox/ID/drop`.
public struct DroppedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let dropped: String

  public init(_ entry: InboxEntry) { dropped = entry.id }
}

/// `outbox --json`, `send --json`: the entries and their states.
public struct OutboxJSON: Encodable, Sendable {
  public struct Entry: Encodable, Sendable {
    /// `device_id`: the recipient's compact ID (empty for a row that names no device).
    public let id, to, deviceID, state, created: String
    public let reason, delivered, expires: String?
    public let attempts: Int
    enum CodingKeys: String, CodingKey {
      case id, to, state, created, reason, delivered, expires, attempts
      case deviceID = "device_id"
    }

    /// `name`: the recipient's name as a person knows it.
    public init(_ entry: OutboxEntry, name: String) {
      var delivered: String?
      if case .delivered(let time) = entry.state { delivered = TimeText.iso(time) }
      id = entry.id
      to = name
      deviceID = entry.recipient?.compact ?? ""
      state = entry.state.name
      created = TimeText.iso(entry.created)
      reason = entry.state.reason
      self.delivered = delivered
      expires = entry.expires.map(TimeText.iso)
      attempts = entry.attempts
    }
  }
  public let schema = JSONOutput.schema
  public let entries: [Entry]

  public init(entries: [Entry]) { self.entries = entries }
}
