import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// A notebook with what `notebook list` and `notebook show` count.
public struct NotebookSummary: Sendable, Equatable {
  public var notebook: Notebook
  /// Live memos (not counting conflict copies).
  public var memos: Int
  /// Sealed revisions held for the notebook's members (a relayed notebook only).
  public var sealedRevisions: Int
  /// The devices it is shared with (removed ones left out).
  public var members: [NotebookMember]
}

/// What `notebook unshare` did.
public struct UnshareResult: Sendable, Equatable {
  /// The role the device had.
  public var role: NotebookMember.Role
  /// A new key generation was made: the device had the key.
  public var rotated: Bool
}

/// Notebooks (docs/FORMATS.md, schema 5): every memo row belongs to one; each has its own
/// keys; membership says which devices get it, and how.
extension MemoStore {
  static let notebookColumns = "id, name, role, created, deleted"

  /// Every notebook here, by name (relayed ones, which have none, last by id).
  public func notebooks() throws -> [Notebook] {
    let defaultID = try defaultNotebookID()
    return try sql {
      let query = try db.prepare(
        "SELECT \(Self.notebookColumns) FROM notebooks WHERE deleted = 0 ORDER BY name IS NULL, lower(name), id")
      var result: [Notebook] = []
      while try query.step() {
        if let notebook = try notebookRow(query, defaultID: defaultID) { result.append(notebook) }
      }
      return result
    }
  }

  private func notebookRow(_ query: SQLiteStatement, defaultID: NotebookID?) throws -> Notebook? {
    guard let id = query.notebook(0), let role = NotebookRole(rawValue: query.text(2)) else {
      throw MemoPeerError(
        .corruptDatabase, "the memo database holds a notebook row that is not valid",
        hint: "restore from an export; the file was left untouched")
    }
    return Notebook(
      id: id, name: query.isNull(1) ? nil : query.text(1), role: role, created: query.int64(3),
      isDefault: id == defaultID)
  }

  /// The notebook with this id (deleted ones included), or nil.
  func notebook(_ id: NotebookID) throws -> (notebook: Notebook, isDeleted: Bool)? {
    let defaultID = try defaultNotebookID()
    return try sql {
      let query = try db.prepare("SELECT \(Self.notebookColumns) FROM notebooks WHERE id = ?")
      try query.bind(1, id)
      guard try query.step(), let notebook = try notebookRow(query, defaultID: defaultID) else { return nil }
      return (notebook, query.int64(4) != 0)
    }
  }

  /// Finds a notebook by name (any case) or by a prefix of its id (a relayed notebook has
  /// only its id).
  public func findNotebook(_ reference: String) throws -> Notebook {
    let matches = Self.named(reference, in: try notebooks(), name: \.name, notebook: \.id)
    switch matches.count {
    case 1: return matches[0]
    case 0:
      throw MemoPeerError(
        .notFound, "no notebook is named \(Self.quotedName(reference))",
        remedy: .listNotebooks)
    default:
      throw MemoPeerError(
        .ambiguousID, "\(Self.quotedName(reference)) matches \(matches.count) notebooks",
        hint: "give more characters of the notebook's id")
    }
  }

  /// What `reference` names among `candidates` (notebooks, invitations): the one of that
  /// name (any case), else every one whose notebook id starts with it (lowercase hex; a
  /// shortened id's "…" as `notebook list` prints it is dropped). Empty when none.
  static func named<Candidate>(
    _ reference: String, in candidates: [Candidate], name: (Candidate) -> String?,
    notebook: (Candidate) -> NotebookID
  ) -> [Candidate] {
    if let named = candidates.first(where: { name($0)?.lowercased() == reference.lowercased() }) { return [named] }
    let prefix = reference.lowercased().replacing("…", with: "")
    let isHex = !prefix.isEmpty && prefix.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    return isHex ? candidates.filter { notebook($0).rawValue.hasPrefix(prefix) } : []
  }

  /// A name typed by a person, repeated in a message only when it is a valid name (it
  /// might be memo text typed in the wrong place otherwise).
  static func quotedName(_ text: String) -> String {
    NotebookNames.isValid(text) ? "“\(TerminalText.display(text))”" : "(not repeated: not a notebook name)"
  }

