import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoVault
import Synchronization

/// What happens on a trusted channel once the transport is up: the driver of a
/// `SessionMachine`. Both sides say hello (protocol version, discovery key), then the
/// client asks and the server answers; the machine decides every frame, this carries them
/// and does the store work (deliveries, syncs).
public enum PeerSession {
  /// Sends our hello and reads the peer's, by `deadline` (nil: the idle limit). A peer that
  /// does not trust us has closed the connection by then, so this is where the client
  /// learns it was refused.
  public static func greet(_ channel: any FrameChannel, identity: NodeIdentity, before deadline: Deadline? = nil)
    throws(TransportError) -> PeerMessage.Hello
  {
    var machine = SessionMachine(role: .client, hello: hello(identity))
    for case .send(let frame) in machine.start() { try channel.send(frame) }
    let frame = try channel.receive(before: deadline)
    for action in machine.handle(frame.map { .frame($0) } ?? .closed) {
      switch action {
      case .greeted(let hello): return hello
      case .end(let error): throw error ?? TransportError(.closed, "closed before hello")
      default: continue
      }
    }
    throw TransportError(.protocolViolation, "expected hello")
  }

  /// The daemon's side of one trusted channel, until the peer leaves or breaks the
  /// protocol. Learns the peer's discovery key (for peers added with `trust add`). Each
  /// frame of the peer is acted on (a pong, a delivery stored, a sync answered, history
  /// sent) only while `stillTrusted` trusts it (nil: the file of `trust`, followed by this
  /// channel): a peer removed from the trust store meanwhile gets `goodbye {"reason":
  /// "untrusted"}`, and the channel ends with `untrustedPeer`.
  public static func serve(
    _ channel: any FrameChannel, identity: NodeIdentity, trust: TrustStore, logger: Logger,
    receiver: DeliveryReceiver? = nil, sync: SyncAnswerer? = nil, activity: PeerActivity? = nil,
    stillTrusted: PeerTrustCheck? = nil
  ) throws(TransportError) {
    guard let peer = channel.peer else { return }
    let stillTrusted = stillTrusted ?? PeerTrustCheck(following: trust)
    // While it is open, the peer's live link to us is where its keepalives arrive.
    activity?.serving(peer)
    defer { activity?.ended(peer) }
    var machine = SessionMachine(role: .server, hello: hello(identity))
    // The store work of the sync running, if one is (one per `sync-hello`).
    var syncWork: SyncStoreWork?
    try MachineDriver.run(
      &machine, from: machine.start(),
      perform: { action throws(TransportError) -> MachineDriver<SessionMachine>.Step<Void> in
        switch action {
        case .send(let frame) where frame.kind == .goodbye: try? channel.send(frame)
        case .send(let frame): try channel.send(frame)
        case .greeted(let hello):
          // A daemon that dialled us listens too: it is remembered at the address it came
          // from, at the port it gave, so we can dial it back without DNS-SD.
          let reachedAt = hello.announcedPort.flatMap {
            PeerConnector.reachedAddress(channel: channel, interface: "", port: $0)
          }
          do {
            _ = try PeerHello.record(
              hello, from: peer, reachedAt: reachedAt, network: identity.network, trust: trust, logger: logger,
              now: Clocks.shared.wallNow)
          } catch {
            logger.error(error, while: "recording a peer's discovery key")
          }
        case .deliver(let deliver):
          return .answer(.delivered(receiver?.store(deliver, from: peer) ?? .failed))
        case .deliverBatch(let entries):
          return .answer(.deliveredBatch(receiver?.store(entries, from: peer) ?? entries.map { _ in .failed }))
        case .refusedBatch(let why):
          logger.warning(
            "delivery batch from \(peer.short, privacy: .public) refused whole: \(why, privacy: .public)")
        case .refusedDelivery(_, let violation):
          logger.warning(
            "delivery from \(peer.short, privacy: .public) refused: \(violation.reason.rawValue, privacy: .public) (\(violation.detail, privacy: .public))"
          )
        case .sync(let action):
          guard let sync else { throw TransportError(.protocolViolation, "this node does not answer syncs") }
          let work = syncWork ?? sync.work(for: peer)
          syncWork = work
          switch try SyncSession.step(action, over: channel, work: work, open: sync.openStore, progress: nil) {
          case .done: break
          case .answer(let answer): return .answer(.sync(answer))
          case .finish(let ending):
            // The machine goes on serving, or ends next with the error the ending is.
            syncWork = nil
            SyncSession.answered(
              ending, peer: peer, work: work, store: sync.openStore, clock: sync.clock, logger: sync.store.logger)
          }
        case .answerHistory(let notebook, let memo):
          for frame in sync?.history(of: memo, in: notebook, for: peer) ?? HistoryFetch.answer([], bindings: []) {
            try channel.send(frame)
          }
        case .end(let error):
          if let error { throw error }
          return .finish(())
        }
        return .done
      },
      receive: { machine throws(TransportError) -> Frame? in
        let frame = try channel.receive()
        if frame != nil, !stillTrusted.trusts(peer) {
          // A sync is told in its own words, the session in its.
          try? channel.send(machine.isSyncing ? SyncMachine.refusal(.untrusted) : goodbye(PeerTrustCheck.goodbyeReason))
          throw PeerTrustCheck.removed(peer)
        }
        // A sync's frames are its own: the peer's activity is the session's.
        if frame != nil, !machine.isSyncing { activity?.record(peer) }
        return frame
      })
  }

