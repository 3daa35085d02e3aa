import FoundationEssentials
import MemoCore
import MemoNode
import MemoProtocol
import MemoStore
import MemoVault

/// What `send` sends: a memo of this node, or text read now (`send -`).
public enum SendSource {
  /// A memo, by id or unique prefix: sent with its revision, so the receiver can tell it.
  case memo(String)
  /// Text that becomes a memo on the other side (its first line the title), never private.
  case text(() throws -> String)
}

/// How a `send` ended: the outbox entry as it stands, and what needs a person.
public struct SendOutcome: Sendable {
  public var entry: OutboxEntry
  public var peer: TrustedPeer
  /// Waited for and not delivered (status 17, it stays queued), or failed.
  public var problem: MemoPeerError?
}

/// Sending memos to trusted devices (`send`, `outbox`) and the memos received from them
/// (`inbox`, and the page's inbox).
public struct DeliveryUseCases {
  let app: App

  /// Queues `source`, sealed, in the outbox for the trusted device `peer` names, dropped if
  /// still undelivered after `expiresAfter` seconds. With `wait` it then delivers now (with
  /// whatever else waits for that device) for up to `wait` seconds, asking `prompt` for
  /// consent first when someone can answer (and the text did not come from stdin); `note`
  /// hears the states on the way (device names and states only).
  public func send(
    _ source: SendSource, to reference: String, expiresAfter: Double? = nil, wait: Double? = nil,
    prompt: any Prompt, note: @escaping @Sendable (String) -> Void = { _ in }
  ) throws -> SendOutcome {
    let trust = app.trustStore
    let peer = try trust.load().find(reference)
    let expires = expiresAfter.map { app.now + Timestamp($0 * 1000) }
    let store = try app.store()
    let content: DeliveryMessage.Content
    let fromStdin: Bool
    switch source {
    case .text(let read):
      fromStdin = true
      let valid = try MemoRules.validated(MemoDraft(title: "", body: try read()))
      content = DeliveryMessage.Content(
        title: valid.title, body: valid.body, tags: valid.tags, isPrivate: false, sent: app.now)
    case .memo(let reference):
      fromStdin = false
      let memo = try store.memo(try store.resolve(reference))
      content = DeliveryMessage.Content(
        title: memo.title, body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate, sent: app.now,
        revision: try store.sentRevision(of: memo))
    }
    let id = try store.queueForDelivery(content, to: peer.deviceID, expires: expires, now: app.now)
    if let wait {
      let gate = try app.consent.gate()
      if prompt.canAsk && !fromStdin {
        try ConsentUseCases.obtain(for: .memoPeerBrowse, gate: gate, prompt: prompt, now: app.now)
      }
      try deliverNow(id, to: peer, within: wait, gate: gate, trust: trust, note: note)
    }
    let entry = try store.resolveOutboxEntry(id)
    var problem: MemoPeerError?
    if wait != nil, entry.state.isPending {
      problem = MemoPeerError(
        .connection, "not delivered yet: \(Self.display(entry.state)); it stays in the outbox",
        hint: "`memo-peer serve` delivers it when \(peer.displayName) is reachable; `memo-peer outbox` shows its state")
    } else if case .failed(let reason) = entry.state {
      problem = MemoPeerError(.connection, "not delivered: \(reason)")
    }
    return SendOutcome(entry: entry, peer: peer, problem: problem)
  }

  /// Delivers what the outbox holds for `peer` until entry `id` is no longer pending or
  /// `seconds` have passed, pausing between attempts as the daemon does. `memo-peer lock`
  /// meanwhile closes the connection (and fails it as `locked`).
  func deliverNow(
    _ id: String, to peer: TrustedPeer, within seconds: Double, gate: ConsentGate, trust: TrustStore,
    note: @escaping @Sendable (String) -> Void
  ) throws {
    let watch = LockWatch(keys: app.keys)
    defer { watch.stop() }
    let (paths, keys, clock) = (app.paths, app.keys, app.clock)
    let outbox = OutboxDelivery(
      store: StoreAccess(paths: paths, keys: keys, use: .person),
      dialer: PeerConnector(
        gate: gate, identity: try NodeIdentity.load(paths: paths), trust: trust, sessions: watch.sessions,
        clock: clock),
      trust: trust, clock: clock)
    let name = peer.displayName
    let recipient = peer.deviceID
    note("\(name): sending \(id.prefix(8))…")
    _ = try runBlocking {
      let deadline = Deadline.after(seconds: seconds)
      var failures = 0
      while true {
        let remaining = deadline.secondsLeft
        guard remaining > 0 else { return false }
        if watch.fired { throw LockWatch.lockedDuring("the delivery") }
        // Everything queued for this peer goes along (the next user action delivers it).
        let round = try await outbox.deliver(to: recipient, timeout: max(remaining, 1))
        guard let reason = round.waitingFor, round.pending > 0 else { return true }
        let mine = try MemoStore.open(paths: paths, keys: keys).resolveOutboxEntry(id)
        guard mine.state.isPending else { return true }
        note("\(name): waiting (\(reason))")
        failures += 1
        let pause = min(DeliveryBackoff().delay(afterFailures: failures, random: .random(in: 0..<1)), remaining)
        try await deadline.clock.sleep(for: .milliseconds(Int64(pause * 1000)))
      }
    }
  }

  /// The outbox, newest last; entries past their expiry are marked expired first.
  public func outbox() throws -> [OutboxEntry] {
    let store = try app.store()
    let now = app.now
    for entry in try store.outboxEntries() where entry.hasExpired(at: now) {
      try store.setOutboxState(entry.id, .expired)
    }
    return try store.outboxEntries()
  }

  /// Queues a waiting, failed or expired entry again (the daemon delivers it).
  public func retry(_ reference: String) throws -> OutboxEntry {
    let store = try app.store()
    let entry = try store.resolveOutboxEntry(reference)
    guard entry.state.allows(.queued), try store.setOutboxState(entry.id, .queued) || entry.state == .queued else {
      throw MemoPeerError(.invalidInput, "entry \(entry.id.prefix(8)) is \(entry.state.name); nothing to retry")
    }
    return entry
  }

  /// Drops an undelivered entry.
  public func cancel(_ reference: String) throws -> OutboxEntry {
    let store = try app.store()
    let entry = try store.resolveOutboxEntry(reference)
    guard entry.state.isPending, try store.setOutboxState(entry.id, .cancelled) else {
      throw MemoPeerError(.invalidInput, "entry \(entry.id.prefix(8)) is \(entry.state.name); it cannot be cancelled")
    }
    return entry
  }

  /// Memos received from trusted devices, waiting to be accepted or dropped.
  public func inbox() throws -> [InboxEntry] { try app.store().inboxEntries() }

  /// Moves an inbox entry into the memos, keeping its sender and time.
  public func accept(_ reference: String) throws -> Memo { try app.store().acceptInboxEntry(reference) }

  /// Deletes an inbox entry (a resend of it is not stored again).
  public func drop(_ reference: String) throws -> InboxEntry { try app.store().dropInboxEntry(reference) }

  /// An entry's state for a person: `delivered (2026-11-29 20:15)`, `waiting (…)`, ….
  public static func display(_ state: OutboxState) -> String {
    if case .delivered(let time) = state { return "delivered (\(TimeText.local(time)))" }
    return state.description
  }
}
