import Dispatch
import MemoCore
import MemoCrypto
import MemoProtocol

/// Which device each replica belongs to (docs/design/sync-v3.md, section 2), the legacy
/// ceilings, and what was kept aside. A binding is stored only after `ReplicaBindings.verify`
/// proved it; a legacy one only for a replica within this device's legacy ceilings (one it
/// saw before version 3), where the first one stays (another key claiming it later is
/// refused); a derived replica can only ever have one.
extension MemoStore {
  /// The binding to send for `replica`: this store's own (signed now), or one learned.
  func binding(of replica: ReplicaID) throws -> ReplicaBinding? {
    if try isOwn(replica) { return try ownBinding(of: replica) }
    return try sql {
      try db.withCached("SELECT key, nonce, signature FROM replica_bindings WHERE replica = ?") { read in
        try read.bind(1, replica)
        guard try read.step() else { return nil }
        return ReplicaBinding(replica: replica, publicKey: read.blob(0), nonce: read.blob(1), signature: read.blob(2))
      }
    }
  }

  /// Whether `replica` is one of this store's own (its derived id, or its legacy one).
  func isOwn(_ replica: ReplicaID) throws -> Bool {
    if replica == replicaID { return true }
    return try replica == legacyReplicaID()
  }

  /// The device a replica is bound to here (this device for its own), nil when none is.
  public func boundDevice(of replica: ReplicaID) throws -> DeviceID? {
    if try isOwn(replica) { return try deviceID() }
    return try sql {
      try db.withCached("SELECT device FROM replica_bindings WHERE replica = ?") { read in
        try read.bind(1, replica)
        return try read.step() ? read.device(0) : nil
      }
    }
  }

  /// The public key and device a replica is bound to here, in one look-up: what a signed
  /// revision of it must verify under, and who it then names as author.
  func boundSigner(of replica: ReplicaID) throws -> (key: [UInt8], device: DeviceID)? {
    if try isOwn(replica) { return (try signer().publicKey, try deviceID()) }
    return try sql {
      try db.withCached("SELECT key, device FROM replica_bindings WHERE replica = ?") { read in
        try read.bind(1, replica)
        guard try read.step(), let device = read.device(1) else { return nil }
        return (read.blob(0), device)
      }
    }
  }

  /// Inserts a binding `ReplicaBindings.verify` proved belongs to `device`, of a replica
  /// bound to nothing here yet, received from `peer`, and learns the device's key. Runs
  /// inside the caller's transaction.
  private func store(_ binding: ReplicaBinding, device: DeviceID, from peer: DeviceID, now: Timestamp) throws {
    try sql {
      try db.withCached(
        """
        INSERT INTO replica_bindings (replica, device, key, nonce, signature, received, via)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        """
      ) { insert in
        try insert.bind([
          .replica(binding.replica), .device(device), .blob(binding.publicKey), .blob(binding.nonce),
          .blob(binding.signature), .integer(now), .device(peer),
        ])
        _ = try insert.step()
      }
    }
    try learnKey(binding.publicKey, of: device, now: now)
  }

  /// Keeps a device's public key (its SHA-256 is the device ID: the caller checked).
  func learnKey(_ key: [UInt8], of device: DeviceID, now: Timestamp) throws {
    try sql {
      try db.withCached("INSERT OR IGNORE INTO device_keys (device, key, learned) VALUES (?, ?, ?)") { insert in
        try insert.bind([.device(device), .blob(key), .integer(now)])
        _ = try insert.step()
      }
    }
  }

  /// The highest sequence of `origin` this device had seen before sync version 3: unsigned
  /// revisions of it are taken up to here (0: none at all).
  func legacyCeiling(of origin: ReplicaID) throws -> UInt64 {
    try sql {
      try db.withCached("SELECT seq FROM legacy_ceiling WHERE origin = ?") { read in
        try read.bind(1, origin)
        return try read.step() ? UInt64(bitPattern: read.int64(0)) : 0
      }
    }
  }

