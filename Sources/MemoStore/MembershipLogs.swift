import MemoCore
import MemoCrypto
import MemoProtocol

/// The membership logs of a store's notebooks (`notebook_ops`, schema 10), read once per
/// store and kept while SQLite's `data_version` of this connection stays the same: another
/// process (the daemon, a command) may add ops meanwhile. This connection's own writes drop
/// what they change (`forget`), and a transaction that rolls back drops everything
/// (`MemoStore.batch`), so the cache never holds an op the file does not.
final class MembershipCache {
  var logs: [NotebookID: MembershipLog] = [:]
  var states: [NotebookID: MembershipState] = [:]
  var dataVersion: Int64 = -1

  func reset() {
    logs = [:]
    states = [:]
  }

  func forget(_ notebook: NotebookID) {
    logs[notebook] = nil
    states[notebook] = nil
  }
}

/// Reading and writing the logs. Every op here was admitted by `MembershipLog.insert`
/// (signature, parents, genesis) before it was written, so reading them back only places
/// them (`restore`).
extension MemoStore {
  /// The one verifier of ops: OpenSSL and libsodium (MemoCrypto).
  static let opVerifier = MembershipCrypto()

  private func refreshMembershipCache() throws {
    let version = try sql { try db.withCached("PRAGMA data_version") { try $0.step() ? $0.int64(0) : 0 } }
    if version != membership.dataVersion {
      membership.reset()
      membership.dataVersion = version
    }
  }

  /// The log of `notebook` as this device holds it; nil when it holds no op of it.
  func membershipLog(_ notebook: NotebookID) throws -> MembershipLog? {
    try refreshMembershipCache()
    if let log = membership.logs[notebook] { return log }
    let rows = try sql {
      try db.withCached("SELECT bytes FROM notebook_ops WHERE notebook = ? ORDER BY position") { read in
        try read.bind(1, notebook)
        var rows: [[UInt8]] = []
        while try read.step() { rows.append(read.blob(0)) }
        return rows
      }
    }
    guard !rows.isEmpty else { return nil }
    var log = MembershipLog(notebook: notebook, verifier: Self.opVerifier)
    for bytes in rows {
      do { try log.restore(bytes: bytes) } catch {
        throw MemoPeerError(
          .integrity, "the membership log of notebook \(notebook.short) is damaged in \(paths.databasePath)",
          hint: "restore it from a backup if it is damaged", remedy: .checkStore,
          diagnostics: "\(error)")
      }
    }
    membership.logs[notebook] = log
    return log
  }

  /// What the log of `notebook` says (nil without a log): computed once per change.
  func membershipState(_ notebook: NotebookID) throws -> MembershipState? {
    try refreshMembershipCache()
    if let state = membership.states[notebook] { return state }
    guard let log = try membershipLog(notebook) else { return nil }
    let state = log.state
    membership.states[notebook] = state
    return state
  }

  /// An empty log of `notebook`, for its genesis or a peer's first ops.
  func emptyLog(_ notebook: NotebookID) -> MembershipLog {
    MembershipLog(notebook: notebook, verifier: Self.opVerifier)
  }

  /// Writes an op `log` just admitted, after the ops already written (a causal order: the
  /// log admits an op only after its parents). `via`: the peer it came from, nil when made
  /// here. Runs inside the caller's transaction.
  func writeOp(_ op: NotebookOp, of notebook: NotebookID, via: DeviceID?, now: Timestamp) throws {
    let bytes = op.encoded
    guard let id = Self.opVerifier.id(of: op), let author = Self.opVerifier.device(of: op.author) else {
      throw MemoPeerError(.crypto, "could not hash a membership op")
    }
    try sql {
      try db.withCached(
        """
        INSERT OR IGNORE INTO notebook_ops (notebook, position, id, author, bytes, received, via)
        VALUES (?1, (SELECT coalesce(max(position), 0) + 1 FROM notebook_ops WHERE notebook = ?1), ?2, ?3, ?4, ?5, ?6)
        """
      ) { insert in
        try insert.bind([
          .id(notebook), .blob(id.bytes), .device(author), .blob(bytes), .integer(now),
          via.map { .device($0) } ?? .null,
        ])
        _ = try insert.step()
      }
    }
    membership.forget(notebook)
    try learnKey(op.author, of: author, now: now)
  }

  /// The notebooks with a log here (held, invited or declined).
  func notebooksWithLogs() throws -> [NotebookID] {
    try sql {
      let read = try db.prepare("SELECT DISTINCT notebook FROM notebook_ops ORDER BY notebook")
      var ids: [NotebookID] = []
      while try read.step() { if let id = read.notebook(0) { ids.append(id) } }
      return ids
    }
  }

  // MARK: - Public keys

  /// The public key of `device` as this device knows it (its own, or one learned from a
  /// hello, an op or a binding: each checked against the device ID), nil when unknown.
  func publicKey(of device: DeviceID) throws -> [UInt8]? {
    if let own = ownDeviceID(), own == device { return try signer().publicKey }
    return try sql {
      try db.withCached("SELECT key FROM device_keys WHERE device = ?") { read in
        try read.bind(1, device)
        return try read.step() ? read.blob(0) : nil
      }
    }
  }

  /// Keeps the public keys a peer's hello carries whose SHA-256 is the device ID of a device
  /// in one of this device's logs (or the peer's own): any other is of no use here, and a
  /// hello cannot fill the table with keys of nobody.
  func learnKeys(_ keys: [[UInt8]], from peer: DeviceID, now: Timestamp) throws {
    guard !keys.isEmpty else { return }
    var wanted: Set<DeviceID> = [peer]
    for notebook in try notebooksWithLogs() {
      if let state = try membershipState(notebook) { wanted.formUnion(state.members.keys) }
    }
    for key in keys {
      guard Self.opVerifier.isValidPublicKey(key), let device = Self.opVerifier.device(of: key), wanted.contains(device)
      else { continue }
      try learnKey(key, of: device, now: now)
    }
  }
}
