import Foundation

/// What a receiver does with memos from one trusted peer (stored in its trust list entry).
public enum ReceivePolicy: String, Codable, Sendable, CaseIterable {
  /// The default: the memo waits in the inbox until `inbox accept` or `inbox drop`.
  case ask
  /// Straight into the memos.
  case accept
  /// Every delivery from this peer is refused.
  case refuse
}

/// Why a receiver refused a delivery: stable codes carried in `refuse` frames.
public enum RefusalReason: String, Codable, Sendable, CaseIterable {
  /// The receiver's policy for this sender is `refuse`.
  case policy
  /// The memo is larger than the receiver accepts.
  case tooLarge = "too-large"
  /// The receiver's inbox holds as many entries from this sender as it allows.
  case inboxFull = "inbox-full"
  /// The payload is not a valid memo.
  case invalid

  /// Shown by the sender.
  public var explanation: String {
    switch self {
    case .policy: "the peer refuses memos from this device"
    case .tooLarge: "the memo is larger than the peer accepts"
    case .inboxFull:
      "the peer's inbox is full (entries from this device await accept or drop there), "
        + "or it took as many memos from this device today as it takes"
    case .invalid: "the peer found the memo invalid"
    }
  }

  /// A refusal that may lift on its own (the peer changes policy, empties its inbox) is
  /// retried; the others fail the entry.
  public var isFinal: Bool { self == .tooLarge || self == .invalid }
}

/// The receiver's limits.
public struct ReceiveLimits: Sendable, Equatable {
  /// Largest accepted memo payload (bytes of its JSON encoding).
  public var maximumSize: Int
  /// Most inbox entries waiting from one sender.
  public var maximumInboxPerPeer: Int
  /// Most memos stored from one sender under the `accept` policy within 24 hours: the
  /// policy skips the inbox, not the bound on what one device can add.
  public var maximumAcceptedPerDay: Int

  public init(maximumSize: Int = 128 * 1024, maximumInboxPerPeer: Int = 1000, maximumAcceptedPerDay: Int = 1000) {
    self.maximumSize = maximumSize
    self.maximumInboxPerPeer = maximumInboxPerPeer
    self.maximumAcceptedPerDay = maximumAcceptedPerDay
  }
}

/// Where a delivered memo goes, or why it is refused.
public enum ReceiveDecision: Equatable, Sendable {
  case inbox
  case memos
  case refuse(RefusalReason)

  /// The receiver's decision for one new entry (a retransmission of an entry already stored
  /// is answered with a receipt before this is asked).
  public static func decide(
    policy: ReceivePolicy?, size: Int, waitingFromSender: Int, acceptedRecently: Int = 0, limits: ReceiveLimits
  ) -> ReceiveDecision {
    let policy = policy ?? .ask
    if policy == .refuse { return .refuse(.policy) }
    if size > limits.maximumSize { return .refuse(.tooLarge) }
    if policy == .accept { return acceptedRecently >= limits.maximumAcceptedPerDay ? .refuse(.inboxFull) : .memos }
    return waitingFromSender >= limits.maximumInboxPerPeer ? .refuse(.inboxFull) : .inbox
  }
}

/// The state of one outbox entry, as stored (the `state` column) and shown.
public enum OutboxState: Equatable, Sendable, CustomStringConvertible {
  case queued
  case waiting(String)
  case sending
  case delivered(Timestamp)
  case expired
  case failed(String)
  case cancelled

  /// Delivery still to be tried.
  public var isPending: Bool {
    switch self {
    case .queued, .waiting, .sending: true
    default: false
    }
  }

  public var name: String {
    switch self {
    case .queued: "queued"
    case .waiting: "waiting"
    case .sending: "sending"
    case .delivered: "delivered"
    case .expired: "expired"
    case .failed: "failed"
    case .cancelled: "cancelled"
    }
  }

  public var reason: String? {
    switch self {
    case .waiting(let reason), .failed(let reason): reason
    default: nil
    }
  }

