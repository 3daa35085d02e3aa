import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoVault

/// The store work of one sync session, as `SyncMachine` asks for it: the hellos and the ops
/// of the notebooks' logs, the plan from what the logs then say, the receiving direction (`SyncSink`: each batch in one transaction with
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
  /// The node's keys, for the files the store leaves to the node: the trust store a
  /// revocation in the peer's hello changes, and the discovery key it rotates.
  let keys: DeviceKeys
  private var store: MemoStore?
  private(set) var plan: SyncPlan?
  /// What the peer's hello carried that was taken first (revocations applied).
  private(set) var taken = HelloTaken()
  private var peerHello: SyncMessage.Hello?
  private var peerEntries: [CheckedEntry] = []
  /// The notebooks this device's own hello listed as held: the only ones the peer sends
  /// records of, so the only ones whose records (and cursors) the plan takes
  /// (`SyncPlan.receiving(onlyListed:)`). Set from the hello as it is sent.
  var listedHeld: Set<NotebookID> = []
  private var sink: SyncSink?
  private var source: SyncSource?
  /// The failure behind the last `.failed`.
  private(set) var storeError: (any Error)?

  init(
    _ side: Side, peer: DeviceID, keys: DeviceKeys, batch: SyncSession.BatchLimits,
    clock: @escaping @Sendable () -> Timestamp, logger: Logger
  ) {
    self.side = side
    self.peer = peer
    self.keys = keys
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
    case .plan(let hello, let entries, let ops):
      peerHello = hello
      peerEntries = entries
      return try makePlan(ops, open: open)
    case .takeOps(let ops):
      guard let store else { throw Self.outOfOrder }
      plan = try store.plan(with: peer, entries: peerEntries, ops: ops, purges: try purges(), now: clock())
        .receiving(onlyListed: listedHeld)
      source = try makeSource()
      return .opsTaken
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

  /// The notebooks `entries` (this device's hello) lists as held.
  static func held(_ entries: [NotebookEntry]) -> Set<NotebookID> {
    Set(entries.filter(\.held).compactMap { NotebookID($0.id) })
  }

  /// The asker takes the answerer's hello and ops, plans, and answers with the ops the
  /// answerer lacks; the answerer opens its store (refusing with `locked` or `storage` when
  /// it cannot), takes the asker's hello and answers with its own and the ops the asker
  /// lacks (it plans once the asker's ops are in: `.takeOps`).
  private func makePlan(_ ops: [SyncOps.Notebook]?, open: () throws -> MemoStore) throws -> SyncMachine.Event {
    switch side {
    case .asker(let store, _):
      taken = try takeHello(store)
      plan = try store.plan(with: peer, entries: peerEntries, ops: ops ?? [], purges: try purges(), now: clock())
        .receiving(onlyListed: listedHeld)
      return .planned(reply: nil, ops: try store.opsLacking(for: peer, entries: peerEntries))
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
      taken = try takeHello(opened)
      let (entries, keys) = try opened.helloNotebooks(for: peer, now: clock())
      listedHeld = Self.held(entries)
      let estimate = try SyncSource(
        store: opened, plan: try opened.sending(to: peer, entries: peerEntries), maximumRevisions: batch.revisions,
        maximumBytes: batch.bytes
      ).estimate()
      return .planned(
        reply: SyncMessage.Hello(
          replica: opened.replicaID, knowledge: VersionVector(), cursor: nil, pending: UInt64(estimate),
          notebooks: entries, keys: keys, revocations: try opened.revocationsToSend(),
          purges: try opened.purgesToSend(for: peer)),
        ops: try opened.opsLacking(for: peer, entries: peerEntries))
    }
  }

  /// The revocations and keys of the peer's hello, before anything else of the session; then
  /// what they change in the trust store and the discovery key file, which the store leaves
  /// to the node.
  private func takeHello(_ store: MemoStore) throws -> HelloTaken {
    let trustStore = TrustStore(paths: store.paths, keys: keys)
    let taken = try store.takeHello(
      from: peer, revocations: try revocations(), keys: try NotebookEntries.checkedKeys(peerHello?.keys ?? []),
      trustedNames: {
        Dictionary(
          try trustStore.load().peers.map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
      }, now: clock())
    try taken.trustChanges.apply(paths: store.paths, keys: keys)
    return taken
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
