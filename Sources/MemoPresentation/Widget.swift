import MemoCore

/// The memo a widget shows (the pinned one, else the latest), with whatever of it could be
/// read in the current lock state: nil for a field that could not be decrypted.
public struct WidgetMemo: Sendable, Equatable {
  public var id: MemoID
  public var isPrivate: Bool
  public var isPinned: Bool
  public var title: String?
  public var tags: [String]?
  public var updated: Timestamp

  public init(id: MemoID, isPrivate: Bool, isPinned: Bool, title: String?, tags: [String]?, updated: Timestamp) {
    self.id = id
    self.isPrivate = isPrivate
    self.isPinned = isPinned
    self.title = title
    self.tags = tags
    self.updated = updated
  }
}

/// Everything the widget is computed from; gathered by the I/O layer.
public struct WidgetInput: Sendable, Equatable {
  public var lockState: LockState
  public var memo: WidgetMemo?
  /// Trusted peers seen online. Counts are never redacted.
  public var peersOnline: Int
  /// Trusted peers with a live link (`serve`'s live sync) up now.
  public var peersLive: Int
  /// Outbox entries not yet delivered.
  public var outboxWaiting: Int
  /// Memos received from trusted devices, waiting in the inbox. Never redacted.
  public var inboxWaiting: Int
  /// Sealed revisions of notebooks this device relays (it can show nothing else of them).
  public var relayedRevisions: Int
  /// What the running daemon waits for (`serve`'s status: a network nobody allowed, a
  /// consent, the unlock); nil when it does not wait or none runs. This build's own text.
  public var daemonWaitingFor: String?
  public var settings: WidgetSettings

  public init(
    lockState: LockState, memo: WidgetMemo?, peersOnline: Int, outboxWaiting: Int, inboxWaiting: Int = 0,
    relayedRevisions: Int = 0, peersLive: Int = 0, settings: WidgetSettings
  ) {
    self.relayedRevisions = relayedRevisions
    self.peersLive = peersLive
    self.lockState = lockState
    self.memo = memo
    self.peersOnline = peersOnline
    self.outboxWaiting = outboxWaiting
    self.inboxWaiting = inboxWaiting
    self.settings = settings
  }
}

/// One field of the widget: its value, or why it is withheld. A redacted field never
/// carries its value, not even in a part of the output the bar does not display.
public struct WidgetField<Value: Sendable & Equatable>: Sendable, Equatable {
  public let value: Value?
  public let redacted: RedactionReason?

  public static func shown(_ value: Value?) -> WidgetField { WidgetField(value: value, redacted: nil) }
  public static func withheld(_ reason: RedactionReason) -> WidgetField { WidgetField(value: nil, redacted: reason) }
}

/// What the widget shows, after redaction. Renderers only format this; they never see an
/// unredacted value of a redacted field.
public struct WidgetModel: Sendable, Equatable {
  public let lockState: LockState
  /// Whether there is a memo to show at all.
  public let hasMemo: Bool
  public let memoID: MemoID?
  public let pinned: Bool
  public let title: WidgetField<String>
  public let tags: WidgetField<[String]>
  public let peersOnline: Int
  public let peersLive: Int
  public let outboxWaiting: Int
  public let inboxWaiting: Int
  public let relayedRevisions: Int
  /// What the daemon waits for (nil: it does not wait).
  public let daemonWaitingFor: String?

  /// Applies `RedactionPolicy` to every memo field.
  public init(_ input: WidgetInput) {
    daemonWaitingFor = input.daemonWaitingFor
    relayedRevisions = input.relayedRevisions
    lockState = input.lockState
    peersOnline = input.peersOnline
    peersLive = input.peersLive
    outboxWaiting = input.outboxWaiting
    inboxWaiting = input.inboxWaiting
    guard let memo = input.memo else {
      hasMemo = false
      memoID = nil
      pinned = false
      title = .shown(nil)
      tags = .shown(nil)
      return
    }
    hasMemo = true
    func field<V>(_ name: WidgetMemoField, _ value: V?) -> WidgetField<V> {
      if let reason = RedactionPolicy.reason(
        for: name, isPrivate: memo.isPrivate, lockState: input.lockState, settings: input.settings)
      {
        return .withheld(reason)
      }
      // Defence in depth: a value the I/O layer could not read is reported as locked.
      return value.map { .shown($0) } ?? .withheld(.locked)
    }
    let placeholder =
      RedactionPolicy.reason(
        for: .title, isPrivate: memo.isPrivate, lockState: input.lockState, settings: input.settings) == .placeholder
    // Under the placeholder rule not even which memo is shown is revealed.
    memoID = placeholder ? nil : memo.id
    pinned = placeholder ? false : memo.isPinned
    title = field(.title, memo.title)
    tags = field(.tags, memo.tags)
  }

  /// The reasons of every redacted field, for the CSS class of a bar.
  public var isRedacted: Bool { title.redacted != nil || tags.redacted != nil }
}
