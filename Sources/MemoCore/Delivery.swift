import FoundationEssentials

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
    Date(timeIntervalSince1970: Double(time) / 1000).formatted(Date.ISO8601FormatStyle())
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
