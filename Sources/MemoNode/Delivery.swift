import Foundation
import MemoCore
import MemoStore

/// The receiver's side of delivery: one `deliver` frame in, a `receipt` or `refuse` out.
/// The store is opened on the first delivery of a channel, in the channel's thread, and for
/// the daemon (`KeyUse.background`: storing a peer's memo is not a person's use). Not
/// Sendable: it lives and dies on that thread.
public final class DeliveryReceiver {
  let store: StoreAccess
  let trust: TrustStore
  let limits: ReceiveLimits
  let clock: @Sendable () -> Timestamp
  /// A pause (seconds) between storing an entry and sending its receipt: zero, except in the
  /// kill -9 lab test, which widens the window where a receipt can be lost.
  let receiptDelay: Double
  private var opened: MemoStore?

  public init(
    store: StoreAccess, trust: TrustStore, limits: ReceiveLimits = ReceiveLimits(), receiptDelay: Double = 0,
    clock: @escaping @Sendable () -> Timestamp
  ) {
    self.store = store.background
    self.trust = trust
    self.limits = limits
    self.receiptDelay = receiptDelay
    self.clock = clock
  }

  /// The answer to one `deliver` frame from `peer`; nil when the payload is not a delivery
  /// (the caller closes the connection).
  public func answer(_ payload: [UInt8], from peer: DeviceID) -> Frame? {
    guard let deliver = PeerMessage.decode(DeliveryMessage.Deliver.self, from: payload) else { return nil }
    let logger = store.logger
    do throws(SyncViolation) {
      try DeliveryMessage.check(deliver)
    } catch {
      logger.warning(
        "delivery from \(peer.short, privacy: .public) refused: \(error.reason.rawValue, privacy: .public) (\(error.detail, privacy: .public))"
      )
      return Frame(.refuse, payload: PeerMessage.encode(DeliveryMessage.Refuse(id: deliver.id, reason: .invalid)))
    }
    do {
      let store = try opened ?? self.store.open()
      opened = store
      let policy = try trust.load().peer(for: peer)?.receive
      let outcome = try store.receiveDelivery(
        id: deliver.id, from: peer.compact, memo: deliver.memo, size: DeliveryMessage.encode(deliver.memo).count,
        policy: policy, limits: limits, now: clock())
      switch outcome {
      case .stored(let place, let duplicate):
        if receiptDelay > 0 { Thread.sleep(forTimeInterval: receiptDelay) }
        let earlier = duplicate ? " (earlier)" : ""
        logger.info(
          "delivery \(deliver.id) from \(peer.short, privacy: .public) stored in \(place, privacy: .public)\(earlier, privacy: .public)"
        )
        return Frame(
          .receipt,
          payload: PeerMessage.encode(DeliveryMessage.Receipt(id: deliver.id, stored: place, duplicate: duplicate)))
      case .refused(let reason):
        logger.info("delivery from \(peer.short, privacy: .public) refused: \(reason.rawValue, privacy: .public)")
        return Frame(.refuse, payload: PeerMessage.encode(DeliveryMessage.Refuse(id: deliver.id, reason: reason)))
      }
    } catch let error as MemoPeerError where error.code == .invalidInput || error.code == .tooLarge {
      return Frame(.refuse, payload: PeerMessage.encode(DeliveryMessage.Refuse(id: deliver.id, reason: .invalid)))
    } catch {
      logger.error(error, while: "storing a delivery")
      return nil
    }
  }
}

/// The sender's side: delivers a peer's pending outbox entries over one trusted channel,
/// recording each state. Only a receipt marks an entry delivered; a channel that breaks
/// before the receipt leaves the entry pending, and the retransmission is recognised by the
/// receiver. `store` says whose use it is: a person's for `send --wait`, the daemon's for
/// `serve`.
public struct OutboxDelivery: Sendable {
  public let store: StoreAccess
  public let dialer: any PeerDialer
  public let trust: TrustStore
  let clock: @Sendable () -> Timestamp

  public init(
    store: StoreAccess, dialer: any PeerDialer, trust: TrustStore, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.store = store
    self.dialer = dialer
    self.trust = trust
    self.clock = clock
  }

  /// What one round did for a peer.
  public struct Round: Sendable, Equatable {
    public var delivered = 0
    public var pending = 0
    /// Why the round stopped without delivering everything (nil: nothing left).
    public var waitingFor: String?
  }

