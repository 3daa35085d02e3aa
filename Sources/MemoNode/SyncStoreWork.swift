import MemoCore
import MemoProtocol
import MemoStore

/// The store work of one sync session, as `SyncMachine` asks for it: the plan from the
/// peer's offers, the receiving direction (`SyncSink`: each batch in one transaction with
/// the peer's feed position, the guard at `sync-done`) and the sending one (`SyncSource`:
/// batches read from this replica's feed). A rule the store finds broken comes back to the
/// machine as `.refused`; any other failure as `.failed`, with the error kept for the
/// person or the log. Lives on the driving thread for one session.
final class SyncStoreWork {
  enum Side {
    /// The asker holds its store open; `deleteGuard` nil applies deletes without asking.
    case asker(MemoStore, deleteGuard: MassDeleteGuard?)
    /// The answerer opens its store when the asker's hello arrived (it may be locked),
    /// through the `open` that each `perform` is handed: a closure kept here would have to
    /// escape (see `SyncSession.answer`).
    case answerer
  }

  let side: Side
  let peer: DeviceID
  let batch: SyncSession.BatchLimits
  let clock: @Sendable () -> Timestamp
  let logger: Logger
  private var store: MemoStore?
  private(set) var plan: SyncPlan?
  private var peerHello: SyncMessage.Hello?
  private var sink: SyncSink?
  private var source: SyncSource?
  /// The failure behind the last `.failed`.
  private(set) var storeError: (any Error)?

  init(
    _ side: Side, peer: DeviceID, batch: SyncSession.BatchLimits, clock: @escaping @Sendable () -> Timestamp,
    logger: Logger
  ) {
    self.side = side
    self.peer = peer
    self.batch = batch
    self.clock = clock
    self.logger = logger
    if case .asker(let store, _) = side { self.store = store }
  }

  /// The event that answers one store action of the machine. `open` gives the answerer its
  /// store when the plan asks for it; the asker's is open already.
  func perform(_ action: SyncMachine.Action, open: () throws -> MemoStore) -> SyncMachine.Event {
    do {
      return try performChecked(action, open: open)
    } catch let violation as SyncViolation {
      return .refused(violation)
    } catch {
      storeError = error
      return .failed
    }
  }

  private func performChecked(_ action: SyncMachine.Action, open: () throws -> MemoStore) throws
    -> SyncMachine.Event
  {
    switch action {
    case .plan(let hello, let offers):
      peerHello = hello
      return try makePlan(offers, open: open)
    case .prepareReceiving:
      let (store, plan) = try session()
      guard let peerHello else { throw Self.outOfOrder }
      var deleteGuard: MassDeleteGuard? = MassDeleteGuard()
      if case .asker(_, let chosen) = side { deleteGuard = chosen }
      sink = try SyncSink(
        store: store, peer: peer, peerReplica: peerHello.replica, deleteGuard: deleteGuard, plan: plan)
      // At most 2^53 (checked at decode): exact as an Int.
      if case .asker = side { return .prepared(estimate: Int(peerHello.pending ?? 0)) }
      return .prepared(estimate: 0)
    case .apply(let records):
      guard let sink else { throw Self.outOfOrder }
      return .applied(position: try sink.apply(records, now: clock()))
    case .finishReceiving(let done):
      guard let sink else { throw Self.outOfOrder }
      return .received(try sink.finish(done, now: clock()))
    case .prepareSending:
      if source == nil { source = try makeSource() }
      if case .asker = side { return .prepared(estimate: try source?.estimate() ?? 0) }
      return .prepared(estimate: 0)
    case .readBatch:
      guard let source else { throw Self.outOfOrder }
      if let next = try source.nextBatch() { return .read(next) }
      return .exhausted(
        SyncMessage.Done(position: source.position, knowledge: VersionVector(), notebooks: source.knowledge))
    case .recordProgress(let acknowledged):
      let (store, plan) = try session()
      try store.recordPeerProgress(
        peer, acked: acknowledged, knowledge: plan.sending.mapValues(\.knowledge), now: clock())
      return .recorded
    case .send, .progress, .finish:
      throw Self.outOfOrder
    }
  }

  /// The asker plans from the answerer's final list; the answerer opens its store (refusing
  /// with `locked` or `storage` when it cannot), plans, and answers with its own hello.
  private func makePlan(_ offers: [CheckedOffer], open: () throws -> MemoStore) throws -> SyncMachine.Event {
    switch side {
    case .asker(let store, _):
      plan = try store.plan(
        with: peer, offers: offers, revocations: try revocations(), purges: try purges(), restrictSending: true,
        now: clock())
      return .planned(reply: nil)
    case .answerer:
      let opened: MemoStore
      do {
        opened = try open()
      } catch {
        logger.error(error, while: "opening the store for a sync")
        return .unavailable((error as? MemoPeerError)?.code == .locked ? .locked : .storage)
      }
      guard opened.canReadContent else { return .unavailable(.locked) }
      store = opened
      plan = try opened.plan(
        with: peer, offers: offers, revocations: try revocations(), purges: try purges(), restrictSending: false,
        now: clock())
      let source = try makeSource()
      self.source = source
      return .planned(
        reply: SyncMessage.Hello(
          replica: opened.replicaID, knowledge: VersionVector(), cursor: nil, pending: UInt64(try source.estimate()),
          notebooks: try opened.offers(for: peer), revocations: try opened.revocationsToSend(),
          purges: try opened.purgesToSend(for: peer)))
    }
  }

  /// The revocations and purges of the peer's hello (their form was checked when it was
  /// decoded).
  private func revocations() throws -> [Revocation] {
    try SyncRules.checkedRevocations(peerHello?.revocations ?? [])
  }

  private func purges() throws -> [Purge] { try SyncRules.checkedPurges(peerHello?.purges ?? []) }

  private func makeSource() throws -> SyncSource {
    let (store, plan) = try session()
    return try SyncSource(
      store: store, plan: plan.sending, maximumRevisions: batch.revisions, maximumBytes: batch.bytes)
  }

  private func session() throws -> (MemoStore, SyncPlan) {
    guard let store, let plan else { throw Self.outOfOrder }
    return (store, plan)
  }

  /// Store work asked for before what it needs: the machine never does this.
  private static let outOfOrder = MemoPeerError(.connection, "the sync asked for store work out of order")
}
