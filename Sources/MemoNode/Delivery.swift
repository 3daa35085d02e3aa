import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoVault

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

  /// Stores one checked delivery from `peer` (`DeliveryExchange.request` decoded and
  /// checked it): what the session answers comes from what this returns.
  public func store(_ deliver: DeliveryMessage.Deliver, from peer: DeviceID) -> DeliveryExchange.Stored {
    let logger = store.logger
    do {
      let store = try opened ?? self.store.open()
      opened = store
      let policy = try trust.load().peer(for: peer)?.receive
      let outcome = try store.receiveDelivery(
        id: deliver.id, from: peer, memo: deliver.memo, size: DeliveryMessage.encode(deliver.memo).count,
        policy: policy, limits: limits, now: clock())
      switch outcome {
      case .stored(let place, let duplicate):
        if receiptDelay > 0 { SystemThread.sleep(seconds: receiptDelay) }
        let earlier = duplicate ? " (earlier)" : ""
        logger.info(
          "delivery \(deliver.id) from \(peer.short, privacy: .public) stored in \(place, privacy: .public)\(earlier, privacy: .public)"
        )
        return .stored(place: place, duplicate: duplicate)
      case .refused(let reason):
        logger.info("delivery from \(peer.short, privacy: .public) refused: \(reason.rawValue, privacy: .public)")
        return .refused(reason)
      }
    } catch let error as MemoPeerError where error.code == .invalidInput || error.code == .tooLarge {
      return .refused(.invalid)
    } catch {
      logger.error(error, while: "storing a delivery")
      return .failed
    }
  }
}

