import Foundation
import MemoCore
import MemoStore
import MemoTransport

/// The receiver's side of delivery: one `deliver` frame in, a `receipt` or `refuse` out.
/// The store is opened on the first delivery of a connection, in the connection's thread.
public final class DeliveryReceiver: @unchecked Sendable {
  // Unchecked: one receiver serves one connection, on that connection's handler thread only.
  let paths: NodePaths
  let trust: TrustStore
  let limits: ReceiveLimits
  let logger: Logger
  let clock: @Sendable () -> Timestamp
  /// A pause (seconds) between storing an entry and sending its receipt: zero, except in the kill -9
  /// lab test, which widens the window where a receipt can be lost.
  let receiptDelay: Double
  private var store: MemoStore?

  public init(
    paths: NodePaths, trust: TrustStore, limits: ReceiveLimits = ReceiveLimits(), logger: Logger,
    receiptDelay: Double = 0, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.receiptDelay = receiptDelay
    self.paths = paths
    self.trust = trust
    self.limits = limits
    self.logger = logger
    self.clock = clock
  }

  /// The answer to one `deliver` frame from `peer`; nil when the payload is not a delivery
  /// (the caller closes the connection).
  public func answer(_ payload: [UInt8], from peer: DeviceID) -> Frame? {
    guard let deliver = PeerMessage.decode(DeliveryMessage.Deliver.self, from: payload) else { return nil }
    do {
      let store = try self.store ?? MemoStore.open(paths: paths, logger: logger)
      self.store = store
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

/// The sender's side: delivers a peer's pending outbox entries over one trusted connection,
/// recording each state. Only a receipt marks an entry delivered; a connection that breaks
/// before the receipt leaves the entry pending, and the retransmission is recognised by the
/// receiver.
public struct OutboxDelivery: Sendable {
  public let paths: NodePaths
  public let connector: PeerConnector
  let clock: @Sendable () -> Timestamp

  public init(paths: NodePaths, connector: PeerConnector, clock: @escaping @Sendable () -> Timestamp) {
    self.paths = paths
    self.connector = connector
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
    guard FileManager.default.fileExists(atPath: paths.databasePath) else { return [] }
    let store = try MemoStore.open(paths: paths)
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
    let store = try MemoStore.open(paths: paths)
    for entry in try store.outboxEntries()
    where entry.recipient == recipient && entry.state.isPending && (only == nil || entry.id == only) {
      try store.setOutboxState(entry.id, .waiting(reason))
    }
  }

  /// Connects to the recipient (waiting up to `timeout` for consent and the peer) and sends
  /// its pending entries. Throws only for storage failures.
  public func deliver(to recipient: String, timeout: Double, only: String? = nil) async throws -> Round {
    guard let id = DeviceID(recipient), let peer = try connector.trust.load().peer(for: id) else {
      try markWaiting(recipient, "peer not trusted any more", only: only)
      return Round(pending: 1, waitingFor: "peer not trusted any more")
    }
    let paths = self.paths
    let link: PeerLink
    do {
      link = try await connector.connect(to: peer, timeout: timeout) { state in
        guard case .waiting(let reason) = state else { return }
        try? OutboxDelivery(paths: paths, connector: connector, clock: clock).markWaiting(
          recipient, reason.description, only: only)
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
    defer { link.connection.shutdown() }
    return try send(over: link, to: recipient, only: only)
  }

  /// Sends the pending entries over a ready link, one at a time, each waiting for its answer.
  func send(over link: PeerLink, to recipient: String, only: String?) throws -> Round {
    let store = try MemoStore.open(paths: paths)
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
        try link.connection.send(
          Frame(.deliver, payload: PeerMessage.encode(DeliveryMessage.Deliver(id: entry.id, memo: content))))
        answer = try link.connection.receive()
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
        guard let receipt = PeerMessage.decode(DeliveryMessage.Receipt.self, from: answer.payload),
          receipt.id == entry.id
        else { fallthrough }
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
