import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// What taking a peer's `sync-ops` did (docs/PROTOCOL.md, "Sync, version 3").
public struct OpsIntake: Sendable, Equatable {
  /// Ops admitted into this device's logs.
  public var added = 0
  /// Ops refused and kept aside (quarantined, naming the peer): not signed by their author,
  /// by a device that is no member, a genesis that is not its creator's, over a limit.
  public var refused = 0
  /// Notebooks that became invitations waiting for a person in this session.
  public var invited: [NotebookID] = []
  /// Invitations this peer made beyond its quota, not kept.
  public var overQuota = 0

  public init() {}
}

/// Taking ops from peers, and turning what a log says into this device's tables. Nobody's
/// word counts here: who is in a notebook, with which role, and which keys it has, come from
/// the signed ops alone (`MembershipLog.state`), the same on every device holding them.
extension MemoStore {
  /// Admits the ops of a peer's `sync-ops`, notebook by notebook, in one transaction with
  /// the caller's. An op that does not decode, verify or count is kept aside naming `peer`
  /// (the session goes on: a forged op never stops a sync); one whose parents have not
  /// arrived is left for the next sync. A notebook held here is then brought in line with
  /// its log (`materialize`); one that is not, whose log has this device in it, becomes an
  /// invitation for a person to accept (at most `maximumPendingInvitations` per peer);
  /// anything else is not kept.
  func takeOps(_ notebooks: [SyncOps.Notebook], from peer: DeviceID, now: Timestamp) throws -> OpsIntake {
    var intake = OpsIntake()
    guard !notebooks.isEmpty else { return intake }
    let me = try thisDevice()
    for entry in notebooks {
      let held = try notebook(entry.id)
      if held?.isDeleted == true { continue }
      var log = try membershipLog(entry.id) ?? emptyLog(entry.id)
      let legacy = try legacyMembers(of: entry.id)
      let admitted = try admit(
        entry, into: &log, me: me, legacy: legacy, from: peer, now: now, refused: &intake.refused)
      guard !admitted.isEmpty else { continue }
      if held != nil {
        for op in admitted { try writeOp(op, of: entry.id, via: peer, now: now) }
        intake.added += admitted.count
        try materialize(entry.id, now: now)
        continue
      }
      guard let role = log.state.members[me] else { continue }
      switch try invitation(entry.id, log: log, role: role, from: peer, now: now) {
      case .keep(let isNew):
        for op in admitted { try writeOp(op, of: entry.id, via: peer, now: now) }
        intake.added += admitted.count
        if isNew { intake.invited.append(entry.id) }
      case .overQuota:
        intake.overQuota += 1
      }
    }
    return intake
  }

  /// The ops of one notebook admitted into `log`, in the order admitted. Several passes: an
  /// op whose parents come later in the answer (they should not: answers are parents
  /// first) or a legacy genesis that a later op in it vouches for gets another chance.
  private func admit(
    _ entry: SyncOps.Notebook, into log: inout MembershipLog, me: DeviceID, legacy: Set<DeviceID>,
    from peer: DeviceID, now: Timestamp, refused: inout Int
  ) throws -> [NotebookOp] {
    var admitted: [NotebookOp] = []
    var pending = entry.ops
    var waiting: [(bytes: [UInt8], reason: String)] = []
    while !pending.isEmpty {
      waiting = []
      var progressed = false
      for bytes in pending {
        let op: NotebookOp
        do { op = try NotebookOp.decode(bytes) } catch {
          try refuseOp(bytes, entry.id, "an op that is not one (\(error))", from: peer, now: now, &refused)
          continue
        }
        if case .create(let nonce) = op.body, nonce.isEmpty {
          // A legacy genesis: from a device that was a member here in version 2, this device,
          // or one the log so far has as a member (another member vouched for it).
          let members = log.count == 0 ? [:] : log.state.members
          log.isLegacyMember = { author in
            author == me || legacy.contains(author) || members[author] == .member
          }
        }
        if op.parents.allSatisfy(log.contains), op.notebook == entry.id, !log.authorMayAct(op) {
          try refuseOp(
            bytes, entry.id, "an op by a device that is not a member of the notebook", from: peer, now: now,
            &refused)
          continue
        }
        do {
          if case .added = try log.insert(op) {
            admitted.append(op)
            progressed = true
          }
        } catch .missingParents {
          waiting.append((bytes, "an op whose parents never arrived"))
        } catch .legacyGenesisNotAllowed {
          waiting.append((bytes, "a genesis of a notebook from before version 3 by a device that was no member here"))
        } catch {
          try refuseOp(bytes, entry.id, Self.describe(error), from: peer, now: now, &refused)
        }
      }
      guard progressed else { break }
      pending = waiting.map(\.bytes)
    }
    // What is still waiting: a genesis nobody vouched for is refused; ops without their
    // parents come again when the peer has sent the parents (a cut answer).
    for item in waiting where item.reason.hasPrefix("a genesis") {
      try refuseOp(item.bytes, entry.id, item.reason, from: peer, now: now, &refused)
    }
    return admitted
  }