  /// Takes a batch's bindings from `peer` (verified, each kept unless the replica is bound
  /// to another device here, or is new and `peer` has introduced `quota` replicas here
  /// already); returns the replicas whose binding was refused, and why. What comes under a
  /// refused binding is kept aside, so a peer over its quota stops only itself. `verified`:
  /// bindings already checked, with the device each proved.
  func takeBindings(
    _ bindings: [ReplicaBinding], from peer: DeviceID, quota: Int = SyncLimits.maximumReplicasPerPeer,
    verified: [ReplicaBinding: DeviceID?] = [:], now: Timestamp
  ) throws -> [ReplicaID: String] {
    var refused: [ReplicaID: String] = [:]
    var introduced: Int?
    for binding in bindings {
      // Verified before the transaction (`OfferedBindings`) when the session did; else here.
      guard let device = verified[binding] ?? ReplicaBindings.verify(binding) else {
        refused[binding.replica] = "a replica binding whose signature or derivation does not hold"
        continue
      }
      // One look-up per binding: known (or claimed by another device) needs no quota.
      if let bound = try boundDevice(of: binding.replica) {
        if bound != device { refused[binding.replica] = "a binding of a replica that belongs to another device here" }
        continue
      }
      // A legacy binding proves nothing of where its replica id came from: any key can
      // claim any id with one. Taken only for a replica this device saw before it signed
      // anything (its legacy ceiling); otherwise a device could squat a newer device's
      // derived replica before that device first reaches this one, and every later record
      // of the real owner would be kept aside as a forgery.
      if binding.isLegacy, try legacyCeiling(of: binding.replica) == 0 {
        refused[binding.replica] =
          "a legacy binding of replica \(binding.replica.short) by \(device.short), a replica this "
          + "device never saw before signing (a squat)"
        continue
      }
      let count = try introduced ?? replicasIntroduced(by: peer)
      guard count < quota else {
        refused[binding.replica] = "a new replica beyond the \(quota) this peer may introduce here"
        continue
      }
      introduced = count + 1
      try store(binding, device: device, from: peer, now: now)
    }
    return refused
  }

  /// How many replica bindings came first from `peer`: what its quota counts.
  func replicasIntroduced(by peer: DeviceID) throws -> Int {
    try sql {
      try db.withCached("SELECT count(*) FROM replica_bindings WHERE via = ?") { read in
        try read.bind(1, peer)
        _ = try read.step()
        return Int(read.int64(0))
      }
    }
  }

  /// Who wrote a record, or why it is refused (`SyncAuthorship`: the receive policy
  /// weighs it).
  typealias Authorship = SyncAuthorship

  /// A signed record must verify under the key its replica is bound to; an unsigned one
  /// must be within the legacy ceiling of its replica.
  func authorship(of record: SyncRecord, refused: [ReplicaID: String]) throws -> Authorship {
    try authorships(of: [record], refused: refused)[0]
  }

  /// `authorship(of:refused:)` for a batch's records, in their order, inside the caller's
  /// transaction: the checks run on this thread, never waited for on others (see
  /// `PrecheckedSignatures`, which checks a large batch's signatures before the
  /// transaction, on every core).
  func authorships(of records: [SyncRecord], refused: [ReplicaID: String]) throws -> [Authorship] {
    try authorships(of: records, refused: refused, prechecked: .none)
  }

  /// The look-ups of `authorships` (the replica's binding, a revoked device's cut, the
  /// legacy ceiling) without the signature checks they leave to make, so a caller can run
  /// those before the transaction (`precheckSignatures`).
  func signatureChecks(of records: [SyncRecord], refused: [ReplicaID: String]) throws -> SignatureChecks {
    var pending = SignatureChecks()
    pending.results.reserveCapacity(records.count)
    // A batch holds the revisions of a few replicas: each is looked up once.
    var signers: [ReplicaID: (key: [UInt8], device: DeviceID)?] = [:]
    // What revoked devices signed beyond their cut counts for nothing (PROTOCOL.md,
    // "Revocations"), and is refused before its signature costs a check.
    let revoked = try revokedCuts()
    // Who may write in each notebook, by its log (read once per notebook and batch).
    var states: [NotebookID: MembershipState?] = [:]
    for (index, record) in records.enumerated() {
      if let reason = refused[record.dot.origin] {
        pending.results.append(.refused(reason))
      } else if let signature = record.signature {
        let origin = record.dot.origin
        let signer: (key: [UInt8], device: DeviceID)?
        if let known = signers[origin] {
          signer = known
        } else {
          signer = try boundSigner(of: origin)
          signers[origin] = .some(signer)
        }
        if let (key, device) = signer {
          if let cut = revoked[device], record.dot.seq > cut[origin] ?? 0 {
            pending.results.append(.refused("a revision signed by \(device.short) after it was revoked"))
            continue
          }
          if states[record.notebook] == nil { states[record.notebook] = .some(try membershipState(record.notebook)) }
          if let state = states[record.notebook] ?? nil {
            switch Self.writer(device, of: record, in: state) {
            case .member: break
            case .unknown:
              pending.results.append(.waiting)
              continue
            case .refused(let reason):
              pending.results.append(.refused(reason))
              continue
            }
          }
          pending.checks.append((signature, record.signedMessage, key))
          pending.checked.append((index, device))
          pending.results.append(nil)
        } else {
          pending.results.append(.refused("a signed revision of a replica bound to no device here"))
        }
      } else if record.dot.seq <= (try legacyCeiling(of: record.dot.origin)) {
        pending.results.append(.author(nil))
      } else {
        pending.results.append(.refused("an unsigned revision beyond what this device had seen before signing"))
      }
    }
    return pending
  }

  enum Writer: Equatable {
    case member
    /// The log says nothing of the device yet.
    case unknown
    case refused(String)
  }