  /// Recipients with pending entries (expiring the overdue ones first).
  public func pendingRecipients() throws -> [String] {
    // No database yet: nothing queued (and the daemon does not create one by looking).
    guard FileManager.default.fileExists(atPath: store.paths.databasePath) else { return [] }
    let store = try self.store.open()
    let now = clock()
    var recipients: [String] = []
    for entry in try store.outboxEntries() where entry.state.isPending {
      if entry.hasExpired(at: now) {
        try store.setOutboxState(entry.id, .expired)
        continue
      }
      if !recipients.contains(entry.recipient) { recipients.append(entry.recipient) }
    }
    return recipients
  }

  /// Marks a recipient's pending entries (or only `only`) as waiting for `reason`.
  public func markWaiting(_ recipient: String, _ reason: String, only: String? = nil) throws {
    let store = try self.store.open()
    for entry in try store.outboxEntries()
    where entry.recipient == recipient && entry.state.isPending && (only == nil || entry.id == only) {
      try store.setOutboxState(entry.id, .waiting(reason))
    }
  }

  /// Connects to the recipient (waiting up to `timeout` for consent and the peer) and sends
  /// its pending entries. Throws only for storage failures.
  public func deliver(to recipient: String, timeout: Double, only: String? = nil) async throws -> Round {
    guard let id = DeviceID(recipient), let peer = try trust.load().peer(for: id) else {
      try markWaiting(recipient, "peer not trusted any more", only: only)
      return Round(pending: 1, waitingFor: "peer not trusted any more")
    }
    let link: PeerLink
    do {
      link = try await dialer.connect(to: peer, timeout: timeout) { [self] state in
        guard case .waiting(let reason) = state else { return }
        try? markWaiting(recipient, reason.description, only: only)
      }
    } catch let error as MemoPeerError {
      let reason: String
      if error.code == .untrustedPeer {
        reason =
          error.message.hasPrefix("refused the device advertising")
          ? "a device advertising as the peer presents another key" : "peer refused: it does not trust this device"
      } else {
        reason = error.message.contains("consent") ? "local-network consent" : "peer not found on the network"
      }
      try markWaiting(recipient, reason, only: only)
      return Round(pending: 1, waitingFor: reason)
    }
    return try await BlockingIO.run("mp.deliver") { [self] in
      defer { link.channel.close() }
      return try send(over: link, to: recipient, only: only)
    }
  }

  /// Sends the pending entries over a ready link, one at a time, each waiting for its answer.
  func send(over link: PeerLink, to recipient: String, only: String?) throws -> Round {
    let store = try self.store.open()
    var round = Round()
    let now = clock()
    for entry in try store.outboxEntries()
    where entry.recipient == recipient && entry.state.isPending && (only == nil || entry.id == only) {
      if entry.hasExpired(at: now) {
        try store.setOutboxState(entry.id, .expired)
        continue
      }
      let content = try store.outboxContent(entry.id)
      try store.setOutboxState(entry.id, .sending, attempted: true)
      let answer: Frame?
      do throws(TransportError) {
        try link.channel.send(
          Frame(.deliver, payload: PeerMessage.encode(DeliveryMessage.Deliver(id: entry.id, memo: content))))
        answer = try link.channel.receive()
      } catch {
        answer = nil
      }
      guard let answer else {
        try store.setOutboxState(entry.id, .waiting("peer not reachable"))
        round.pending += 1
        round.waitingFor = "peer not reachable"
        return round
      }
      switch answer.kind {
      case .receipt:
        // A receipt that does not name this entry proves nothing about it: the peer broke
        // the protocol, so the entry waits (and is offered again later) rather than being
        // marked delivered or failed.
        guard let receipt = PeerMessage.decode(DeliveryMessage.Receipt.self, from: answer.payload),
          receipt.id == entry.id
        else {
          try store.setOutboxState(entry.id, .waiting("the peer answered with a receipt for another entry"))
          round.pending += 1
          round.waitingFor = "protocol error"
          return round
        }
        try store.setOutboxState(entry.id, .delivered(clock()))
        round.delivered += 1
      case .refuse:
        let refuse = PeerMessage.decode(DeliveryMessage.Refuse.self, from: answer.payload)
        let reason = refuse.flatMap { RefusalReason(rawValue: $0.reason) } ?? .invalid
        if reason.isFinal {
          try store.setOutboxState(entry.id, .failed("peer refused: \(reason.explanation)"))
        } else {
          try store.setOutboxState(entry.id, .waiting("peer refused: \(reason.explanation)"))
          round.pending += 1
          round.waitingFor = "peer refused: \(reason.explanation)"
        }
      default:
        try store.setOutboxState(entry.id, .waiting("peer not reachable"))
        round.pending += 1
        round.waitingFor = "protocol error"
        return round
      }
    }
    return round
  }
}
