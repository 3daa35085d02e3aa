import FoundationEssentials
import MemoCore
import MemoCrypto

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
    guard let id = NotebookID(query.text(0)), let role = NotebookRole(rawValue: query.text(2)) else {
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
      try query.bind(1, id.rawValue)
      guard try query.step(), let notebook = try notebookRow(query, defaultID: defaultID) else { return nil }
      return (notebook, query.int64(4) != 0)
    }
  }

  /// Finds a notebook by name (any case) or by a prefix of its id (a relayed notebook has
  /// only its id).
  public func findNotebook(_ reference: String) throws -> Notebook {
    let all = try notebooks()
    if let named = all.first(where: { $0.name?.lowercased() == reference.lowercased() }) { return named }
    let prefix = reference.lowercased().replacing("…", with: "")
    let isHex = !prefix.isEmpty && prefix.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    let matches = isHex ? all.filter { $0.id.rawValue.hasPrefix(prefix) } : []
    switch matches.count {
    case 1: return matches[0]
    case 0:
      throw MemoPeerError(
        .notFound, "no notebook is named \(Self.quotedName(reference))",
        hint: "`memo-peer notebook list` shows the notebooks")
    default:
      throw MemoPeerError(
        .ambiguousID, "\(Self.quotedName(reference)) matches \(matches.count) notebooks",
        hint: "give more characters of the notebook's id")
    }
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
        hint: "write in a notebook of yours (`memo-peer notebook list`)")
    }
    return found.notebook
  }

  public func createNotebook(named name: String, now: Timestamp) throws -> Notebook {
    try NotebookNames.validate(name)
    _ = try sealer()
    return try batch {
      try refuseTakenName(name, except: nil)
      let id: NotebookID
      do { id = try NotebookID(Hex.encode(SystemRandom.bytes(16))).unwrapOrThrow() } catch let error as MemoPeerError {
        throw error
      } catch {
        throw MemoPeerError(.crypto, "could not draw random bytes for a notebook id", diagnostics: "\(error)")
      }
      try insertNotebook(id, name: name, role: .member, now: now)
      try makeNotebookKey(id, now: now)
      return try notebook(id).unwrapOrThrow().notebook
    }
  }

  func insertNotebook(_ id: NotebookID, name: String?, role: NotebookRole, now: Timestamp) throws {
    try sql {
      let insert = try db.prepare(
        "INSERT INTO notebooks (id, name, role, created, deleted) VALUES (?, ?, ?, ?, 0) "
          + "ON CONFLICT(id) DO UPDATE SET name = excluded.name, role = excluded.role, deleted = 0")
      try insert.bind([.text(id.rawValue), name.map { .text($0) } ?? .null, .text(role.rawValue), .integer(now)])
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

  public func renameNotebook(_ reference: String, to name: String) throws -> Notebook {
    try NotebookNames.validate(name)
    return try batch {
      let notebook = try findNotebook(reference)
      try refuseTakenName(name, except: notebook.id)
      let update = try db.prepare("UPDATE notebooks SET name = ? WHERE id = ?")
      try update.bind([.text(name), .text(notebook.id.rawValue)])
      _ = try update.step()
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
          hint: "rename it instead (`memo-peer notebook rename`)")
      }
      let live = try liveRows(in: notebook.id)
      var moved = 0
      if !live.isEmpty {
        guard let moveTo else {
          throw MemoPeerError(
            .invalidInput,
            "\(notebook.displayName) holds \(live.count) memo\(live.count == 1 ? "" : "s"); nothing was deleted",
            hint: "move them first: `memo-peer notebook delete \(reference) --move-to OTHER`")
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
        "DELETE FROM sync_peer_knowledge WHERE notebook = ?1",
      ] {
        let change = try db.prepare(statement)
        try change.bind(1, notebook.id.rawValue)
        _ = try change.step()
      }
      notebookKeys.rings[notebook.id] = nil
      return (notebook, moved)
    }
  }

  /// The live memos of a notebook (conflict copies included: they are memos too).
  private func liveRows(in notebook: NotebookID) throws -> [MemoID] {
    try sql {
      let query = try db.prepare(
        "SELECT id FROM memos WHERE deleted = 0 AND notebook = ? AND conflict_of IS NULL ORDER BY id")
      try query.bind(1, notebook.rawValue)
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
    try memberRows("WHERE notebook = ?", notebook.rawValue).filter { includingRemoved || $0.role != .removed }
  }

  /// What this device shares with `device`, notebook by notebook (removed ones included).
  public func memberships(of device: DeviceID) throws -> [NotebookMember] {
    try memberRows("WHERE device = ?", device.compact)
  }

  private func memberRows(_ condition: String, _ value: String) throws -> [NotebookMember] {
    try sql {
      let query = try db.prepare(
        "SELECT notebook, device, role, added FROM notebook_members \(condition) ORDER BY notebook, device")
      try query.bind(1, value)
      var result: [NotebookMember] = []
      while try query.step() {
        guard let id = NotebookID(query.text(0)), let device = query.device(1),
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
        try upsert.bind([.text(notebook.rawValue), .device(device), .text(role.rawValue), .integer(now)])
        _ = try upsert.step()
      }
    }
  }

  /// Shares `notebook` with a trusted device, as a member (it gets the key at the next sync)
  /// or a relay (sealed revisions only). A device that relays a notebook can give it to
  /// another relay, never to a member: it has no key to give. Returns false when the device
  /// already had that role.
  @discardableResult
  public func share(_ notebook: NotebookID, with device: DeviceID, as role: NotebookRole, now: Timestamp) throws -> Bool
  {
    try batch {
      guard let found = try self.notebook(notebook), !found.isDeleted else {
        throw MemoPeerError(.notFound, "notebook \(notebook.short) is not on this device")
      }
      if role == .member && found.notebook.role == .relay {
        throw MemoPeerError(
          .invalidInput,
          "this device relays \(found.notebook.displayName) without its key, so it cannot give it to a member",
          hint: "share it from a device that is a member, or share it here `--as relay`")
      }
      let wanted = NotebookMember.Role(rawValue: role.rawValue) ?? .relay
      if try members(of: notebook).contains(where: { $0.device == device && $0.role == wanted }) { return false }
      try setMember(notebook, device, role: wanted, now: now)
      return true
    }
  }

  /// Stops sharing `notebook` with `device`. A device that had the key makes this device
  /// rotate it: records sealed from now on use a new generation the device never gets. It
  /// keeps what it already received.
  public func unshare(_ notebook: NotebookID, from device: DeviceID, now: Timestamp) throws -> UnshareResult {
    try batch {
      guard let found = try self.notebook(notebook), !found.isDeleted,
        let member = try members(of: notebook).first(where: { $0.device == device })
      else {
        throw MemoPeerError(
          .notFound, "that notebook is not shared with that device",
          hint: "`memo-peer notebook show NAME` lists whom it is shared with")
      }
      try setMember(notebook, device, role: .removed, now: now)
      let rotate = member.role == .member && found.notebook.role == .member
      if rotate { try makeNotebookKey(notebook, now: now) }
      return UnshareResult(role: member.role, rotated: rotate)
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
    let now = Timestamp((Date().timeIntervalSince1970 * 1000).rounded())
    let notebook = migrated ? NotebookID.migrated : try NotebookID(Hex.encode(SystemRandom.bytes(16))).unwrapOrThrow()
    let insert = try db.prepare("INSERT INTO notebooks (id, name, role, created) VALUES (?, 'personal', 'member', ?)")
    try insert.bind([.text(notebook.rawValue), .integer(now)])
    _ = try insert.step()
    var key = try SystemRandom.bytes(AES256GCMKey.keySize)
    defer { SecureBytes.wipe(&key) }
    let keyID = Hex.encode(try SystemRandom.bytes(16))
    let sealed = try contentSealer.seal(
      key, associatedData: SealingContext.notebookKey(notebook: notebook, keyID: keyID, generation: 1))
    let storeKey = try db.prepare(
      "INSERT INTO notebook_keys (notebook, key_id, generation, key, created) VALUES (?, ?, 1, ?, ?)")
    try storeKey.bind([.text(notebook.rawValue), .text(keyID), .blob(sealed), .integer(now)])
    _ = try storeKey.step()
    let meta = try db.prepare("INSERT INTO meta (key, value) VALUES ('default_notebook', ?)")
    try meta.bind(1, Array(notebook.rawValue.utf8))
    _ = try meta.step()
    let member = try db.prepare(
      "INSERT OR IGNORE INTO notebook_members (notebook, device, role, added) VALUES (?, ?, 'member', ?)")
    for device in trusted {
      try member.bind([.text(notebook.rawValue), .device(device), .integer(now)])
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
      try copy.bind(1, notebook.rawValue)
      if statement.contains("?2") { try copy.bind(2, own) }
      _ = try copy.step()
    }
  }
}
