import MemoCore
import MemoProtocol

/// What taking a relay's answer to `history --from` did.
public struct FetchedHistory: Sendable, Equatable {
  /// Revisions new to this device's history.
  public var added = 0
  /// Revisions it had already (kept, or current).
  public var known = 0
  /// Revisions its current one does not supersede (a sync brings those): left alone.
  public var notSuperseded = 0
  /// Revisions sealed under a key generation this device does not hold.
  public var missingKey = 0
  /// Revisions that failed a check (binding, signature, revocation, seal, shape): kept
  /// aside with the relay's name, as a sync keeps them.
  public var keptAside = 0

  public init() {}
}

/// History from a relay (docs/PROTOCOL.md, "History from a relay"): the relay's side reads
/// the sealed revisions it forwarded and replaced; the member's side checks each as a
/// received record and keeps it as history, sealed like its own.
extension MemoStore {
  /// The sealed history of `memo` this device kept as a relay of `notebook`, oldest first
  /// (at most `HistoryFetch.maximumRecords`, the newest), with the bindings of their
  /// replicas; nothing unless this device relays `notebook` and shares it with `peer` (the
  /// devices its syncs send that notebook's sealed records to: what it answers is what it
  /// forwarded to them before, still sealed).
  public func relayedHistoryRecords(of memo: MemoID, in notebook: NotebookID, for peer: DeviceID) throws -> (
    records: [SyncRecord], bindings: [ReplicaBinding]
  ) {
    guard let found = try self.notebook(notebook), !found.isDeleted, found.notebook.role == .relay,
      try activeMemberships(of: peer).contains(where: { $0.0.notebook == notebook })
    else { return ([], []) }
    let records: [SyncRecord] = try sql {
      let read = try db.prepare(
        "SELECT dot_origin, dot_seq, clock, key_id, sealed, signature FROM relayed_history "
          + "WHERE memo = ? AND notebook = ? ORDER BY id DESC LIMIT ?")
      try read.bind([.id(memo), .id(notebook), .integer(Int64(HistoryFetch.maximumRecords))])
      var rows: [SyncRecord] = []
      while try read.step() {
        guard let clock = VersionVector(encoded: read.blob(2)) else { continue }
        rows.append(
          SyncRecord(
            notebook: notebook, memo: memo, dot: try storedDot(read, 0, 1), clock: clock, keyID: read.text(3),
            sealed: read.blob(4), signature: read.isNull(5) ? nil : read.blob(5)))
      }
      return rows.reversed()
    }
    var bindings: [ReplicaBinding] = []
    for replica in Set(records.map(\.dot.origin)) {
      if let binding = try binding(of: replica) { bindings.append(binding) }
    }
    return (records, bindings)
  }

  /// Takes a relay's answer for `memo` of `notebook` from `peer`, in one transaction: the
  /// bindings as a sync takes them, each record checked as a received one (its signature
  /// under its replica's binding, a revoked device's cut, the notebook key, the content's
  /// shape), and kept as history when one of the memo's current revisions here supersedes
  /// it. What fails a check is kept aside with `peer`'s name; nothing else changes.
  public func takeFetchedHistory(
    _ records: [SyncRecord], bindings: [ReplicaBinding], of memo: MemoID, in notebook: NotebookID,
    from peer: DeviceID, now: Timestamp
  ) throws -> FetchedHistory {
    _ = try sealer()
    // Before the transaction: it waits on nothing (`PrecheckedSignatures`).
    let prechecked = try precheckSignatures(of: records, bindings: bindings)
    return try batch {
      var result = FetchedHistory()
      guard try !purgedMemos().contains(PurgedMemo(notebook: notebook, memo: memo)) else { return result }
      let refused = try takeBindings(bindings, from: peer, now: now)
      let authorships = try self.authorships(of: records, refused: refused, prechecked: prechecked)
      let heads = try self.heads(of: memo).map(\.head)
      for (record, authorship) in zip(records, authorships) {
        guard record.memo == memo, record.notebook == notebook else { continue }
        if try heads.contains(where: { $0.dot == record.dot }) || isInHistory(memo, record.dot) {
          result.known += 1
          continue
        }
        guard heads.contains(where: { $0.clock.covers(record.clock) }) else {
          result.notSuperseded += 1
          continue
        }
        let author: DeviceID?
        switch authorship {
        case .author(let device): author = device
        case .refused(let reason):
          try quarantine(record, from: peer, reason: "history: " + reason, now: now)
          result.keptAside += 1
          continue
        case .waiting:
          // Written by a device the log here does not know yet: a sync brings the log first.
          result.missingKey += 1
          continue
        }
        let revision: SyncRevision
        do {
          guard case .revision(let opened) = try openRecord(record, author: author) else {
            result.missingKey += 1
            continue
          }
          try SyncRules.checkShape(opened)
          revision = opened
        } catch let violation as SyncViolation {
          try quarantine(record, from: peer, reason: "history: " + violation.detail, now: now)
          result.keptAside += 1
          continue
        }
        try keepAsHistory(Self.memo(from: revision), author: author)
        result.added += 1
      }
      if result.added > 0 { try pruneHistory(of: memo, now: Self.wallClock(), limits: historyLimits()) }
      return result
    }
  }

  private func isInHistory(_ memo: MemoID, _ dot: Dot) throws -> Bool {
    try sql {
      let read = try db.prepare("SELECT 1 FROM memo_history WHERE memo = ? AND dot_origin = ? AND dot_seq = ?")
      try read.bind([.id(memo), .id(dot.origin), .integer(Int64(bitPattern: dot.seq))])
      return try read.step()
    }
  }

  /// Keeps a revision received from outside the feed (a relay's history) as a superseded
  /// revision of its memo, sealed under this device's key as `recordHistory` keeps one
  /// (bound to the memo's id and the revision number). Runs inside the caller's transaction.
  private func keepAsHistory(_ memo: Memo, author: DeviceID?) throws {
    guard let dot = memo.dot else { return }
    let sealed = try sealedFields(of: memo)
    let added = try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO memo_history (memo, sealed_as, revision, dot_origin, dot_seq, clock, notebook, "
          + "author, title, body, tags, created, updated, private, deleted, size, superseded) "
          + "VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
          + "length(?8) + length(?9) + length(?10), ?15) RETURNING id, size")
      try insert.bind([
        .id(memo.id), .integer(memo.revision), .id(dot.origin),
        .integer(Int64(bitPattern: dot.seq)), .blob(memo.clock.encoded()),
        memo.notebook.map { .id($0) } ?? .null, author.map { .device($0) } ?? .null,
        .blob(sealed.title), .blob(sealed.body), .blob(sealed.tags), .integer(memo.created), .integer(memo.updated),
        .integer(memo.isPrivate ? 1 : 0),
        .integer(memo.isDeleted ? 1 : 0), .integer(Self.wallClock()),
      ])
      return try insert.step() ? (id: insert.int64(0), size: insert.int64(1)) : nil
    }
    if let added {
      try sql { try countKeptHistory(id: added.id, size: added.size, author: author?.compact ?? "-") }
    }
  }
}
