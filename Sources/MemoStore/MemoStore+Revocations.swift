import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// A revocation as this device holds it (docs/PROTOCOL.md, "Revocations").
public struct RevocationNote: Sendable, Equatable {
  public enum State: String, Sendable {
    /// Applied here: the revoked device is cut off.
    case applied
    /// It revokes this device; kept and passed on.
    case againstThisDevice = "against-this-device"
    /// A person trusted the revoked device again after it reached here.
    case overridden
  }

  public var revoker: DeviceID
  public var revoked: DeviceID
  /// The revoker's clock when it made it.
  public var made: Timestamp
  public var state: State
  /// The peer it came from; nil: made on this device.
  public var via: DeviceID?
  /// The revoked device's name on this device when the revocation was applied.
  public var name: String?
}

/// What `trust remove` / `trust revoke` did to the store.
public struct RevocationResult: Sendable, Equatable {
  public var note: RevocationNote
  /// The notebooks the device was unshared from.
  public var unshared: [NotebookID]
  /// Of those, the ones that got a new key generation.
  public var rotated: [NotebookID]
  /// What the caller applies to the node's files once the store committed: a new discovery
  /// key (the store never writes the trust store or the discovery key).
  public var trustChanges = TrustChanges(rotateDiscoveryKey: true)
}

/// Revocations: made here, taken from hellos, applied to what arrives. A revoked device is
/// unshared from every notebook (with a new key where this device is a member), dropped from
/// the trust store, and what it signs beyond its cut is kept aside on arrival, relays
/// included. The signed bytes are kept as they came, so every hello passes them on.
extension MemoStore {
  /// Signs and applies a revocation of `device`, cut at what this device has seen of the
  /// device's replicas. The caller applies the result's `trustChanges` (a new discovery key)
  /// and removes the device from the trust store.
  public func revoke(_ device: DeviceID, name: String?, now: Timestamp) throws -> RevocationResult {
    let signer = try signer()
    guard device != (try deviceID()) else {
      throw MemoPeerError(.invalidInput, "a device cannot revoke itself", hint: "run it on another of your devices")
    }
    let result = try batch {
      var revocation = Revocation(
        revokerKey: signer.publicKey, revoked: device, made: now, cut: try cut(of: device), signature: [])
      do { revocation.signature = try signer.signature(for: revocation.signedMessage) } catch {
        throw MemoPeerError(.crypto, "signing the revocation failed", diagnostics: "\(error)")
      }
      let note = RevocationNote(
        revoker: try deviceID(), revoked: device, made: now, state: .applied, via: nil, name: name)
      let (unshared, rotated) = try cutOff(device, at: revocation.cut, now: now)
      try keep(revocation, as: note, now: now)
      return RevocationResult(note: note, unshared: unshared, rotated: rotated)
    }
    return result
  }

  /// Takes the revocations of a peer's hello: each one new here is verified, decided by
  /// `RevocationRules` and, when it counts, kept and applied. One that does not verify or
  /// count is kept aside (quarantined, naming `peer`); the sync goes on. Returns what was
  /// applied. `trustedNames` gives the trust store's devices and names, read only when a new
  /// revocation needs them. Runs inside the caller's transaction.
  func takeRevocations(
    _ revocations: [Revocation], from peer: DeviceID, trustedNames: () throws -> [DeviceID: String], now: Timestamp
  ) throws -> [RevocationNote] {
    guard !revocations.isEmpty else { return [] }
    let me = try deviceID()
    var trusted: [DeviceID: String]?  // read once, when a new revocation needs it
    var applied: [RevocationNote] = []
    for revocation in revocations {
      let bytes = revocation.encoded
      guard try !holdsStatement(bytes, in: "revocations") else { continue }
      guard
        let revoker = Ed25519.signer(
          of: revocation.signedMessage, signature: revocation.signature, publicKey: revocation.revokerKey)
      else {
        try quarantine(
          bytes, from: peer, notebook: nil, reason: "a revocation whose signature does not verify", now: now)
        continue
      }
      guard try statementCount(in: "revocations", by: "revoker", revoker) < Self.maximumRevocationsPerDevice else {
        try quarantine(
          bytes, from: peer, notebook: nil,
          reason: "a revocation beyond the \(Self.maximumRevocationsPerDevice) one device may make", now: now)
        continue
      }
      let names = try trusted ?? trustedNames()
      trusted = names
      let isTrustedMember = try names[revoker] != nil && isMember(revoker)
      let context = RevocationRules.Context(
        thisDevice: me, revokerIsTrustedMember: isTrustedMember,
        revokerRevokedBy: try revokers(of: revoker))
      let note = RevocationNote(
        revoker: revoker, revoked: revocation.revoked, made: revocation.made, state: .applied, via: peer,
        name: names[revocation.revoked])
      switch RevocationRules.decide(revoker: revoker, revoked: revocation.revoked, context) {
      case .apply:
        _ = try cutOff(revocation.revoked, at: revocation.cut, now: now)
        try keep(revocation, as: note, now: now)
        applied.append(note)
      case .keepAgainstThisDevice:
        var against = note
        against.state = .againstThisDevice
        try keep(revocation, as: against, now: now)
      case .ignore(let reason):
        try quarantine(bytes, from: peer, notebook: nil, reason: "a revocation not applied: \(reason)", now: now)
      }
    }
    return applied
  }