  private static func describe(_ refusal: MembershipLog.Refusal) -> String {
    switch refusal {
    case .malformed(let error): "an op that is not one (\(error))"
    case .wrongNotebook: "an op of another notebook"
    case .invalidAuthorKey: "an op whose author key no device can own"
    case .badSignature: "an op whose signature does not verify"
    case .missingParents: "an op whose parents never arrived"
    case .full: "an op beyond the \(MembershipLimits.opsPerNotebook) one notebook's log holds"
    case .genesisNotDerived: "a genesis whose notebook id is not its creator's"
    case .legacyGenesisNotAllowed: "a genesis of a notebook from before version 3 by a device that was no member here"
    case .cryptography: "an op the cryptographic library could not hash"
    case .notAMember: "an op by a device that is not a member of the notebook"
    case .authorFull: "an op beyond the \(MembershipLimits.opsPerAuthor) one device may add to a log"
    }
  }

  private func refuseOp(
    _ bytes: [UInt8], _ notebook: NotebookID, _ reason: String, from peer: DeviceID, now: Timestamp,
    _ refused: inout Int
  ) throws {
    refused += 1
    guard try !isQuarantined(bytes) else { return }
    try quarantine(bytes, from: peer, notebook: notebook, reason: "membership: \(reason)", now: now)
  }

  /// Whether exactly these bytes are kept aside already (a peer sends a refused op again at
  /// every sync until it learns better: it is kept once).
  func isQuarantined(_ bytes: [UInt8]) throws -> Bool {
    try sql {
      try db.withCached("SELECT 1 FROM quarantine WHERE item = ? LIMIT 1") { read in
        try read.bind(1, bytes)
        return try read.step()
      }
    }
  }

  /// The devices that were members of `notebook` in this device's version-2 tables.
  func legacyMembers(of notebook: NotebookID) throws -> Set<DeviceID> {
    try sql {
      try db.withCached("SELECT device FROM legacy_members WHERE notebook = ?") { read in
        try read.bind(1, notebook)
        var devices: Set<DeviceID> = []
        while try read.step() { if let device = read.device(0) { devices.insert(device) } }
        return devices
      }
    }
  }

  // MARK: - Materialize

  /// Brings this device's tables in line with what the log of `notebook` says: who it
  /// syncs the notebook with and in which role (`notebook_members`: everyone the log has,
  /// or no one when this device is not in it), the key generations sealed to this device,
  /// the generation new records use, a relay's upgrade to member, the notebook's name.
  /// Runs inside the caller's transaction; needs the identity key to open keys.
  func materialize(_ notebook: NotebookID, now: Timestamp) throws {
    guard let state = try membershipState(notebook), let found = try self.notebook(notebook), !found.isDeleted else {
      return
    }
    let me = try thisDevice()
    let myRole = state.members[me]
    // A member demoted to relay keeps what it has but moves nothing: it holds memos, not
    // sealed records, and its edits would be refused everywhere.
    let active = myRole != nil && !(myRole == .relay && found.notebook.role == .member)
    var rows = Dictionary(
      try members(of: notebook, includingRemoved: true).map { ($0.device, $0.role) }, uniquingKeysWith: { a, _ in a })
    for (device, role) in state.members where device != me {
      let wanted: NotebookMember.Role = !active ? .removed : role == .member ? .member : .relay
      if rows[device] != wanted { try setMember(notebook, device, role: wanted, now: now) }
      rows[device] = nil
    }
    for (device, role) in rows where role != .removed { try setMember(notebook, device, role: .removed, now: now) }
    guard myRole == .member else { return }
    try importKeys(notebook, state, me: me, now: now)
    let ring = try keyring(notebook)
    let current = state.currentKey.map { Hex.encode($0.keyID) }.flatMap { ring[$0] != nil ? $0 : nil }
    try setNotebookColumn(notebook, "current_key", current.map { .text($0) } ?? .null)
    if found.notebook.role == .relay, !ring.keys.isEmpty {
      try insertNotebook(notebook, name: try freeName(nil, except: notebook), role: .member, now: now)
      try openRelayedRecords(notebook, now: now)
    }
    try adoptName(notebook, state, ring: ring, now: now)
  }

