import MemoCore
import MemoCrypto
import MemoProtocol

/// Removals the mass-delete guard holds back (`sync_held`): tombstones that would delete a
/// live memo, and edits that would empty one (their content sealed in `payload`), each kept
/// per peer until the guard or a person lets them through; and the guard's ledger
/// (`sync_guard`) of removals applied from each peer without asking.
extension MemoStore {
  /// Holds a removal from `peer`. The clock joins the horizon: the revision was seen here.
  /// Runs inside the caller's transaction.
  func hold(_ revision: SyncRevision, for peer: DeviceID) throws {
    try raiseHorizon(revision.head.dot, in: revision.notebook)
    let payload: SQLiteValue
    if revision.head.isDeleted {
      payload = .null
    } else {
      let encoded = SyncBatchCodec.encode(SyncBatchCodec.Batch(position: 0, revisions: [revision]))
      do {
        payload = .blob(try sealer().seal(encoded, associatedData: Self.heldContext(revision, peer: peer)))
      } catch let error as MemoPeerError {
        throw error
      } catch {
        throw MemoPeerError(.crypto, "sealing a held edit failed", diagnostics: "\(error)")
      }
    }
    try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO sync_held "
          + "(device, memo, dot_origin, dot_seq, clock, revision, created, updated, private, payload, notebook, "
          + "record_key, record, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      try insert.bind([
        .device(peer), .id(revision.memo), .replica(revision.head.dot.origin),
        .integer(Int64(bitPattern: revision.head.dot.seq)), .blob(revision.head.clock.encoded()),
        .integer(revision.head.revision), .integer(revision.created), .integer(revision.updated),
        .integer(revision.isPrivate ? 1 : 0), payload, revision.notebook.map { .id($0) } ?? .null,
        revision.record.map { .text($0.keyID) } ?? .null, revision.record.map { .blob($0.sealed) } ?? .null,
        revision.record?.signature.map { .blob($0) } ?? .null,
      ])
      _ = try insert.step()
    }
  }

  /// A held edit's content is bound to the peer and the revision it came as.
  static func heldContext(_ revision: SyncRevision, peer: DeviceID) -> [UInt8] {
    SealingContext.heldRevision(
      peer: peer.compact, memo: revision.memo.rawValue, origin: revision.head.dot.origin.rawValue,
      seq: revision.head.dot.seq)
  }

  func heldDeleteCount(_ peer: DeviceID) throws -> Int {
    try sql {
      let count = try db.prepare("SELECT count(*) FROM sync_held WHERE device = ?")
      try count.bind(1, peer)
      _ = try count.step()
      return Int(count.int64(0))
    }
  }

  /// The removals held for `peer`, as the heads they are (tombstones, and edits opened from
  /// their sealed payload).
  func heldDeletes(_ peer: DeviceID) throws -> [SyncRevision] {
    try sql {
      let read = try db.prepare(
        "SELECT memo, dot_origin, dot_seq, clock, revision, created, updated, private, payload, notebook, "
          + "record_key, record, signature FROM sync_held WHERE device = ?")
      try read.bind(1, peer)
      var result: [SyncRevision] = []
      while try read.step() {
        guard let memo = read.memo(0), let clock = VersionVector(encoded: read.blob(3)) else {
          continue
        }
        let tombstone = SyncRevision(
          memo: memo,
          head: HeadSummary(
            dot: try storedDot(read, 1, 2), clock: clock,
            revision: read.int64(4), isDeleted: true),
          created: read.int64(5), updated: read.int64(6), isPrivate: read.int64(7) != 0, title: "", body: "",
          tags: [], notebook: read.isNull(9) ? nil : read.notebook(9))
        // The sealed payload is a version-1 batch, which has no notebook: the column says.
        var held = read.isNull(8) ? tombstone : try openHeld(read.blob(8), as: tombstone, peer: peer)
        held.notebook = tombstone.notebook
        if !read.isNull(10), !read.isNull(11) {
          let signature = read.isNull(12) ? nil : read.blob(12)
          held.record = SealedRecord(
            keyID: read.text(10), sealed: read.blob(11), signature: signature,
            author: try signature == nil ? nil : boundDevice(of: held.head.dot.origin))
        }
        result.append(held)
      }
      return result
    }
  }

  /// Opens a held edit; one that fails its check is named, never shown.
  private func openHeld(_ sealed: [UInt8], as held: SyncRevision, peer: DeviceID) throws -> SyncRevision {
    let plaintext: [UInt8]
    do {
      plaintext = try sealer().open(sealed, associatedData: Self.heldContext(held, peer: peer))
    } catch let error as MemoPeerError {
      throw error
    } catch {
      throw MemoPeerError(
        .integrity, "an edit of memo \(held.memo.short) held back by the mass-delete guard failed its integrity check",
        remedy: .keepDeleted(device: nil),
        diagnostics: "\(error)")
    }
    guard let batch = try? SyncBatchCodec.decode(plaintext), batch.revisions.count == 1 else {
      throw MemoPeerError(.corruptDatabase, "a held edit of memo \(held.memo.short) cannot be read")
    }
    return batch.revisions[0]
  }

  func dropHeldDeletes(_ peer: DeviceID) throws {
    try sql {
      let delete = try db.prepare("DELETE FROM sync_held WHERE device = ?")
      try delete.bind(1, peer)
      _ = try delete.step()
    }
  }

  /// A person's answer to the removals held from `peer`: `apply` deletes (or empties) the
  /// memos here too; `keep` keeps them, as new revisions that have seen the removals (so the
  /// memos come back on the peer at the next sync). Returns how many were settled.
  public func settleHeldDeletes(from peer: DeviceID, apply: Bool, now: Timestamp) throws -> Int {
    try batch {
      let held = try heldDeletes(peer)
      let receiver = try receiver()
      for revision in held {
        if apply {
          _ = try applyRemote(revision, holdingFor: nil, receiver: receiver)
        } else if let current = try loadRow(revision.memo), !current.isDeleted {
          var kept = current
          kept.revision = try MemoRules.nextRevision(after: current.revision, revision.head.revision)
          kept.updated = max(now, current.updated)
          _ = try storeLocalRevision(kept, resolvingAll: false, alsoSeen: [revision.head.clock])
        }
      }
      try dropHeldDeletes(peer)
      return held.count
    }
  }

  // MARK: - The guard's ledger

  /// Removals from `peer` applied without asking within the guard's window before `now`.
  func recentRemovals(from peer: DeviceID, now: Timestamp) throws -> Int {
    try sql {
      let read = try db.prepare("SELECT time, count FROM sync_guard WHERE device = ?")
      try read.bind(1, peer)
      var ledger: [(time: Int64, count: Int)] = []
      while try read.step() { ledger.append((read.int64(0), Int(clamping: read.int64(1)))) }
      return MassDeleteGuard.recent(ledger, now: now)
    }
  }

  /// Records removals from `peer` applied without asking, and forgets entries older than
  /// the window. Runs inside the caller's transaction.
  func recordRemovals(_ count: Int, from peer: DeviceID, now: Timestamp) throws {
    try sql {
      let forget = try db.prepare("DELETE FROM sync_guard WHERE device = ? AND time <= ?")
      let cutoff = now > Int64.min + SyncLimits.guardWindow ? now - SyncLimits.guardWindow : Int64.min
      try forget.bind([.device(peer), .integer(cutoff)])
      _ = try forget.step()
      let insert = try db.prepare("INSERT INTO sync_guard (device, time, count) VALUES (?, ?, ?)")
      try insert.bind([.device(peer), .integer(now), .integer(Int64(count))])
      _ = try insert.step()
    }
  }
}