  /// Whether `device` may have written `record` by its notebook's log: a member, or a
  /// device removed from it up to its cut (what it wrote before it was removed). A relay
  /// never writes; a device removed writes nothing beyond its cut.
  static func writer(_ device: DeviceID, of record: SyncRecord, in state: MembershipState) -> Writer {
    switch state.members[device] {
    case .member?: return .member
    case .relay?: return .refused("a revision signed by \(device.short), a relay of the notebook (relays never write)")
    case nil:
      guard let cut = state.cuts[device] else { return .unknown }
      guard record.dot.seq <= cut[record.dot.origin] ?? 0 else {
        return .refused("a revision signed by \(device.short) after it was removed from the notebook")
      }
      return .member
    }
  }

  /// What the look-ups settled, and the signature checks left: (signature, message, key),
  /// with the record each is for and the device it would prove.
  struct SignatureChecks {
    var results: [Authorship?] = []
    var checks: [([UInt8], [UInt8], [UInt8])] = []
    var checked: [(index: Int, device: DeviceID)] = []

    /// Every record's authorship, given whether each check verified (in `checks`' order).
    func settled(_ valid: [Bool]) -> [Authorship] {
      var results = self.results
      for (check, valid) in zip(checked, valid) {
        results[check.index] =
          valid
          ? .author(check.device)
          : .refused("a revision whose signature does not match the device that owns its replica")
      }
      return results.map { $0 ?? .refused("not checked") }
    }
  }

  /// Whether each (signature, message, public key) verifies, checked in parallel for more
  /// than a few (each check is independent and holds no lock). Never inside a write
  /// transaction: it waits for the other threads (`PrecheckedSignatures`).
  static func verifyConcurrently(_ checks: [([UInt8], [UInt8], [UInt8])]) -> [Bool] {
    guard checks.count > 8 else { return checks.map { Ed25519.verify($0.0, message: $0.1, publicKey: $0.2) } }
    var valid = [Bool](repeating: false, count: checks.count)
    valid.withUnsafeMutableBufferPointer { buffer in
      let results = UncheckedBuffer(buffer)
      DispatchQueue.concurrentPerform(iterations: checks.count) { index in
        let check = checks[index]
        results.set(index, Ed25519.verify(check.0, message: check.1, publicKey: check.2))
      }
    }
    return valid
  }

  // MARK: - Quarantine

  /// Keeps what `peer` sent that did not pass the checks, sealed as it came, with the
  /// reason (at most `maximumQuarantined` per peer: beyond, it is only counted). Runs inside
  /// the caller's transaction.
  func quarantine(_ item: [UInt8], from peer: DeviceID, notebook: NotebookID?, reason: String, now: Timestamp) throws {
    try sql {
      let count = try db.withCached("SELECT count(*) FROM quarantine WHERE peer = ?") { read in
        try read.bind(1, peer)
        _ = try read.step()
        return Int(read.int64(0))
      }
      guard count < Self.maximumQuarantined else { return }
      try db.withCached(
        "INSERT INTO quarantine (peer, notebook, reason, item, received) VALUES (?, ?, ?, ?, ?)"
      ) { insert in
        try insert.bind([
          .device(peer), notebook.map { .id($0) } ?? .null, .text(reason), .blob(item), .integer(now),
        ])
        _ = try insert.step()
      }
    }
  }

  /// Keeps one received record that failed its checks aside, sealed as it came (as a
  /// one-record sync-batch), with the reason and `peer`'s name.
  func quarantine(_ record: SyncRecord, from peer: DeviceID, reason: String, now: Timestamp) throws {
    try quarantine(
      SyncRecordBatch.encode(.init(position: 0, records: [record])), from: peer, notebook: record.notebook,
      reason: reason, now: now)
  }

  /// Records kept aside from one peer at most.
  static let maximumQuarantined = 4096

  /// What is kept aside, per peer and reason.
  public func quarantined() throws -> [(peer: DeviceID, reason: String, count: Int)] {
    try sql {
      let read = try db.prepare("SELECT peer, reason, count(*) FROM quarantine GROUP BY peer, reason ORDER BY peer")
      var rows: [(DeviceID, String, Int)] = []
      while try read.step() {
        guard let peer = read.device(0) else { continue }
        rows.append((peer, read.text(1), Int(read.int64(2))))
      }
      return rows
    }
  }
}

/// A buffer that `concurrentPerform`'s iterations each write one distinct element of.
/// `@unchecked Sendable`: every index is written by exactly one iteration, and the buffer
/// outlives them (concurrentPerform returns only after all of them).
private struct UncheckedBuffer: @unchecked Sendable {
  let buffer: UnsafeMutableBufferPointer<Bool>
  init(_ buffer: UnsafeMutableBufferPointer<Bool>) { self.buffer = buffer }
  func set(_ index: Int, _ value: Bool) { buffer[index] = value }
}
