import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// Purges (docs/PROTOCOL.md, "Purges"): `delete --purge` signs one, every member and relay of
/// the memo's notebook takes it from a hello, checks that a member of that notebook signed
/// it, and drops the memo's rows, history, trash entry, held removals and sealed records.
/// The signed bytes are kept, and passed on to the notebook's members and relays, so that
/// a device that comes back later drops the memo too, and a record of it that arrives
/// afterwards is dropped on arrival.
extension MemoStore {
  /// Purges `memo` here and signs the purge every member and relay of its notebook applies
  /// at its next sync. Returns the notebook (nil: the memo was in none, so nothing is sent).
  @discardableResult
  public func purge(_ memo: MemoID, now: Timestamp) throws -> NotebookID? {
    let signer = try signer()
    let notebook = try batch { () throws -> NotebookID? in
      let notebook: NotebookID? = try sql {
        try db.withCached("SELECT notebook FROM memos WHERE id = ?") { read in
          try read.bind(1, memo)
          return try read.step() && !read.isNull(0) ? read.notebook(0) : nil
        }
      }
      if let notebook {
        var purge = Purge(authorKey: signer.publicKey, notebook: notebook, memo: memo, made: now, signature: [])
        do { purge.signature = try signer.signature(for: purge.signedMessage) } catch {
          throw MemoPeerError(.crypto, "signing the purge failed", diagnostics: "\(error)")
        }
        try keep(purge, author: try deviceID(), via: nil, now: now)
      }
      try dropPurged(memo, in: notebook)
      return notebook
    }
    checkpointAfterPurge()
    return notebook
  }

  /// Takes the purges of a peer's hello: each new one, of a notebook held here, whose
  /// signature verifies and whose author is a member (not a relay, not revoked) of that
  /// notebook here, is kept and applied; one that fails is kept aside naming `peer`.
  /// Returns how many were applied. Runs inside the caller's transaction.
  func takePurges(_ purges: [Purge], from peer: DeviceID, now: Timestamp) throws -> Int {
    guard !purges.isEmpty else { return 0 }
    let revoked = try revokedDevices()
    var applied = 0
    for purge in purges {
      let bytes = purge.encoded
      guard try !holdsStatement(bytes, in: "purges"), let found = try notebook(purge.notebook), !found.isDeleted else {
        continue
      }
      guard let author = Ed25519.signer(of: purge.signedMessage, signature: purge.signature, publicKey: purge.authorKey)
      else {
        try quarantine(
          bytes, from: peer, notebook: purge.notebook, reason: "a purge whose signature does not verify", now: now)
        continue
      }
      let isMember = try memberships(of: author).contains { $0.notebook == purge.notebook && $0.role == .member }
      guard isMember && !revoked.contains(author) else {
        try quarantine(
          bytes, from: peer, notebook: purge.notebook,
          reason: "a purge signed by a device that is not a member of that notebook here", now: now)
        continue
      }
      guard try statementCount(in: "purges", by: "author", author) < Self.maximumPurgesPerDevice else {
        try quarantine(
          bytes, from: peer, notebook: purge.notebook,
          reason: "a purge beyond the \(Self.maximumPurgesPerDevice) one device may make", now: now)
        continue
      }
      // The notebook the memo is in here decides, not the one the purge names. Kept aside
      // naming its signer, not `peer`: an honest device that does not hold the memo cannot
      // tell, keeps the purge and passes it on, and must not be blamed for it.
      if let here = try notebookHolding(purge.memo), here != purge.notebook {
        try quarantine(
          bytes, from: author, notebook: purge.notebook,
          reason: "a purge naming notebook \(purge.notebook.short) of a memo that is in another notebook here",
          now: now)
        continue
      }
      try keep(purge, author: author, via: peer, now: now)
      try dropPurged(purge.memo, in: purge.notebook)
      applied += 1
    }
    return applied
  }

  /// The purges a hello to `peer` carries: those of the notebooks this device shares with
  /// it, newest first, within `Purge.maximumPerHello` and 256 KiB of base64.
  public func purgesToSend(for peer: DeviceID) throws -> [String] {
    let shared = Set(try activeMemberships(of: peer).map(\.1.id.rawValue))
    guard !shared.isEmpty else { return [] }
    return try sql {
      let read = try db.prepare("SELECT notebook, bytes FROM purges ORDER BY received DESC, id")
      var texts: [String] = []
      var size = 0
      while try read.step(), texts.count < Purge.maximumPerHello {
        guard shared.contains(read.text(0)) else { continue }
        let text = Data(read.blob(1)).base64EncodedString()
        size += text.utf8.count
        guard size <= Self.maximumPurgeHelloBytes else { break }
        texts.append(text)
      }
      return texts
    }
  }