  /// The revocations a hello carries: every one applied here or held against this device,
  /// newest first, within `Revocation.maximumPerHello` and `maximumHelloBytes`.
  public func revocationsToSend() throws -> [String] {
    try sql {
      let read = try db.prepare(
        "SELECT bytes FROM revocations WHERE state IN ('applied', 'against-this-device') ORDER BY received DESC, id "
          + "LIMIT \(Revocation.maximumPerHello)")
      var texts: [String] = []
      var size = 0
      while try read.step() {
        let text = Data(read.blob(0)).base64EncodedString()
        size += text.utf8.count
        guard size <= Revocation.maximumHelloBytes else { break }
        texts.append(text)
      }
      return texts
    }
  }

  /// Every revocation held here, newest first: for `status`, `peers` and `trust list`.
  public func revocations() throws -> [RevocationNote] {
    try sql {
      let read = try db.prepare(
        "SELECT revoker, revoked, made, state, via, name FROM revocations ORDER BY received DESC, id")
      var notes: [RevocationNote] = []
      while try read.step() {
        guard let revoker = read.device(0), let revoked = read.device(1),
          let state = RevocationNote.State(rawValue: read.text(3))
        else { continue }
        notes.append(
          RevocationNote(
            revoker: revoker, revoked: revoked, made: read.int64(2), state: state,
            via: read.isNull(4) ? nil : read.device(4), name: read.isNull(5) ? nil : read.text(5)))
      }
      return notes
    }
  }

  /// Every device revoked here, to be removed from the trust store (a revocation applied in
  /// a sync is committed first; the caller applies this after, and again at the next sync if
  /// it was cut short).
  public func revokedTrustChanges() throws -> TrustChanges {
    TrustChanges(untrust: try revokedDevices())
  }

  /// A person trusts `device` again: the revocations of it held here stop counting (they
  /// are kept, marked overridden, so the same ones coming back in a hello are not applied
  /// again), and what it signs is accepted again. A new revocation of it still applies.
  public func forgiveRevocations(of device: DeviceID) throws {
    try batch {
      try sql {
        let mark = try db.prepare("UPDATE revocations SET state = 'overridden' WHERE revoked = ? AND state = 'applied'")
        try mark.bind(1, device)
        _ = try mark.step()
        let cut = try db.prepare("DELETE FROM revoked_cut WHERE device = ?")
        try cut.bind(1, device)
        _ = try cut.step()
      }
    }
  }

  /// Per device revoked here, the highest sequence still accepted of each of its replicas
  /// (a replica it has not named: none). Read once per batch.
  func revokedCuts() throws -> [DeviceID: [ReplicaID: UInt64]] {
    let revoked = try revokedDevices()
    guard !revoked.isEmpty else { return [:] }
    var cuts = Dictionary(uniqueKeysWithValues: revoked.map { ($0, [ReplicaID: UInt64]()) })
    try sql {
      let read = try db.prepare("SELECT device, replica, seq FROM revoked_cut")
      while try read.step() {
        guard let device = read.device(0), cuts[device] != nil, let replica = read.replica(1) else { continue }
        cuts[device]?[replica] = UInt64(clamping: read.int64(2))
      }
    }
    return cuts
  }

  // MARK: - Private

  func revokedDevices() throws -> Set<DeviceID> {
    try sql {
      let read = try db.prepare("SELECT DISTINCT revoked FROM revocations WHERE state = 'applied'")
      var devices: Set<DeviceID> = []
      while try read.step() { if let device = read.device(0) { devices.insert(device) } }
      return devices
    }
  }

  /// Revocations kept here of one maker: a household has a few devices, and a member that
  /// signs revocations of made-up devices by the thousand fills nothing beyond this.
  static let maximumRevocationsPerDevice = 64

  /// The devices whose applied revocations revoked `device` here.
  private func revokers(of device: DeviceID) throws -> Set<DeviceID> {
    try sql {
      let read = try db.prepare("SELECT revoker FROM revocations WHERE revoked = ? AND state = 'applied'")
      try read.bind(1, device)
      var devices: Set<DeviceID> = []
      while try read.step() { if let revoker = read.device(0) { devices.insert(revoker) } }
      return devices
    }
  }