  /// The id of the notebook `new` uses by default; nil before schema 5's migration ran.
  func defaultNotebookID() throws -> NotebookID? {
    try sql {
      let read = try db.prepare("SELECT value FROM meta WHERE key = 'default_notebook'")
      guard try read.step() else { return nil }
      return NotebookID(String(decoding: read.blob(0), as: UTF8.self))
    }
  }

  /// Makes `notebook` (one this device is a member of) the one `new` uses by default.
  public func setDefaultNotebook(_ notebook: NotebookID) throws {
    try batch {
      _ = try writableNotebook(notebook)
      let upsert = try db.prepare(
        "INSERT INTO meta (key, value) VALUES ('default_notebook', ?1) ON CONFLICT(key) DO UPDATE SET value = ?1")
      try upsert.bind(1, Array(notebook.rawValue.utf8))
      _ = try upsert.step()
    }
  }

  public func defaultNotebook() throws -> Notebook {
    guard let id = try defaultNotebookID(), let found = try notebook(id), !found.isDeleted else {
      throw MemoPeerError(
        .corruptDatabase, "the memo database names no default notebook",
        hint: "restore from an export; the file was left untouched")
    }
    return found.notebook
  }

  /// A notebook this device can write memos into: a member, not deleted.
  func writableNotebook(_ id: NotebookID) throws -> Notebook {
    guard let found = try notebook(id), !found.isDeleted else {
      throw MemoPeerError(.notFound, "notebook \(id.short) is not on this device")
    }
    guard found.notebook.role == .member else {
      throw MemoPeerError(
        .invalidInput, "this device relays \(found.notebook.displayName) and cannot read or write its memos",
        hint: "write in a notebook of yours", remedy: .listNotebooks)
    }
    if let state = try membershipState(id), let me = ownDeviceID(), state.members[me] != .member {
      throw MemoPeerError(
        .invalidInput,
        "this device is no longer a member of \(found.notebook.displayName): what it writes there would reach nobody",
        hint: "write in another notebook, or ask a member to share it again", remedy: .listNotebooks)
    }
    return found.notebook
  }

  /// Makes a notebook of this device's: its id derived from this device's ID and a random
  /// nonce (nobody else can sign its genesis), its log started with the genesis, a first key
  /// generation and its name (docs/PROTOCOL.md, "Notebook membership log").
  public func createNotebook(named name: String, now: Timestamp) throws -> Notebook {
    try NotebookNames.validate(name)
    _ = try sealer()
    let device = try deviceID()
    return try batch {
      try refuseTakenName(name, except: nil)
      let nonce: [UInt8]
      let id: NotebookID
      do {
        nonce = try SystemRandom.bytes(SyncDerivations.nonceSize)
        id = try SyncDerivations.notebookID(creator: device, nonce: nonce)
      } catch {
        throw MemoPeerError(.crypto, "could not draw random bytes for a notebook id", diagnostics: "\(error)")
      }
      try insertNotebook(id, name: name, role: .member, now: now)
      try setNotebookColumn(id, "nonce", .blob(nonce))
      try signGenesis(id, nonce: nonce, name: name, now: now)
      return try notebook(id).unwrapOrThrow().notebook
    }
  }

  func insertNotebook(_ id: NotebookID, name: String?, role: NotebookRole, now: Timestamp) throws {
    try sql {
      let insert = try db.prepare(
        "INSERT INTO notebooks (id, name, role, created, deleted) VALUES (?, ?, ?, ?, 0) "
          + "ON CONFLICT(id) DO UPDATE SET name = excluded.name, role = excluded.role, deleted = 0")
      try insert.bind([.id(id), name.map { .text($0) } ?? .null, .text(role.rawValue), .integer(now)])
      _ = try insert.step()
    }
  }

  private func refuseTakenName(_ name: String, except id: NotebookID?) throws {
    if try isNameTaken(name, except: id) {
      throw MemoPeerError(
        .invalidInput, "a notebook is already named \(Self.quotedName(name))", hint: "choose another name")
    }
  }

  func isNameTaken(_ name: String, except id: NotebookID?) throws -> Bool {
    try notebooks().contains { $0.name?.lowercased() == name.lowercased() && $0.id != id }
  }