  /// The column value: the name, then `:` and the reason for waiting and failed. The
  /// delivery time lives in its own column.
  public var stored: String { reason.map { "\(name):\($0)" } ?? name }

  public static func parse(_ stored: String, delivered: Timestamp?) -> OutboxState {
    let parts = stored.split(separator: ":", maxSplits: 1).map(String.init)
    let reason = parts.count > 1 ? parts[1] : ""
    switch parts.first ?? "" {
    case "waiting": return .waiting(reason)
    case "sending": return .sending
    case "delivered": return .delivered(delivered ?? 0)
    case "expired": return .expired
    case "failed": return .failed(reason)
    case "cancelled": return .cancelled
    default: return .queued
    }
  }

  /// Which moves are allowed. Delivered, expired and cancelled are final; `retry` moves a
  /// failed (or expired) entry back to queued.
  public func allows(_ next: OutboxState) -> Bool {
    switch (self, next) {
    case (.delivered, _), (.cancelled, _): false
    case (.failed, .queued), (.expired, .queued): true
    case (.failed, _), (.expired, _): false
    default: true
    }
  }

  public var description: String {
    switch self {
    case .waiting(let reason): "waiting (\(reason))"
    case .failed(let reason): "failed (\(reason))"
    case .delivered(let time): "delivered (\(Self.format(time)))"
    default: name
    }
  }

  static func format(_ time: Timestamp) -> String {
    let formatter = ISO8601DateFormatter()
    return formatter.string(from: Date(timeIntervalSince1970: Double(time) / 1000))
  }
}

/// Retry pauses: exponential from `base`, capped, with jitter so that many senders do not
/// retry in step. The jitter keeps the pause in [delay/2, delay].
public struct DeliveryBackoff: Sendable, Equatable {
  public var base: Double
  public var cap: Double

  public init(base: Double = 1, cap: Double = 30) {
    self.base = base
    self.cap = cap
  }

  /// The un-jittered pause after `failures` consecutive failures (1 or more).
  public func ceiling(afterFailures failures: Int) -> Double {
    let exponent = min(max(failures - 1, 0), 30)
    return min(cap, base * Double(1 << exponent))
  }

  /// The pause, given a random number in [0, 1).
  public func delay(afterFailures failures: Int, random: Double) -> Double {
    let ceiling = ceiling(afterFailures: failures)
    return ceiling / 2 + ceiling / 2 * min(max(random, 0), 1)
  }
}

/// Delivery frame payloads (docs/PROTOCOL.md, "Delivery").
public enum DeliveryMessage {
  /// The memo inside a `deliver` frame, and inside a sealed outbox or inbox entry.
  public struct Content: Codable, Equatable, Sendable {
    public var title: String
    public var body: String
    public var tags: [String]
    public var isPrivate: Bool
    /// When the sender queued it (milliseconds since the epoch).
    public var sent: Timestamp
    /// The sent memo's identity in replication, when a stored memo was sent (not stdin):
    /// the receiver stores it as that memo's revision, so later syncs keep both copies in
    /// step (and concurrent edits become a conflict, not two unrelated memos). Absent in
    /// entries queued before sync existed.
    public var revision: SentRevision?

    public init(
      title: String, body: String, tags: [String], isPrivate: Bool, sent: Timestamp, revision: SentRevision? = nil
    ) {
      self.title = title
      self.body = body
      self.tags = tags
      self.isPrivate = isPrivate
      self.sent = sent
      self.revision = revision
    }

    enum CodingKeys: String, CodingKey {
      case title, body, tags, sent, revision
      case isPrivate = "private"
    }
  }

  /// Where a sent memo stands in its history (docs/PROTOCOL.md, "Delivery").
  public struct SentRevision: Codable, Equatable, Sendable {
    public var memo: String
    public var dotOrigin: String
    public var dotSeq: UInt64
    public var clock: [String: UInt64]
    public var revision: Int64
    public var created: Timestamp
    public var updated: Timestamp

