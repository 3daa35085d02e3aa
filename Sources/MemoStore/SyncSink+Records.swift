import MemoCore
import MemoProtocol

/// One batch's reads and writes: the facts the receive policy decides on, read in bulk
/// for the batch, and each record's decision carried out. Runs inside the batch's
/// transaction.
extension SyncSink {
  /// Reads what the batch's decisions need, into `policy`: this replica's sequence now,
  /// purges taken meanwhile, the batch's replica bindings (within the peer's quota of new
  /// replicas), the relayed bytes of authors not counted yet; returns who wrote each
  /// record, from the signatures checked before the transaction.
  func readFacts(
    of batch: SyncRecordBatch.Batch, prechecked: PrecheckedSignatures, into policy: inout SyncReceivePolicy,
    now: Timestamp
  ) throws -> [SyncAuthorship] {
    policy.receiver = try store.receiver()
    if try store.purgeCount() != policy.purged.count { policy.purged = try store.purgedMemos() }
    let refused = try store.takeBindings(
      batch.bindings, from: peer, quota: maximumIntroduced, verified: offered.verified, now: now)
    let authorships = try store.authorships(of: batch.records, refused: refused, prechecked: prechecked)
    for pair in policy.uncountedRelayedAuthors(batch.records, authorships) {
      policy.learnRelayedBytes(try store.relayedBytes(of: pair.author, in: pair.notebook), of: pair)
    }
    return authorships
  }

  /// Carries out the policy's decision for one record.
  /// `opened`: the record as it opened before the transaction, if it did.
  func take(
    _ record: SyncRecord, _ authorship: SyncAuthorship, opened: SyncRevision? = nil,
    _ policy: inout SyncReceivePolicy, now: Timestamp
  ) throws {
    switch policy.decide(record, authorship) {
    case .skip: return
    case .keepAside(let reason): try store.quarantine(record, from: peer, reason: reason, now: now)
    case .refuse(let violation): throw violation
    case .apply(.relay, _):
      let result = try store.applyRelayed(record, receiver: policy.receiver, now: now)
      try policy.count(result, in: record.notebook, as: .relay)
    case .apply(.member, let author): try takeMember(record, author: author, opened: opened, &policy, now: now)
    }
  }

  /// A member's record: opened with the notebook's key, decided again, merged.
  private func takeMember(
    _ record: SyncRecord, author: DeviceID?, opened early: SyncRevision?, _ policy: inout SyncReceivePolicy,
    now: Timestamp
  ) throws {
    let opened: SyncOpenedRecord
    if var revision = early {
      revision.record?.author = author
      opened = .revision(revision)
    } else {
      do {
        switch try store.openRecord(record, author: author) {
        case .revision(let revision): opened = .revision(revision)
        case .missingKey: opened = .missingKey
        }
      } catch let violation as SyncViolation {
        opened = .unreadable(violation)
      }
    }
    switch policy.decide(opened: opened, of: record, author: author) {
    case .keepAside(let reason): try store.quarantine(record, from: peer, reason: reason, now: now)
    case .refuse(let violation): throw violation
    case .apply:
      guard case .revision(let revision) = opened else { return }
      let holding = deleteGuard == nil ? nil : peer
      let result = try store.applyRemote(revision, holdingFor: holding, receiver: policy.receiver)
      try policy.count(result, in: record.notebook, as: .member)
    case .skip: return
    }
  }
}