  /// Renames a notebook. A member with the notebook's current key signs the new name into
  /// its log (sealed: relays cannot read it), so every member takes it; a relayed notebook
  /// has no name to give.
  public func renameNotebook(_ reference: String, to name: String, now: Timestamp) throws -> Notebook {
    try NotebookNames.validate(name)
    return try batch {
      let notebook = try findNotebook(reference)
      try refuseTakenName(name, except: notebook.id)
      guard notebook.role == .member else {
        throw MemoPeerError(
          .invalidInput, "this device relays \(notebook.displayName) and cannot read or name it",
          hint: "rename it on a member of the notebook")
      }
      let update = try db.prepare("UPDATE notebooks SET name = ? WHERE id = ?")
      try update.bind([.text(name), .id(notebook.id)])
      _ = try update.step()
      if try membershipState(notebook.id)?.members[try thisDevice()] == .member {
        try signRename(notebook.id, to: name, now: now)
      }
      var renamed = notebook
      renamed.name = name
      return renamed
    }
  }

  /// Deletes a notebook here: refused while it holds memos unless `moveTo` names another
  /// notebook to move them into (each a new revision there), and refused for the default
  /// notebook. Its keys and memberships go; a relayed notebook's sealed revisions go too.
  /// Offers of it from other devices are declined from then on.
  public func deleteNotebook(_ reference: String, moveTo: String?, now: Timestamp) throws -> (
    notebook: Notebook, moved: Int
  ) {
    try batch {
      let notebook = try findNotebook(reference)
      guard !notebook.isDefault else {
        throw MemoPeerError(
          .invalidInput, "\(notebook.displayName) is the default notebook (new memos go there); it cannot be deleted",
          remedy: .renameNotebook)
      }
      let live = try liveRows(in: notebook.id)
      var moved = 0
      if !live.isEmpty {
        guard let moveTo else {
          throw MemoPeerError(
            .invalidInput,
            "\(notebook.displayName) holds \(live.count) memo\(live.count == 1 ? "" : "s"); nothing was deleted",
            remedy: .moveNotebookMemos(from: reference))
        }
        let target = try findNotebook(moveTo)
        guard target.id != notebook.id else {
          throw MemoPeerError(.invalidInput, "--move-to names the notebook being deleted")
        }
        _ = try writableNotebook(target.id)
        for id in live {
          try refuseWhileConflicted(id, doing: "moved")
          _ = try move(id, to: target.id, now: now)
          moved += 1
        }
      }
      for statement in [
        "UPDATE notebooks SET deleted = 1, name = NULL WHERE id = ?1", "DELETE FROM notebook_keys WHERE notebook = ?1",
        "DELETE FROM notebook_members WHERE notebook = ?1", "DELETE FROM relayed WHERE notebook = ?1",
        "DELETE FROM notebook_knowledge WHERE notebook = ?1", "DELETE FROM sync_cursors WHERE notebook = ?1",
        "DELETE FROM sync_peer_knowledge WHERE notebook = ?1", "DELETE FROM notebook_ops WHERE notebook = ?1",
      ] {
        let change = try db.prepare(statement)
        try change.bind(1, notebook.id)
        _ = try change.step()
      }
      notebookKeys.rings[notebook.id] = nil
      membership.forget(notebook.id)
      return (notebook, moved)
    }
  }

  /// The live memos of a notebook (conflict copies included: they are memos too).
  private func liveRows(in notebook: NotebookID) throws -> [MemoID] {
    try sql {
      let query = try db.prepare(
        "SELECT id FROM memos WHERE deleted = 0 AND notebook = ? AND conflict_of IS NULL ORDER BY id")
      try query.bind(1, notebook)
      var ids: [MemoID] = []
      while try query.step() { ids.append(try memoID(query.text(0))) }
      return ids
    }
  }

  /// Moves a memo into another notebook as a new revision there (so it replicates to that
  /// notebook's devices). Devices that get only the old notebook keep the version they had.
  @discardableResult
  public func move(_ id: MemoID, to target: NotebookID, now: Timestamp) throws -> Memo {
    try batch {
      let current = try memo(id)
      try refuseConflictCopy(current)
      _ = try writableNotebook(target)
      guard current.notebook != target else { return current }
      try refuseWhileConflicted(id, doing: "moved")
      var next = current
      next.notebook = target
      next.revision = try MemoRules.nextRevision(after: current.revision)
      next.updated = max(now, current.updated)
      return try storeLocalRevision(next, resolvingAll: false)
    }
  }

