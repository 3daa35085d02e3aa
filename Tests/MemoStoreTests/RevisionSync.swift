import MemoCore
import MemoProtocol
import MemoTestSupport

@testable import MemoStore

/// The store-level hostile cases (issue 13) speak in revisions; sync version 2 moves records
/// sealed per notebook. `RevisionSink` feeds revisions through the production `SyncSink`
/// as a member of the receiving store's default notebook: each is sealed with that
/// notebook's key, as a member sharing it would send it, and goes through every check of a
/// real sync (numbers, own replica, replica cap, shape after opening, held removals, guard).
final class RevisionSink {
  let store: MemoStore
  let notebook: NotebookID
  let sink: SyncSink
  /// Who signs the revisions fed in: one device owns every made-up replica of these tests,
  /// whichever peer (`peer`) passes them on.
  let author = TestAuthor.shared

  init(
    store: MemoStore, peer: DeviceID, peerReplica: ReplicaID, deleteGuard: MassDeleteGuard?,
    maximumReplicas: Int = SyncLimits.maximumReplicas, maximumHeld: Int = SyncLimits.maximumHeldPerPeer,
    maximumIntroduced: Int = SyncLimits.maximumReplicasPerPeer, notebook: NotebookID? = nil,
    maximumNewMemos: Int = SyncLimits.maximumNewMemosPerPeerPerDay, maximumFirstFill: Int? = nil,
    listingIndexDeferral: Int = MemoStore.listingIndexDeferral
  ) throws {
    self.store = store
    self.notebook = try notebook ?? store.defaultNotebook().id
    // The made-up revisions' author writes as a member of the notebook (sync version 3 takes
    // a record only from a member), so every other check applies to them.
    try store.share(self.notebook, with: author.device, as: .member, now: 1)
    sink = try SyncSink(
      store: store, peer: peer, peerReplica: peerReplica, deleteGuard: deleteGuard,
      plan: SyncPlan(receiving: [self.notebook: .member], announced: [self.notebook]), maximumReplicas: maximumReplicas,
      maximumHeld: maximumHeld, maximumIntroduced: maximumIntroduced, maximumNewMemos: maximumNewMemos,
      maximumFirstFill: maximumFirstFill, listingIndexDeferral: listingIndexDeferral)
  }

  var outcome: SyncMessage.Outcome { sink.outcome }

  /// `owner`: the real store whose own revisions these are, which signs them and binds its
  /// replica (a legacy binding of another device's replica by the test author would be a
  /// squat); nil: the test author's made-up revisions.
  func apply(_ batch: SyncBatchCodec.Batch, now: Timestamp, owner: MemoStore? = nil) throws -> UInt64 {
    let records = try batch.revisions.map { revision in
      var revision = revision
      revision.notebook = notebook
      return try store.sealRecord(revision)
    }
    var (signed, bindings) = author.signed(records)
    if let owner {
      let signer = TestAuthor(key: try owner.signer())
      signed = records.map(signer.sign)
      bindings = try Set(records.map(\.dot.origin)).compactMap { try owner.binding(of: $0) }
      try store.share(notebook, with: signer.device, as: .member, now: 1)
    }
    return try sink.apply(
      SyncRecordBatch.Batch(position: batch.position, bindings: bindings, records: signed), now: now)
  }

  /// `done.knowledge` is claimed for the notebook.
  func finish(_ done: SyncMessage.Done, now: Timestamp) throws -> SyncMessage.Outcome {
    try sink.finish(
      SyncMessage.Done(
        position: done.position, knowledge: VersionVector(),
        notebooks: [notebook: try SyncRules.checkedVector(done.knowledge, "test knowledge")]),
      now: now)
  }
}

/// The production `SyncSource` of a store's default notebook, its records opened again into
/// revisions (for `RevisionSink`).
final class RevisionSource {
  let store: MemoStore
  let source: SyncSource

  init(store: MemoStore, peerKnowledge: VersionVector, from start: UInt64) throws {
    self.store = store
    let notebook = try store.defaultNotebook().id
    source = try SyncSource(
      store: store, plan: [notebook: SyncPlan.Outgoing(knowledge: peerKnowledge, start: start)])
  }

  var position: UInt64 { source.position }

  func nextBatch() throws -> SyncBatchCodec.Batch? {
    guard let batch = try source.nextBatch() else { return nil }
    let revisions = try batch.records.compactMap { record -> SyncRevision? in
      guard case .revision(let revision) = try store.openRecord(record) else { return nil }
      return revision
    }
    return SyncBatchCodec.Batch(position: batch.position, revisions: revisions)
  }
}
