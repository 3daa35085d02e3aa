import MemoCore
import MemoNode
import MemoPresentation
import MemoProtocol
import MemoStore

// The `--json` shapes of syncing: `sync`, `peers`, `conflicts` (and the page's Sync button,
// peers and conflicts, which answer with the same).

/// `sync --json`, and the result of the page's sync (`GET /api/sync`).
public struct SyncJSON: Encodable, Sendable {
  public struct Outcome: Encodable, Sendable {
    public let applied: Int
    public let conflicts: Int
    public let heldDeletes: Int
    enum CodingKeys: String, CodingKey {
      case applied, conflicts
      case heldDeletes = "held_deletes"
    }
    init(_ outcome: SyncMessage.Outcome) {
      applied = outcome.applied
      conflicts = outcome.conflicts
      heldDeletes = outcome.heldDeletes
    }
  }
  public struct Peer: Encodable, Sendable {
    public let name: String
    public let deviceID: String
    public let status: String
    public let received: Outcome?
    public let sent: Outcome?
    public let sentRevisions: Int?
    public let error: ErrorJSON.Detail?
    /// Finding the device and the TLS handshake; then the sync over the ready connection.
    public let connectMilliseconds: Double?
    public let sessionMilliseconds: Double?
    /// TLS record bytes of the sync itself, both directions.
    public let sessionBytes: UInt64?
    /// Notebooks this sync brought invitations to (ids), and the membership ops of this
    /// peer's that were kept aside.
    public let invited: [String]?
    public let opsRefused: Int?
    enum CodingKeys: String, CodingKey {
      case name, status, received, sent, error, invited
      case opsRefused = "ops_refused"
      case deviceID = "device_id"
      case sentRevisions = "sent_revisions"
      case connectMilliseconds = "connect_ms"
      case sessionMilliseconds = "session_ms"
      case sessionBytes = "session_bytes"
    }
    init(_ result: PeerSync.PeerResult, wording: (Remedy) -> String?) {
      name = result.peer.name
      deviceID = result.peer.deviceID.compact
      received = result.report.map { Outcome($0.received) }
      sent = result.report.map { Outcome($0.sent) }
      sentRevisions = result.report?.sentRevisions
      connectMilliseconds = result.connectSeconds.map { ($0 * 100_000).rounded() / 100 }
      sessionMilliseconds = result.sessionSeconds.map { ($0 * 100_000).rounded() / 100 }
      sessionBytes = result.sessionBytes
      invited = result.report.map { $0.ops.invited.map(\.rawValue) }
      opsRefused = result.report?.ops.refused
      if let report = result.report {
        status = report.received.heldDeletes > 0 ? "held" : "synced"
      } else {
        status = result.error?.code.rawValue ?? "failed"
      }
      // dns_sd's code stays out of a sync's per-device errors, as it always has.
      error = result.error.map {
        let detail = ErrorJSON.Detail($0, wording: wording)
        return ErrorJSON.Detail(
          code: detail.code, message: detail.message, hint: detail.hint, remedy: detail.remedy, dnsServiceCode: nil)
      }
    }
  }
  public let schema = JSONOutput.schema
  public let peers: [Peer]
  public let received: Int
  public let sent: Int
  public let conflicts: Int

  /// `wording` words each device's error's remedy for the reader: the command line's or the
  /// page's.
  public init(_ results: [PeerSync.PeerResult], wording: (Remedy) -> String?) {
    peers = results.map { Peer($0, wording: wording) }
    received = results.compactMap(\.report).reduce(0) { $0 + $1.received.applied }
    sent = results.compactMap(\.report).reduce(0) { $0 + $1.sentRevisions }
    // A conflict made by this sync shows on both sides (each receives the other's
    // version): counted once, here.
    conflicts = results.compactMap(\.report).reduce(0) { $0 + $1.received.conflicts }
  }
}

/// `peers --json`, `GET /api/peers`.
public struct PeersJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let peers: [PeerJSON]

  public init(_ rows: [PeerRow]) { peers = rows.map(PeerJSON.init) }
}

/// One trusted device's sync state.
public struct PeerJSON: Encodable, Sendable {
  public let name: String
  public let deviceID: String
  public let lastSeen: String?
  public let lastSynced: String?
  public let pending: Int
  public let heldDeletes: Int
  /// Whether the daemon has a live link with it now.
  public let connectedLive: Bool
  /// The last sync data this device refused from it (null: none).
  public let lastRefusal: RefusalJSON?
  public let addresses: PeerAddressesJSON
  enum CodingKeys: String, CodingKey {
    case name, pending, addresses
    case connectedLive = "connected_live"
    case lastRefusal = "last_refusal"
    case deviceID = "device_id"
    case lastSeen = "last_seen"
    case lastSynced = "last_synced"
    case heldDeletes = "held_deletes"
  }

  public init(_ row: PeerRow) {
    name = row.peer.name
    deviceID = row.peer.deviceID.compact
    lastSeen = row.seen.map(TimeText.iso)
    lastSynced = row.synced.map(TimeText.iso)
    pending = row.pending
    heldDeletes = row.heldDeletes
    connectedLive = row.live
    lastRefusal = row.lastRefusal.map(RefusalJSON.init)
    addresses = PeerAddressesJSON(row.peer)
  }
}

/// Sync data refused from a peer: when, the `sync-refuse` code, what it was (`what`, the
/// code in words) and the evidence (`detail`: why it is impossible, in this program's words).
public struct RefusalJSON: Encodable, Sendable {
  public let at: String
  public let reason: String
  public let what: String
  public let detail: String

  init(_ record: SyncRefusalRecord) {
    at = TimeText.iso(record.at)
    reason = record.reason
    what = record.what
    detail = record.detail
  }
}

/// `conflicts --json`, `GET /api/conflicts`.
public struct ConflictsJSON: Encodable, Sendable {
  public struct Entry: Encodable, Sendable {
    public let memo: String
    public let title: String
    public let copies: [MemoSummaryJSON]
    public let overruledDelete: Bool
    /// Who signed the memo's current revision (each copy carries its own `author`).
    public let author: AuthorJSON?
    enum CodingKeys: String, CodingKey {
      case memo, title, copies, author
      case overruledDelete = "overruled_delete"
    }
    init(_ entry: ConflictEntry, names: Names?) {
      memo = entry.memo.rawValue
      title = entry.title
      copies = entry.copies.map { MemoSummaryJSON($0, conflictOf: entry.memo, names: names) }
      overruledDelete = entry.overruledDelete
      author = AuthorJSON(entry.author, names: names)
    }
  }
  public let schema = JSONOutput.schema
  public let conflicts: [Entry]

  public init(_ entries: [ConflictEntry], names: Names? = nil) { conflicts = entries.map { Entry($0, names: names) } }
}

/// `conflicts resolve --json`, `POST /api/conflicts/ID/resolve`.
public struct ResolvedJSON: Encodable, Sendable {
  public let schema = JSONOutput.schema
  public let memo: String
  public let deleted: Bool
  public let newMemos: [String]
  enum CodingKeys: String, CodingKey {
    case schema, memo, deleted
    case newMemos = "new_memos"
  }

  public init(_ resolution: ConflictResolution) {
    memo = resolution.memo.rawValue
    deleted = resolution.deleted
    newMemos = resolution.newMemos.map(\.rawValue)
  }
}
