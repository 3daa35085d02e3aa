import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// Changing a notebook's membership: every change this device makes is an op it signs with
/// its identity key, admits into its own log first (so it obeys the same rules as a peer's)
/// and writes; the next syncs carry it to the other members and relays. Only a member may
/// change a notebook (docs/PROTOCOL.md, "Who may do what"): a relay has nothing to sign.
extension MemoStore {
  /// Signs the genesis of every notebook this device is a member of that has no log yet:
  /// a notebook made before version 3 (a legacy genesis, with a share of each device it was
  /// shared with, a first key generation of the log and the old keys granted to members),
  /// or a new store's first notebook (a genesis with the nonce its id was derived from).
  /// Needs the identity key; does nothing when every notebook has its log.
  public func ensureMembershipLogs(now: Timestamp) throws {
    let pending: [(NotebookID, [UInt8]?, String?)] = try sql {
      let read = try db.prepare(
        """
        SELECT id, nonce, name FROM notebooks n WHERE deleted = 0 AND role = 'member'
          AND NOT EXISTS (SELECT 1 FROM notebook_ops o WHERE o.notebook = n.id)
        """)
      var rows: [(NotebookID, [UInt8]?, String?)] = []
      while try read.step() {
        guard let id = read.notebook(0) else { continue }
        rows.append((id, read.isNull(1) ? nil : read.blob(1), read.isNull(2) ? nil : read.text(2)))
      }
      return rows
    }
    guard !pending.isEmpty else { return }
    try batch {
      for (notebook, nonce, name) in pending { try signGenesis(notebook, nonce: nonce, name: name, now: now) }
    }
  }

  /// The genesis of a notebook this device holds as a member, then a share of each device
  /// its version-2 table gives it to, its first key generation sealed to every member whose
  /// key is known here, and its name (sealed under that key).
  func signGenesis(_ notebook: NotebookID, nonce: [UInt8]?, name: String?, now: Timestamp) throws {
    try appendOwnOp(notebook, now: now) { _, signer in
      guard let nonce else { return try MembershipLog.legacyGenesis(of: notebook, signer: signer) }
      guard let genesis = try MembershipLog.genesis(nonce: nonce, signer: signer, verifier: Self.opVerifier),
        genesis.notebook == notebook
      else {
        throw MemoPeerError(
          .integrity, "notebook \(notebook.short)'s id is not derived from this device's key and its nonce",
          remedy: .checkStore)
      }
      return genesis
    }
    for member in try members(of: notebook) where member.role != .removed {
      let role: NotebookOp.Role = member.role == .member ? .member : .relay
      try appendOwnOp(notebook, now: now) { log, signer in try log.share(member.device, as: role, signer: signer) }
    }
    // A new store's first notebook already has a key whose id is derived (its migration
    // made it so): the log publishes that one. Any other starts the log with a fresh key.
    let ring = try keyring(notebook)
    if nonce != nil, let key = ring.current, let id = Hex.decode(key.id),
      (try? SyncDerivations.keyID(of: key.material)) == id
    {
      try publishKey(notebook, material: key.material, keyID: id, now: now)
    } else {
      try rotateKey(notebook, now: now)
    }
    if let name { try signRename(notebook, to: name, now: now) }
    try materialize(notebook, now: now)
    try grantMissingKeys(notebook, now: now)
  }

  /// Signs the op `make` builds from the current log, admits it into this device's own log
  /// (an op this device signed that its own log refuses is a bug, reported as one) and
  /// writes it. Runs inside the caller's transaction.
  @discardableResult
  func appendOwnOp(
    _ notebook: NotebookID, now: Timestamp, _ make: (MembershipLog, Ed25519.SigningKey) throws -> NotebookOp
  ) throws -> NotebookOp {
    var log = try membershipLog(notebook) ?? emptyLog(notebook)
    log.isLegacyMember = { _ in true }
    let op = try make(log, try signer())
    do { try log.insert(op) } catch {
      throw MemoPeerError(
        .storage, "this device's own change to notebook \(notebook.short) was not admitted by its log",
        diagnostics: "\(error)")
    }
    try writeOp(op, of: notebook, via: nil, now: now)
    return op
  }

  /// This device's role in `notebook` by its log, and the log, for a change a person asked
  /// for: only a member may change a notebook.
  func requireMember(_ notebook: Notebook, toDo action: String) throws -> MembershipState {
    guard let state = try membershipState(notebook.id) else {
      throw MemoPeerError(
        .invalidInput, "\(notebook.displayName) has no membership log on this device yet",
        remedy: .syncWithMember)
    }
    switch state.members[try thisDevice()] {
    case .member?: return state
    case .relay?:
      throw MemoPeerError(
        .invalidInput, "this device relays \(notebook.displayName): only a member can \(action)",
        hint: "do it on a device that is a member of the notebook")
    case nil:
      throw MemoPeerError(
        .invalidInput, "this device is no longer in \(notebook.displayName): only a member can \(action)",
        hint: "a member can share it with this device again")
    }
  }

  // MARK: - Keys