  /// Opens and keeps every key generation the log seals to this device (a `key` op's copy,
  /// or a `grant`), each checked against its id: a key of the log must hash to the id its
  /// op names; a key of a notebook from before version 3 (granted, named by no key op) is
  /// kept under its old id, as generation 0 (it opens old records; nothing new is sealed
  /// with it). A box that does not open (sealed to another device, or damaged) is kept aside
  /// once, naming its author.
  private func importKeys(_ notebook: NotebookID, _ state: MembershipState, me: DeviceID, now: Timestamp) throws {
    var ring = try keyring(notebook)
    let logged = Dictionary(state.keys.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
    var boxes: [(keyID: [UInt8], box: [UInt8], author: DeviceID)] = []
    for key in state.keys { if let box = key.sealed[me] { boxes.append((key.keyID, box, key.author)) } }
    for grant in state.grants where grant.device == me {
      let author = (try membershipLog(notebook)?.op(grant.op)).flatMap { Self.opVerifier.device(of: $0.author) } ?? me
      for key in grant.keys { boxes.append((key.keyID, key.sealed, author)) }
    }
    guard boxes.contains(where: { ring[Hex.encode($0.keyID)] == nil }) else { return }
    let signer = try signer()
    for (keyID, box, author) in boxes where ring[Hex.encode(keyID)] == nil {
      let material: SecureBytes
      do { material = try SealedBox.open(box, with: signer) } catch {
        try keepKeyAside(box, notebook, "a key sealed by \(author.short) that does not open on this device", now: now)
        continue
      }
      let generation: Int64
      if let log = logged[keyID] {
        guard (try? SyncDerivations.keyID(of: material)) == keyID else {
          try keepKeyAside(box, notebook, "a key sealed by \(author.short) that is not the one its op names", now: now)
          continue
        }
        generation = Int64(clamping: log.generation)
      } else {
        generation = 0
      }
      var raw = material.withUnsafeBytes { Array($0) }
      defer { SecureBytes.wipe(&raw) }
      try storeNotebookKey(notebook, id: Hex.encode(keyID), generation: generation, raw: raw, now: now)
      ring = try keyring(notebook)
    }
  }

  private func keepKeyAside(_ box: [UInt8], _ notebook: NotebookID, _ reason: String, now: Timestamp) throws {
    guard try !isQuarantined(box) else { return }
    try quarantine(box, from: try thisDevice(), notebook: notebook, reason: "membership: \(reason)", now: now)
  }

  /// Takes the name of the log's winning rename, once per rename op, made unique among this
  /// device's notebooks: a member renaming the notebook renames it on every member.
  private func adoptName(_ notebook: NotebookID, _ state: MembershipState, ring: NotebookKeyring, now: Timestamp)
    throws
  {
    guard let rename = state.name, try notebookColumnBlob(notebook, "name_op") != rename.op.bytes,
      let key = ring[Hex.encode(rename.keyID)]
    else { return }
    guard
      let bytes = try? key.sealer.open(
        rename.sealedName, associatedData: SealingContext.notebookName(notebook: notebook, keyID: key.id)),
      let name = String(validating: bytes, as: UTF8.self), NotebookNames.isValid(name)
    else { return }
    let free = try freeName(name, except: notebook)
    try sql {
      let update = try db.prepare("UPDATE notebooks SET name = ?, name_op = ? WHERE id = ?")
      try update.bind([.text(free), .blob(rename.op.bytes), .id(notebook)])
      _ = try update.step()
    }
  }

  // MARK: - Columns

  func setNotebookColumn(_ notebook: NotebookID, _ column: String, _ value: SQLiteValue) throws {
    try sql {
      let update = try db.prepare("UPDATE notebooks SET \(column) = ? WHERE id = ?")
      try update.bind([value, .id(notebook)])
      _ = try update.step()
    }
    notebookKeys.rings[notebook] = nil
  }

  func notebookColumnBlob(_ notebook: NotebookID, _ column: String) throws -> [UInt8]? {
    try sql {
      let read = try db.prepare("SELECT \(column) FROM notebooks WHERE id = ?")
      try read.bind(1, notebook)
      guard try read.step(), !read.isNull(0) else { return nil }
      return read.blob(0)
    }
  }

  /// A name for a notebook here: `offered` (or `shared`), made unique among this device's
  /// other notebooks.
  func freeName(_ offered: String?, except notebook: NotebookID? = nil) throws -> String {
    let taken = Set(try notebooks().filter { $0.id != notebook }.compactMap { $0.name?.lowercased() })
    return NotebookNames.available(offered ?? "shared") { taken.contains($0.lowercased()) }
  }
}