extension DeliveryReceiver {
  /// Stores the checked entries of one `deliver-batch` from `peer` in one transaction
  /// (`MemoStore.receiveDeliveries`): one result per entry, in order, or `.failed` for every
  /// entry when the store failed (nothing of the batch was stored; the session ends).
  public func store(_ entries: [DeliveryMessage.Deliver], from peer: DeviceID) -> [DeliveryExchange.Stored] {
    let logger = store.logger
    do {
      let store = try opened ?? self.store.open()
      opened = store
      let policy = try trust.load().peer(for: peer)?.receive
      let outcomes = try store.receiveDeliveries(entries, from: peer, policy: policy, limits: limits, now: clock())
      if receiptDelay > 0 { SystemThread.sleep(seconds: receiptDelay) }
      var stored = 0
      var earlier = 0
      var refused: [String: Int] = [:]
      let results = outcomes.map { outcome -> DeliveryExchange.Stored in
        switch outcome {
        case .stored(let place, let duplicate):
          if duplicate { earlier += 1 } else { stored += 1 }
          return .stored(place: place, duplicate: duplicate)
        case .refused(let reason):
          refused[reason.rawValue, default: 0] += 1
          return .refused(reason)
        }
      }
      let refusals = refused.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
      // "(earlier)" marks a retransmission, as on the per-entry path (the kill -9 lab test
      // counts the marks: with batches, one per retransmitted batch).
      let duplicates = earlier > 0 ? " (earlier)" : ""
      logger.info(
        "delivery batch of \(entries.count, privacy: .public) from \(peer.short, privacy: .public): \(stored, privacy: .public) stored, \(earlier, privacy: .public) seen before\(duplicates, privacy: .public)\(refusals.isEmpty ? "" : ", refused: " + refusals, privacy: .public)"
      )
      return results
    } catch {
      logger.error(error, while: "storing a delivery batch")
      return entries.map { _ in .failed }
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
  public typealias Round = DeliverySender.Round

  /// Recipients with pending entries (expiring the overdue ones first).
  public func pendingRecipients() throws -> [DeviceID] {
    // No database yet: nothing queued (and the daemon does not create one by looking).
    guard FileManager.default.fileExists(atPath: store.paths.databasePath) else { return [] }
    let store = try self.store.open()
    let now = clock()
    var recipients: [DeviceID] = []
    for entry in try store.outboxEntries() where entry.state.isPending {
      if entry.hasExpired(at: now) {
        try store.setOutboxState(entry.id, .expired)
        continue
      }
      if let recipient = entry.recipient, !recipients.contains(recipient) { recipients.append(recipient) }
    }
    return recipients
  }

  /// Marks a recipient's pending entries (or only `only`) as waiting for `reason`.
  public func markWaiting(_ recipient: DeviceID, _ reason: String, only: String? = nil) throws {
    let store = try self.store.open()
    for entry in try store.outboxEntries()
    where entry.recipient == recipient && entry.state.isPending && (only == nil || entry.id == only) {
      try store.setOutboxState(entry.id, .waiting(reason))
    }
  }

  /// Connects to the recipient (waiting up to `timeout` for consent and the peer) and sends
  /// its pending entries. Throws only for storage failures.
  public func deliver(to recipient: DeviceID, timeout: Double, only: String? = nil) async throws -> Round {
    guard let peer = try trust.load().peer(for: recipient) else {
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

  /// Sends the pending entries over a ready link: in batches when the peer's hello says it
  /// takes them (delivery version 2), else one at a time.
  func send(over link: PeerLink, to recipient: DeviceID, only: String?) throws -> Round {
    let store = try self.store.open()
    if link.hello?.takesDeliveryBatches == true {
      return try sendBatches(over: link, to: recipient, only: only, store: store)
    }
    return try sendOneByOne(over: link, to: recipient, only: only, store: store)
  }

  /// Delivery version 2 (docs/PROTOCOL.md, "Batched delivery"): the driver of a
  /// `DeliverySender`, which decides the batches, the window and what each answer proves;
  /// this lists the entries due (expiring the overdue ones), opens each memo, records the
  /// states it is told to and carries the frames. A store that fails throws, leaving every
  /// entry in flight `sending` (pending, offered again).
  func sendBatches(over link: PeerLink, to recipient: DeviceID, only: String?, store: MemoStore) throws -> Round {
    let now = clock()
    var due: [String] = []
    var expired: [(id: String, state: OutboxState)] = []
    for entry in try store.outboxEntries(for: recipient)
    where entry.state.isPending && (only == nil || entry.id == only) {
      if entry.hasExpired(at: now) { expired.append((entry.id, .expired)) } else { due.append(entry.id) }
    }
    try store.setOutboxStates(expired)
    var machine = DeliverySender(entries: due)
    return try MachineDriver.run(
      &machine, from: machine.start(),
      perform: { action throws -> MachineDriver<DeliverySender>.Step<Round> in
        switch action {
        case .read(let id): return .answer(.read(json: try store.outboxContentJSON(id)))
        case .markSending(let ids): try store.setOutboxStates(ids.map { ($0, .sending) }, attempted: true)
        case .record(let changes):
          let time = clock()
          try store.setOutboxStates(changes.map { ($0.id, $0.fate.state(at: time)) })
        case .send(let frame):
          do throws(TransportError) {
            try link.channel.send(frame)
            return .answer(.sent)
          } catch {
            return .answer(.closed)
          }
        case .finish(let round): return .finish(round)
        }
        return .done
      },
      receive: { machine in
        // Every read and send was answered, so the machine waits for the receiver; a
        // channel that fails is the end of the connection.
        precondition(machine.needsFrame, "a delivery sender that neither finished nor waits for a frame")
        do throws(TransportError) { return try link.channel.receive() } catch { return nil }
      })
  }

  /// Delivery version 1, for a peer that does not take batches: one entry at a time, each
  /// waiting for its answer.
  func sendOneByOne(over link: PeerLink, to recipient: DeviceID, only: String?, store: MemoStore) throws -> Round {
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
        try link.channel.send(DeliveryExchange.deliver(id: entry.id, memo: content))
        answer = try link.channel.receive()
      } catch {
        answer = nil
      }
      switch DeliveryExchange.answer(answer, to: entry.id) {
      case .delivered:
        try store.setOutboxState(entry.id, .delivered(clock()))
        round.delivered += 1
      case .refused(let reason) where reason.isFinal:
        try store.setOutboxState(entry.id, .failed("peer refused: \(reason.explanation)"))
      case .refused(let reason):
        try store.setOutboxState(entry.id, .waiting("peer refused: \(reason.explanation)"))
        round.pending += 1
        round.waitingFor = "peer refused: \(reason.explanation)"
      case .protocolError where answer?.kind == .receipt:
        // A receipt that does not name this entry proves nothing about it: the peer broke
        // the protocol, so the entry waits (and is offered again later).
        try store.setOutboxState(entry.id, .waiting("the peer answered with a receipt for another entry"))
        round.pending += 1
        round.waitingFor = "protocol error"
        return round
      case .protocolError:
        try store.setOutboxState(entry.id, .waiting("peer not reachable"))
        round.pending += 1
        round.waitingFor = "protocol error"
        return round
      case .unreachable:
        try store.setOutboxState(entry.id, .waiting("peer not reachable"))
        round.pending += 1
        round.waitingFor = "peer not reachable"
        return round
      }
    }
    return round
  }
}