  // MARK: - Counts

  /// Every notebook with its counts and the devices it is shared with.
  public func notebookSummaries() throws -> [NotebookSummary] {
    let memos = try countsBy(
      "SELECT notebook, count(*) FROM memos WHERE deleted = 0 AND conflict_of IS NULL GROUP BY notebook")
    return try summaries(of: notebooks(), memos: memos)
  }

  /// The notebooks this device relays, with their counts: what `list`, `search` and
  /// `export` show of them. Reads no memo row (a relay has none of those notebooks), so a
  /// listing of 100,000 memos does not also count them all.
  public func relayedNotebookSummaries() throws -> [NotebookSummary] {
    let relayed = try notebooks().filter { $0.role == .relay }
    return relayed.isEmpty ? [] : try summaries(of: relayed, memos: [:])
  }

  private func summaries(of notebooks: [Notebook], memos: [String: Int]) throws -> [NotebookSummary] {
    let sealed = try countsBy("SELECT notebook, count(*) FROM relayed GROUP BY notebook")
    return try notebooks.map { notebook in
      NotebookSummary(
        notebook: notebook, memos: memos[notebook.id.rawValue] ?? 0,
        sealedRevisions: sealed[notebook.id.rawValue] ?? 0, members: try members(of: notebook.id))
    }
  }

  private func countsBy(_ statement: String) throws -> [String: Int] {
    try sql {
      let query = try db.prepare(statement)
      var counts: [String: Int] = [:]
      while try query.step() {
        if !query.isNull(0) { counts[query.text(0)] = Int(query.int64(1)) }
      }
      return counts
    }
  }

  // MARK: - Membership

  /// The devices `notebook` is shared with (`includingRemoved`: also those unshared).
  public func members(of notebook: NotebookID, includingRemoved: Bool = false) throws -> [NotebookMember] {
    try memberRows("WHERE notebook = ?", notebook).filter { includingRemoved || $0.role != .removed }
  }

  /// What this device shares with `device`, notebook by notebook (removed ones included).
  public func memberships(of device: DeviceID) throws -> [NotebookMember] {
    try memberRows("WHERE device = ?", device)
  }

  private func memberRows(_ condition: String, _ value: some SQLiteID) throws -> [NotebookMember] {
    try sql {
      let query = try db.prepare(
        "SELECT notebook, device, role, added FROM notebook_members \(condition) ORDER BY notebook, device")
      try query.bind(1, value)
      var result: [NotebookMember] = []
      while try query.step() {
        guard let id = query.notebook(0), let device = query.device(1),
          let role = NotebookMember.Role(rawValue: query.text(2))
        else { continue }
        result.append(NotebookMember(notebook: id, device: device, role: role, added: query.int64(3)))
      }
      return result
    }
  }

  func setMember(_ notebook: NotebookID, _ device: DeviceID, role: NotebookMember.Role, now: Timestamp) throws {
    try sql {
      try db.withCached(
        "INSERT INTO notebook_members (notebook, device, role, added) VALUES (?1, ?2, ?3, ?4) "
          + "ON CONFLICT(notebook, device) DO UPDATE SET role = ?3, added = ?4"
      ) { upsert in
        try upsert.bind([.id(notebook), .device(device), .text(role.rawValue), .integer(now)])
        _ = try upsert.step()
      }
    }
  }