  static let maximumPurgeHelloBytes = 256 << 10
  /// Purges kept here of one author: a member cannot fill the table with purges of memos
  /// that never existed.
  static let maximumPurgesPerDevice = 10_000

  /// The memos purged here, each with the notebook its purge named: a record of one of them
  /// in that notebook is dropped when it arrives (the same memo id in another notebook is
  /// not that memo's purge's business).
  func purgedMemos() throws -> Set<PurgedMemo> {
    try sql {
      let read = try db.prepare("SELECT DISTINCT notebook, memo FROM purges")
      var memos: Set<PurgedMemo> = []
      while try read.step() {
        if let notebook = read.notebook(0), let memo = read.memo(1) {
          memos.insert(PurgedMemo(notebook: notebook, memo: memo))
        }
      }
      return memos
    }
  }

  /// How many distinct (notebook, memo) purges are kept: whether `purgedMemos` changed.
  func purgeCount() throws -> Int {
    try sql { Int(try db.scalarInt("SELECT count(*) FROM (SELECT DISTINCT notebook, memo FROM purges)")) }
  }

  /// The notebook `memo` is in here, as a member's row or a relay's sealed record (nil:
  /// neither, or a row in no notebook).
  private func notebookHolding(_ memo: MemoID) throws -> NotebookID? {
    try sql {
      try db.withCached(
        "SELECT notebook FROM memos WHERE id = ?1 UNION ALL SELECT notebook FROM relayed WHERE memo = ?1 LIMIT 1"
      ) { read in
        try read.bind(1, memo)
        return try read.step() && !read.isNull(0) ? read.notebook(0) : nil
      }
    }
  }

  /// After a purge, the write-ahead log is emptied into the database (whose deleted pages
  /// `secure_delete` zeroed), so no old page of the memo stays in it. Best effort: another
  /// connection reading keeps its frames until the next checkpoint.
  func checkpointAfterPurge() {
    _ = try? sql { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
  }

  // MARK: - Private

  private func keep(_ purge: Purge, author: DeviceID, via: DeviceID?, now: Timestamp) throws {
    let bytes = purge.encoded
    let id = Hex.encode(try SHA256.hash(bytes))
    try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO purges (id, notebook, memo, author, made, bytes, received, via) "
          + "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
      try insert.bind([
        .text(id), .id(purge.notebook), .id(purge.memo), .device(author), .integer(purge.made),
        .blob(bytes), .integer(now), via.map { .device($0) } ?? .null,
      ])
      _ = try insert.step()
    }
  }

  /// Every row of `memo` in `notebook` here (nil: a memo in no notebook, purged by this
  /// device alone): its head and conflict copies (tombstone included), history, trash entry,
  /// held removals, and the sealed records a relay keeps. Rows of the same id in another
  /// notebook stay. Runs inside the caller's transaction.
  private func dropPurged(_ memo: MemoID, in notebook: NotebookID?) throws {
    let values: [SQLiteValue] = [.id(memo), notebook.map { .id($0) } ?? .null]
    try sql {
      try deleteHistory("memo = ?1 AND notebook IS ?2", values)
      // The trash has no notebook: its entry goes with the memo's head row, before that row.
      for statement in [
        "DELETE FROM trash WHERE memo = ?1 AND EXISTS (SELECT 1 FROM memos WHERE id = ?1 AND notebook IS ?2)",
        "DELETE FROM memos WHERE (id = ?1 OR conflict_of = ?1) AND notebook IS ?2",
        "DELETE FROM sync_held WHERE memo = ?1 AND notebook IS ?2",
        "DELETE FROM relayed WHERE memo = ?1 AND notebook IS ?2",
        "DELETE FROM relayed_history WHERE memo = ?1 AND notebook IS ?2",
      ] {
        let delete = try db.prepare(statement)
        try delete.bind(values)
        _ = try delete.step()
      }
    }
  }
}
