import MemoCore
import MemoCrypto
import MemoProtocol

/// The decoders sync version 2 added (notebooks and the blind relay): record batches, the
/// content a record seals, and the notebook offers of a `sync-hello` with the decision a
/// device makes on each.
extension FuzzTargets {
  /// A `sync-batch` of records: a batch that decodes round-trips, every record passes the
  /// clear-part checks, and what a relay does with it (the receiver's rules, the replica
  /// budget, the head rules on clocks) runs without trapping.
  static func syncRecords(_ data: [UInt8]) {
    guard let batch = try? SyncRecordBatch.decode(data) else { return }
    precondition(
      (try? SyncRecordBatch.decode(SyncRecordBatch.encode(batch))) == batch, "a record batch that does not round-trip")
    let receiver = SyncRules.Receiver(replica: ReplicaID(String(repeating: "a", count: 32))!, sequence: 1000)
    var budget = ReplicaBudget(known: [], maximum: 64)
    var heads: [VersionVector] = []
    for record in batch.records {
      precondition((try? SyncRules.checkNumbers(record)) != nil, "a decoded record that fails its checks")
      precondition(record.sealed.count <= SyncRecord.maximumSealedBytes)
      precondition(SyncRecordBatch.encodedSize(record) <= data.count, "a record larger than its batch")
      _ = try? budget.admit(record.dot.origin)
      guard (try? SyncRules.admit(record, into: receiver)) == true else { continue }
      _ = record.associatedData
      // The relay's head rules: keep what no kept record has seen, drop what it has seen.
      if heads.contains(where: { $0.covers(record.clock) }) { continue }
      heads = heads.filter { !record.clock.covers($0) } + [record.clock]
    }
  }

  /// What a record seals, once opened: content that decodes is re-encoded to the same bytes,
  /// and the revision it makes passes or fails the shape checks without trapping.
  static func recordContent(_ data: [UInt8]) {
    let replica = ReplicaID(String(repeating: "b", count: 32))!
    let record = SyncRecord(
      notebook: NotebookID.migrated, memo: MemoID(canonical: "8e0f3d4a-1b2c-4d5e-8f90-123456789abc") ?? MemoID(),
      dot: Dot(origin: replica, seq: 2), clock: VersionVector([replica: 2]), keyID: NotebookID.migrated.rawValue,
      sealed: [])
    guard let revision = RecordContent.decode(data, of: record) else { return }
    // Padded content (sync version 3) and the unpadded kind of version-2 records each
    // re-encode as they came.
    let again =
      data.first == RecordContent.paddedVersion
      ? RecordContent.encode(revision) : RecordContent.encodeUnpadded(revision)
    precondition(again == data, "record content that does not round-trip")
    precondition(
      revision.memo == record.memo && revision.head.dot == record.dot && revision.notebook == record.notebook)
    _ = try? SyncRules.checkShape(revision)
  }

  /// The notebooks and keys of a version-3 `sync-hello`: entries that pass their checks are
  /// in range (heads, knowledge, cursor), a notebook the sender does not hold claims no
  /// knowledge, and every key is 32 bytes.
  static func notebookEntries(_ data: [UInt8]) {
    guard let hello = try? SyncMessage.decodeHello(data),
      let entries = try? NotebookEntries.check(hello.notebooks ?? []),
      let keys = try? NotebookEntries.checkedKeys(hello.keys ?? [])
    else { return }
    precondition(entries.count <= NotebookEntries.maximumEntries && keys.count <= NotebookEntries.maximumKeys)
    precondition(keys.allSatisfy { $0.count == 32 })
    for entry in entries {
      precondition(entry.heads.count <= NotebookEntries.maximumHeads && Set(entry.heads).count == entry.heads.count)
      precondition(entry.knowledge.entries.count <= SyncLimits.maximumReplicas)
      precondition(entry.knowledge.entries.values.allSatisfy { $0 <= SyncLimits.maximumSequence })
      precondition(entry.held || (entry.knowledge.entries.isEmpty && entry.cursor == nil), "knowledge of an invitation")
    }
  }

  /// A `sync-ops` frame: what decodes is within its limits and re-encodes to the same bytes,
  /// and its ops fed to a log are admitted or refused without trapping.
  static func syncOps(_ data: [UInt8]) {
    guard let notebooks = try? SyncOps.decode(data) else { return }
    precondition(SyncOps.encode(notebooks) == data, "a sync-ops frame that does not round-trip")
    precondition(notebooks.count <= SyncOps.maximumNotebooks)
    for notebook in notebooks.prefix(2) {
      precondition(notebook.ops.count <= MembershipLimits.opsPerFrame)
      var log = MembershipLog(notebook: notebook.id, verifier: MembershipCrypto())
      for op in notebook.ops.prefix(8) { _ = try? log.insert(bytes: op) }
      _ = log.state
    }
  }

  /// One op of a notebook's membership log (sync version 3): an op that decodes re-encodes
  /// to the same bytes within the limits, and a log admits or refuses it, and says what it
  /// means, without trapping.
  static func notebookOp(_ data: [UInt8]) {
    guard let op = try? NotebookOp.decode(data) else { return }
    precondition(op.encoded == data, "an op that does not round-trip")
    precondition(op.parents.count <= MembershipLimits.parents && data.count <= MembershipLimits.opBytes)
    var log = MembershipLog(notebook: op.notebook, verifier: MembershipCrypto())
    let outcome = try? log.insert(op)
    precondition(outcome == nil || op.kind == .create, "an op admitted without its parents")
    _ = log.state
  }

  /// Revocations and purges as a hello carries them (the first byte chooses which): one
  /// that decodes round-trips and is within its limits, and checking who signed it
  /// (`Ed25519.signer`, as the store does before believing it) never traps.
  static func signedStatements(_ data: [UInt8]) {
    guard let first = data.first else { return }
    let bytes = Array(data.dropFirst())
    if first % 2 == 0 {
      guard let revocation = try? Revocation.decode(bytes) else { return }
      precondition(revocation.encoded == bytes, "a revocation that does not round-trip")
      precondition(revocation.cut.count <= Revocation.maximumCut && bytes.count <= Revocation.maximumSize)
      precondition(revocation.cut.values.allSatisfy { $0 <= SyncLimits.maximumSequence })
      _ = Ed25519.signer(
        of: revocation.signedMessage, signature: revocation.signature, publicKey: revocation.revokerKey)
    } else {
      guard let purge = try? Purge.decode(bytes) else { return }
      precondition(purge.encoded == bytes, "a purge that does not round-trip")
      precondition(bytes.count <= Purge.maximumSize)
      _ = Ed25519.signer(of: purge.signedMessage, signature: purge.signature, publicKey: purge.authorKey)
    }
  }
}