  /// Shares `notebook` with a trusted device, as a member (it gets every key generation,
  /// sealed to its public key in the log, as soon as a member knows that key) or a relay
  /// (sealed revisions only): an op this device signs, so only a member may. A notebook from
  /// before version 3 goes only to devices it was shared with then (`legacy_members`): a
  /// device new to it could not tell its genesis from a forged one. Returns false when the
  /// device already had that role.
  @discardableResult
  public func share(_ notebook: NotebookID, with device: DeviceID, as role: NotebookRole, now: Timestamp) throws -> Bool
  {
    try ensureMembershipLogs(now: now)
    return try batch {
      guard let found = try self.notebook(notebook), !found.isDeleted else {
        throw MemoPeerError(.notFound, "notebook \(notebook.short) is not on this device")
      }
      let state = try requireMember(found.notebook, toDo: "share it")
      guard device != (try thisDevice()) else {
        throw MemoPeerError(.invalidInput, "a notebook is not shared with the device that holds it")
      }
      let wanted: NotebookOp.Role = role == .member ? .member : .relay
      if state.members[device] == wanted { return false }
      if let log = try membershipLog(notebook), Self.isLegacy(log), state.members[device] == nil,
        try !legacyMembers(of: notebook).contains(device)
      {
        throw MemoPeerError(
          .invalidInput,
          "\(found.notebook.displayName) was made before sync version 3; it goes only to the devices it was shared with then",
          remedy: .replaceNotebook(found.notebook.name ?? notebook.short))
      }
      try appendOwnOp(notebook, now: now) { log, signer in try log.share(device, as: wanted, signer: signer) }
      try materialize(notebook, now: now)
      try grantMissingKeys(notebook, now: now)
      return true
    }
  }

  /// Stops sharing `notebook` with `device`: an unshare this device signs, cut at what it
  /// has seen of the device's replicas (its later revisions in this notebook are refused
  /// everywhere), and — for a member — a new key generation sealed to the members left, so
  /// records sealed from now on use a key the device never gets. It keeps what it already
  /// received.
  public func unshare(_ notebook: NotebookID, from device: DeviceID, now: Timestamp) throws -> UnshareResult {
    try ensureMembershipLogs(now: now)
    return try batch {
      guard let found = try self.notebook(notebook), !found.isDeleted else {
        throw MemoPeerError(.notFound, "notebook \(notebook.short) is not on this device")
      }
      let state = try requireMember(found.notebook, toDo: "unshare it")
      guard let role = state.members[device], device != (try thisDevice()) else {
        throw MemoPeerError(
          .notFound, "that notebook is not shared with that device",
          remedy: .showNotebook(nil))
      }
      try removeFromLog(notebook, device, cut: try cut(of: device), now: now)
      try materialize(notebook, now: now)
      try grantMissingKeys(notebook, now: now)
      return UnshareResult(role: role == .member ? .member : .relay, rotated: role == .member)
    }
  }

  /// Signs the unshare of `device` with `cut` (replica → last sequence accepted of it) and,
  /// when it held the key, a new key generation. Runs inside the caller's transaction.
  func removeFromLog(_ notebook: NotebookID, _ device: DeviceID, cut: [ReplicaID: UInt64], now: Timestamp) throws {
    let wasMember = try membershipState(notebook)?.members[device] == .member
    let entries = cut.map { NotebookOp.CutEntry(replica: $0.key, sequence: $0.value) }
    try appendOwnOp(notebook, now: now) { log, signer in try log.unshare(device, cut: entries, signer: signer) }
    if wasMember { try rotateKey(notebook, now: now) }
  }

  // MARK: - Schema 10

  /// A new store's first notebook (`personal`, made empty by schema 6's migration) gets an
  /// id derived from this device and a nonce, and a key whose id is derived from it, so its
  /// genesis is signed as any new notebook's (`ensureMembershipLogs`) and devices new to it
  /// can join it. Runs inside the migration's transaction, before anything is in it.
  static func rootFirstNotebook(_ db: SQLiteConnection, contentSealer: AES256GCMKey, device: DeviceID) throws {
    let read = try db.prepare("SELECT value FROM meta WHERE key = 'default_notebook'")
    guard try read.step(), let old = NotebookID(String(decoding: read.blob(0), as: UTF8.self)) else { return }
    let nonce: [UInt8]
    let id: NotebookID
    let material: SecureBytes
    let keyID: String
    do {
      nonce = try SystemRandom.bytes(SyncDerivations.nonceSize)
      id = try SyncDerivations.notebookID(creator: device, nonce: nonce)
      material = try SecureBytes.random(count: AES256GCMKey.keySize)
      keyID = Hex.encode(try SyncDerivations.keyID(of: material))
    } catch {
      throw MemoPeerError(.crypto, "could not make this store's first notebook", diagnostics: "\(error)")
    }
    var raw = material.withUnsafeBytes { Array($0) }
    defer { SecureBytes.wipe(&raw) }
    let sealed = try contentSealer.seal(
      raw, associatedData: SealingContext.notebookKey(notebook: id, keyID: keyID, generation: 1))
    let now = Self.wallClock()
    for (statement, values) in [
      (
        "UPDATE notebooks SET id = ?, nonce = ?, current_key = ? WHERE id = ?",
        [SQLiteValue.id(id), .blob(nonce), .text(keyID), .id(old)]
      ),
      ("DELETE FROM notebook_keys WHERE notebook = ?", [.id(old)]),
      (
        "INSERT INTO notebook_keys (notebook, key_id, generation, key, created) VALUES (?, ?, 1, ?, ?)",
        [.id(id), .text(keyID), .blob(sealed), .integer(now)]
      ),
      ("UPDATE meta SET value = ? WHERE key = 'default_notebook'", [.blob(Array(id.rawValue.utf8))]),
    ] {
      let change = try db.prepare(statement)
      try change.bind(values)
      _ = try change.step()
    }
  }