  /// A new key generation of `notebook` (one more than the log's highest), sealed to every
  /// member whose public key is known here (the others get it in a grant once their key is
  /// known) and kept here. Runs inside the caller's transaction.
  func rotateKey(_ notebook: NotebookID, now: Timestamp) throws {
    let material: SecureBytes
    let keyID: [UInt8]
    do {
      material = try SecureBytes.random(count: AES256GCMKey.keySize)
      keyID = try SyncDerivations.keyID(of: material)
    } catch {
      throw MemoPeerError(.crypto, "could not make a notebook key", diagnostics: "\(error)")
    }
    try publishKey(notebook, material: material, keyID: keyID, now: now)
  }

  /// Signs a `key` op for `material` (its id `keyID`), sealed to the members whose keys are
  /// known, and keeps the key here under the generation the log gives it.
  private func publishKey(_ notebook: NotebookID, material: SecureBytes, keyID: [UInt8], now: Timestamp) throws {
    let recipients = try membershipState(notebook)?.keyRecipients ?? [try thisDevice()]
    var sealed: [DeviceID: [UInt8]] = [:]
    for device in recipients {
      guard let key = try publicKey(of: device) else { continue }
      do { sealed[device] = try SealedBox.seal(material, to: key) } catch {
        continue  // a key no device can own: that device gets nothing
      }
    }
    let op = try appendOwnOp(notebook, now: now) { log, signer in
      try log.rotateKey(keyID: keyID, sealed: sealed, signer: signer)
    }
    guard case .key(let generation, _, _) = op.body else { return }
    var raw = material.withUnsafeBytes { Array($0) }
    defer { SecureBytes.wipe(&raw) }
    try storeNotebookKey(
      notebook, id: Hex.encode(keyID), generation: Int64(clamping: generation), raw: raw, now: now)
    try setNotebookColumn(notebook, "current_key", .text(Hex.encode(keyID)))
  }

  /// Seals to each member that lacks them the key generations this device holds, in one
  /// `grant` per member: a member added before its key was known here (trusted by ID, met
  /// only through a relay) gets every key as soon as one member learns its key. Only keys
  /// the log names, and in a notebook from before version 3 also the keys from then.
  /// Returns the grants made. Runs inside the caller's transaction.
  @discardableResult
  func grantMissingKeys(_ notebook: NotebookID, now: Timestamp) throws -> Int {
    let me = try thisDevice()
    guard let state = try membershipState(notebook), state.members[me] == .member,
      let log = try membershipLog(notebook)
    else { return 0 }
    let ring = try keyring(notebook)
    let logged = Set(state.keys.map { Hex.encode($0.keyID) })
    let everLogged = Set(
      log.ops.compactMap { op -> String? in
        if case .key(_, let keyID, _) = op.body { return Hex.encode(keyID) }
        return nil
      })
    let legacy = Self.isLegacy(log)
    let grantable = ring.keys.keys.filter { logged.contains($0) || (legacy && !everLogged.contains($0)) }
    var made = 0
    for (device, role) in state.members.sorted(by: { $0.key < $1.key }) where role == .member && device != me {
      var given = Set(state.keys.filter { $0.sealed[device] != nil }.map { Hex.encode($0.keyID) })
      for grant in state.grants where grant.device == device {
        given.formUnion(grant.keys.map { Hex.encode($0.keyID) })
      }
      let missing = grantable.filter { !given.contains($0) }.sorted()
      guard !missing.isEmpty, let publicKey = try publicKey(of: device) else { continue }
      var boxes: [[UInt8]: [UInt8]] = [:]
      for id in missing {
        guard let key = ring[id], let idBytes = Hex.decode(id), idBytes.count == MembershipLimits.keyIDBytes else {
          continue
        }
        guard let box = try? SealedBox.seal(key.material, to: publicKey) else { break }
        boxes[idBytes] = box
      }
      guard !boxes.isEmpty else { continue }
      try appendOwnOp(notebook, now: now) { log, signer in try log.grant(device, keys: boxes, signer: signer) }
      made += 1
    }
    return made
  }

  /// Grants for every notebook this device is a member of (after a hello taught it keys).
  func grantMissingKeysEverywhere(now: Timestamp) throws {
    for notebook in try notebooks() where notebook.role == .member {
      try grantMissingKeys(notebook.id, now: now)
    }
  }

  /// Whether the log is of a notebook from before version 3 (a genesis without a nonce).
  static func isLegacy(_ log: MembershipLog) -> Bool {
    log.ops.contains { op in
      if case .create(let nonce) = op.body { return nonce.isEmpty }
      return false
    }
  }

  // MARK: - Names

  /// Signs a rename to `name`, sealed under the current key (members read it; relays
  /// cannot), and marks it taken here so this device does not rename itself again.
  func signRename(_ notebook: NotebookID, to name: String, now: Timestamp) throws {
    guard let key = try keyring(notebook).current, let keyID = Hex.decode(key.id) else { return }
    let sealed: [UInt8]
    do {
      sealed = try key.sealer.seal(
        Array(name.utf8), associatedData: SealingContext.notebookName(notebook: notebook, keyID: key.id))
    } catch {
      throw MemoPeerError(.crypto, "sealing a notebook's name failed", diagnostics: "\(error)")
    }
    let op = try appendOwnOp(notebook, now: now) { log, signer in
      try log.rename(keyID: keyID, sealedName: sealed, signer: signer)
    }
    if let id = Self.opVerifier.id(of: op) { try setNotebookColumn(notebook, "name_op", .blob(id.bytes)) }
  }
}