  static func hello(_ identity: NodeIdentity) -> PeerMessage.Hello {
    PeerMessage.Hello(
      discoveryKey: identity.discoveryKeyBase64, rotationSeconds: identity.advertisement.rotationSeconds,
      listenPort: identity.listenPort, listenAddresses: identity.listenAddresses)
  }

  /// A `goodbye` frame with its reason.
  public static func goodbye(_ reason: String) -> Frame { SessionMachine.goodbye(reason) }
}

/// The daemon's side of syncs on one channel: the store is opened at the first sync (in the
/// channel's thread, for the daemon: never as a person's use) and kept for the next ones on
/// the same channel. Not Sendable: it lives and dies on that thread.
public final class SyncAnswerer {
  let store: StoreAccess
  let clock: @Sendable () -> Timestamp
  let batch: SyncSession.BatchLimits
  private var opened: MemoStore?

  public init(
    store: StoreAccess, batch: SyncSession.BatchLimits = SyncSession.BatchLimits(),
    clock: @escaping @Sendable () -> Timestamp
  ) {
    self.store = store
    self.batch = batch
    self.clock = clock
  }

  /// The store work of one sync with `peer`, answered with this channel's store.
  func work(for peer: DeviceID) -> SyncStoreWork {
    SyncStoreWork(.answerer, peer: peer, keys: store.keys, batch: batch, clock: clock, logger: store.logger)
  }

  func openStore() throws -> MemoStore {
    if let opened { return opened }
    let fresh = try store.open()
    opened = fresh
    return fresh
  }

  /// The `history-records` frames answering `peer`'s ask: what this relay kept of `memo`
  /// when it shares `notebook` with `peer`, else nothing. A store that cannot answer
  /// answers nothing (logged): the asker keeps what it has.
  func history(of memo: MemoID, in notebook: NotebookID, for peer: DeviceID) -> [Frame] {
    do {
      let kept = try openStore().relayedHistoryRecords(of: memo, in: notebook, for: peer)
      if !kept.records.isEmpty {
        store.logger.info(
          "history: sent \(kept.records.count, privacy: .public) sealed revisions to \(peer.short, privacy: .public)")
      }
      return HistoryFetch.answer(kept.records, bindings: kept.bindings)
    } catch {
      store.logger.error(error, while: "reading the relayed history a peer asked for")
      return HistoryFetch.answer([], bindings: [])
    }
  }
}

/// What the daemon does with each trusted channel: hello, then pings, deliveries (into the
/// inbox) and syncs until the peer leaves. Everything it opens is opened for the daemon
/// (`KeyUse.background`): answering a peer is never a person's use of a `complete` node.
public struct DaemonResponder: Sendable {
  public let identity: NodeIdentity
  /// When set, the identity each new channel's hello gives (the daemon swaps in a rotated
  /// discovery key without closing the channels it serves).
  public let current: CurrentIdentity?
  public let trust: TrustStore
  public let store: StoreAccess
  public let receiptDelay: Double
  public let receiveLimits: ReceiveLimits
  public let syncBatch: SyncSession.BatchLimits
  /// Told of every frame a peer sends and of the sessions open (the live links' keepalives
  /// read it).
  public let activity: PeerActivity?
  /// Asked before each frame of a peer is acted on: the daemon's shared set (nil: each
  /// channel follows the file of `trust` itself).
  public let stillTrusted: PeerTrustCheck?
  let clock: @Sendable () -> Timestamp

  /// `receiptDelay`: seconds between storing a delivery and sending its receipt (0, except
  /// in the lab test that kills the daemon where receipts get lost).
  public init(
    identity: NodeIdentity, trust: TrustStore, store: StoreAccess, receiptDelay: Double = 0,
    receiveLimits: ReceiveLimits = ReceiveLimits(), syncBatch: SyncSession.BatchLimits = SyncSession.BatchLimits(),
    activity: PeerActivity? = nil, current: CurrentIdentity? = nil, stillTrusted: PeerTrustCheck? = nil,
    clock: @escaping @Sendable () -> Timestamp
  ) {
    self.activity = activity
    self.stillTrusted = stillTrusted
    self.identity = identity
    self.current = current
    self.trust = trust
    self.store = store.background
    self.receiptDelay = receiptDelay
    self.receiveLimits = receiveLimits
    self.syncBatch = syncBatch
    self.clock = clock
  }

  /// Serves one channel until it ends, then closes it cleanly. Never throws: one bad peer costs
  /// its own channel only (the error type is logged).
  public func serve(_ channel: any FrameChannel) {
    let logger = store.logger
    do throws(TransportError) {
      let receiver = DeliveryReceiver(
        store: store, trust: trust, limits: receiveLimits, receiptDelay: receiptDelay, clock: clock)
      try PeerSession.serve(
        channel, identity: current?.identity ?? identity, trust: trust, logger: logger, receiver: receiver,
        sync: SyncAnswerer(store: store, batch: syncBatch, clock: clock), activity: activity,
        stillTrusted: stillTrusted)
      channel.close()
    } catch {
      // A broken channel gets no close_notify (TLS forbids it after a fatal error); it is
      // freed with its owner.
      logger.warning("connection closed: \(error.kind.rawValue, privacy: .public)")
    }
  }
}

/// The daemon's identity as it is now: the discovery key rotates after a revocation, and
/// channels accepted from then on say the new one in their hello.
public final class CurrentIdentity: Sendable {
  private let value: Mutex<NodeIdentity>

  public init(_ identity: NodeIdentity) { value = Mutex(identity) }

  public var identity: NodeIdentity { value.withLock { $0 } }

  func replace(with identity: NodeIdentity) { value.withLock { $0 = identity } }
}