  // MARK: - Schema 5

  /// Schema 5: the `personal` notebook (for a migrated store, the id every migrated store
  /// shares, so devices that synced go on syncing), its first key, every existing row in
  /// it, its members (the devices trusted now) and copies of the old knowledge, cursors and
  /// peers' knowledge for it. Runs inside the migration's transaction.
  static func backfillNotebooks(
    _ db: SQLiteConnection, contentSealer: AES256GCMKey, migrated: Bool, trusted: [DeviceID]
  ) throws {
    let now = Self.wallClock()
    let notebook = migrated ? NotebookID.migrated : try NotebookID(Hex.encode(SystemRandom.bytes(16))).unwrapOrThrow()
    let insert = try db.prepare("INSERT INTO notebooks (id, name, role, created) VALUES (?, 'personal', 'member', ?)")
    try insert.bind([.id(notebook), .integer(now)])
    _ = try insert.step()
    var key = try SystemRandom.bytes(AES256GCMKey.keySize)
    defer { SecureBytes.wipe(&key) }
    let keyID = Hex.encode(try SystemRandom.bytes(16))
    let sealed = try contentSealer.seal(
      key, associatedData: SealingContext.notebookKey(notebook: notebook, keyID: keyID, generation: 1))
    let storeKey = try db.prepare(
      "INSERT INTO notebook_keys (notebook, key_id, generation, key, created) VALUES (?, ?, 1, ?, ?)")
    try storeKey.bind([.id(notebook), .text(keyID), .blob(sealed), .integer(now)])
    _ = try storeKey.step()
    let meta = try db.prepare("INSERT INTO meta (key, value) VALUES ('default_notebook', ?)")
    try meta.bind(1, Array(notebook.rawValue.utf8))
    _ = try meta.step()
    let member = try db.prepare(
      "INSERT OR IGNORE INTO notebook_members (notebook, device, role, added) VALUES (?, ?, 'member', ?)")
    for device in trusted {
      try member.bind([.id(notebook), .device(device), .integer(now)])
      _ = try member.step()
      member.reset()
    }
    let replica = try db.prepare("SELECT value FROM meta WHERE key = 'replica_id'")
    let own = try replica.step() ? String(decoding: replica.blob(0), as: UTF8.self) : ""
    for statement in [
      "UPDATE memos SET notebook = ?1", "UPDATE sync_held SET notebook = ?1",
      "INSERT INTO notebook_knowledge (notebook, origin, seq) SELECT ?1, origin, seq FROM knowledge WHERE origin != ?2",
      "INSERT INTO sync_cursors (device, notebook, replica, position) "
        + "SELECT device, ?1, replica, cursor FROM sync_peers WHERE replica IS NOT NULL",
      "INSERT INTO sync_peer_knowledge (device, notebook, knowledge) "
        + "SELECT device, ?1, knowledge FROM sync_peers WHERE knowledge IS NOT NULL",
    ] {
      let copy = try db.prepare(statement)
      try copy.bind(1, notebook)
      if statement.contains("?2") { try copy.bind(2, own) }
      _ = try copy.step()
    }
  }
}