  /// Whether `device` is a member (not only a relay) of a notebook held here.
  private func isMember(_ device: DeviceID) throws -> Bool {
    try memberships(of: device).contains { $0.role == .member }
  }

  /// How many signed statements of `table` (`revocations` or `purges`) `device` made, as
  /// `column` names it: what the per-maker caps count.
  func statementCount(in table: String, by column: String, _ device: DeviceID) throws -> Int {
    try sql {
      try db.withCached("SELECT count(*) FROM \(table) WHERE \(column) = ?") { read in
        try read.bind(1, device)
        _ = try read.step()
        return Int(read.int64(0))
      }
    }
  }

  /// Whether `table` (`revocations` or `purges`) holds the signed statement `bytes` already:
  /// its id is the hex SHA-256 of its bytes, so a replay is recognised whoever passed it on.
  func holdsStatement(_ bytes: [UInt8], in table: String) throws -> Bool {
    let id = Hex.encode(try SHA256.hash(bytes))
    return try sql {
      try db.withCached("SELECT 1 FROM \(table) WHERE id = ?") { read in
        try read.bind(1, id)
        return try read.step()
      }
    }
  }

  private func keep(_ revocation: Revocation, as note: RevocationNote, now: Timestamp) throws {
    let bytes = revocation.encoded
    let id = Hex.encode(try SHA256.hash(bytes))
    try sql {
      let insert = try db.prepare(
        "INSERT OR IGNORE INTO revocations (id, revoker, revoked, made, bytes, state, received, via, name) "
          + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      try insert.bind([
        .text(id), .device(note.revoker), .device(note.revoked), .integer(note.made), .blob(bytes),
        .text(note.state.rawValue), .integer(now), note.via.map { .device($0) } ?? .null,
        note.name.map { .text($0) } ?? .null,
      ])
      _ = try insert.step()
    }
  }

  /// What this device has seen of `device`'s replicas: per replica bound to it here, the
  /// highest sequence stored, held or relayed.
  func cut(of device: DeviceID) throws -> [ReplicaID: UInt64] {
    try flushStaged()
    return try sql {
      let read = try db.prepare(
        """
        SELECT b.replica, max(coalesce(h.seq, 0), coalesce((SELECT max(n.seq) FROM notebook_horizon n
          WHERE n.origin = b.replica), 0))
        FROM replica_bindings b LEFT JOIN horizon h ON h.origin = b.replica
        WHERE b.device = ? ORDER BY b.replica LIMIT \(Revocation.maximumCut)
        """)
      try read.bind(1, device)
      var cut: [ReplicaID: UInt64] = [:]
      while try read.step() {
        guard let replica = read.replica(0) else { continue }
        cut[replica] = UInt64(clamping: read.int64(1))
      }
      return cut
    }
  }

  /// Stops sharing everything with `device` (a new key generation where this device holds
  /// the key and the device did too) and lowers its cut by `cut`: per replica the lower of
  /// the cuts that revoked it, a replica one of them does not name getting nothing. Call it
  /// before the revocation is kept. Runs inside the caller's transaction.
  private func cutOff(_ device: DeviceID, at cut: [ReplicaID: UInt64], now: Timestamp) throws
    -> (unshared: [NotebookID], rotated: [NotebookID])
  {
    var unshared: [NotebookID] = []
    var rotated: [NotebookID] = []
    let lowered = try revokedCuts()[device].map { RevocationRules.lowered($0, by: cut) } ?? cut
    let me = try thisDevice()
    // Every notebook this device may change loses the revoked device, with a new key where
    // it held one; in one it only relays, the log waits for a member (the device is out of
    // the trust store meanwhile, and what it signs beyond its cut is refused here anyway).
    for notebook in try notebooks() {
      guard let state = try membershipState(notebook.id), let role = state.members[device],
        state.members[me] == .member
      else { continue }
      try removeFromLog(notebook.id, device, cut: lowered, now: now)
      try materialize(notebook.id, now: now)
      try grantMissingKeys(notebook.id, now: now)
      unshared.append(notebook.id)
      if role == .member { rotated.append(notebook.id) }
    }
    try sql {
      let clear = try db.prepare("DELETE FROM revoked_cut WHERE device = ?")
      try clear.bind(1, device)
      _ = try clear.step()
      let insert = try db.prepare("INSERT INTO revoked_cut (device, replica, seq) VALUES (?, ?, ?)")
      for (replica, seq) in lowered {
        try insert.bind([.device(device), .id(replica), .integer(Int64(seq))])
        _ = try insert.step()
        insert.reset()
      }
    }
    return (unshared, rotated)
  }
}