    public init(memo: Memo) {
      self.memo = (memo.conflictOf ?? memo.id).rawValue
      dotOrigin = memo.dot?.origin ?? memo.origin
      dotSeq = memo.dot?.seq ?? 0
      clock = memo.clock.entries
      revision = memo.revision
      created = memo.created
      updated = memo.updated
    }

    enum CodingKeys: String, CodingKey {
      case memo, clock, revision, created, updated
      case dotOrigin = "dot_origin"
      case dotSeq = "dot_seq"
    }
  }

  /// `deliver`: one entry, identified by the sender's entry id (a UUID).
  public struct Deliver: Codable, Equatable, Sendable {
    public var id: String
    public var memo: Content
    public init(id: String, memo: Content) {
      self.id = id
      self.memo = memo
    }
  }

  /// `receipt`: the entry is stored on the receiver (`inbox` or `memos`); `duplicate` when
  /// it had been stored by an earlier delivery whose receipt was lost.
  public struct Receipt: Codable, Equatable, Sendable {
    public var id: String
    public var stored: String
    public var duplicate: Bool
    public init(id: String, stored: String, duplicate: Bool) {
      self.id = id
      self.stored = stored
      self.duplicate = duplicate
    }
  }

  /// `refuse`: not stored, with a reason code.
  public struct Refuse: Codable, Equatable, Sendable {
    public var id: String
    public var reason: String
    public init(id: String, reason: RefusalReason) {
      self.id = id
      self.reason = reason.rawValue
    }
  }

  /// The memo's place in replication, as the sync revision the receiver merges: nil when the
  /// sender did not say (sent from stdin, or queued before sync existed). Checked as a sync
  /// revision is (`SyncRules.checkShape`): a sent revision is merged like one.
  public static func revision(of content: Content) throws(SyncViolation) -> SyncRevision? {
    guard let sent = content.revision, sent.dotSeq > 0 else { return nil }
    guard let memo = MemoID(canonical: sent.memo) else { throw SyncViolation(.malformed, "a memo id that is not one") }
    let clock = try SyncRules.checkedVector(sent.clock, "a sent revision's clock")
    let revision = SyncRevision(
      memo: memo,
      head: HeadSummary(
        dot: Dot(origin: sent.dotOrigin, seq: sent.dotSeq), clock: clock, revision: sent.revision, isDeleted: false),
      created: sent.created, updated: sent.updated, isPrivate: content.isPrivate, title: content.title,
      body: content.body, tags: content.tags)
    try SyncRules.checkShape(revision)
    return revision
  }

  /// The numbers of a `deliver` payload: an entry id of 1–64 bytes, a sending time in range,
  /// and a sent revision as `revision(of:)` checks it. The content itself is validated by
  /// the store (`MemoRules`).
  public static func check(_ deliver: Deliver) throws(SyncViolation) {
    guard !deliver.id.isEmpty, deliver.id.utf8.count <= 64 else {
      throw SyncViolation(.malformed, "an entry id that is empty or longer than 64 bytes")
    }
    try SyncRules.checkTimestamp(deliver.memo.sent, "sent")
    _ = try revision(of: deliver.memo)
  }

  /// The sealed form of a queued memo and the size the receiver checks.
  public static func encode(_ content: Content) -> [UInt8] { PeerMessage.encode(content) }
  public static func decode(_ payload: [UInt8]) -> Content? { PeerMessage.decode(Content.self, from: payload) }
}

/// Parses durations (`send --expires`, `serve --sync-every`): a number with a unit, s, m, h
/// or d (`90s`, `10m`, `2h`, `7d`), at most `maximum` seconds (a year): every caller turns
/// the result into milliseconds on a 64-bit clock, which `1e300s` would overflow.
public enum DurationText {
  /// The longest duration accepted: 366 days.
  public static let maximum: Double = 366 * 86400

  public static func seconds(_ text: String) -> Double? {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
    guard let last = text.last else { return nil }
    let (number, unit) = units[last].map { (String(text.dropLast()), $0) } ?? (text, 1)
    guard let value = Double(number), value > 0, value.isFinite, value * unit <= maximum else { return nil }
    return value * unit
  }
}
