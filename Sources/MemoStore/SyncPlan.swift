import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// What one sync session moves between this device and a peer, notebook by notebook
/// (docs/PROTOCOL.md, "Sync, version 3"): made after both sides' ops are in, from what the
/// logs say. A notebook moves only when both devices are in its log (member or relay) and
/// the peer listed it as one it syncs.
public struct SyncPlan: Sendable, Equatable {
  /// One notebook this device sends: what the peer knows there, and the position in this
  /// replica's feed up to which the peer has everything of it.
  public struct Outgoing: Sendable, Equatable {
    public var knowledge: VersionVector
    public var start: UInt64

    public init(knowledge: VersionVector, start: UInt64) {
      self.knowledge = knowledge
      self.start = start
    }
  }

  /// The notebooks this device sends the peer.
  public var sending: [NotebookID: Outgoing]
  /// The notebooks this device takes from the peer, with its own role in each (a member
  /// opens records, a relay keeps them sealed). Records of any other notebook are skipped.
  public var receiving: [NotebookID: NotebookRole]
  /// The notebooks the peer said it syncs: only their cursors move with its batches.
  public var announced: Set<NotebookID>
  /// What taking the peer's ops did (new invitations among it).
  public var ops = OpsIntake()
  /// Revocations the peer passed on that this device applied in this session.
  public var revoked: [RevocationNote] = []
  /// Purges the peer passed on that this device applied in this session.
  public var purged = 0

  public init(
    sending: [NotebookID: Outgoing] = [:], receiving: [NotebookID: NotebookRole] = [:], announced: Set<NotebookID> = []
  ) {
    self.sending = sending
    self.receiving = receiving
    self.announced = announced
  }

  /// The plan with records taken only of the notebooks this device listed as held in its
  /// own hello to the peer (`listed`): the peer sends records of no other, so a notebook
  /// accepted here after that hello went (a person pressed Accept while a live link was
  /// syncing) must keep no cursor from this session, which would claim records that never
  /// came; the next sync lists it with none, and the peer sends it whole (issue 39).
  public func receiving(onlyListed listed: Set<NotebookID>) -> SyncPlan {
    var plan = self
    plan.receiving = receiving.filter { listed.contains($0.key) }
    return plan
  }
}

/// What a peer's hello carries that is taken before anything else of the session.
public struct HelloTaken: Sendable, Equatable {
  /// Revocations the peer passed on that this device applied.
  public var revoked: [RevocationNote] = []
  /// The peer is revoked here (now, or before): nothing of any notebook moves.
  public var peerRevoked = false
  /// What the caller applies to the trust store and the discovery key once the store
  /// committed: every device revoked here leaves the trust store, and a revocation applied
  /// now brings a new discovery key.
  public var trustChanges = TrustChanges()

  public init() {}
}

extension MemoStore {
  /// The notebooks of this device's hello to `peer`, and the public keys it carries: each
  /// notebook held here whose log has both devices in it (with its heads, this device's
  /// knowledge and cursor), and each invitation whose log has the peer in it (heads only,
  /// so the peer sends only the ops this device lacks). The keys: this device's own, then
  /// those of every device in the listed notebooks known here (a relay thus gives a member
  /// the key of a member it never met). Signs the genesis of notebooks from before version 3
  /// first (`ensureMembershipLogs`).
  public func helloNotebooks(for peer: DeviceID, now: Timestamp) throws -> (entries: [NotebookEntry], keys: [String]) {
    try ensureMembershipLogs(now: now)
    let me = try thisDevice()
    guard try !revokedDevices().contains(peer) else { return ([], [try publicKeyText(me)].compactMap { $0 }) }
    var entries: [NotebookEntry] = []
    var devices: [DeviceID] = [me]
    for (notebook, state) in try syncedNotebooks(with: peer, me: me) {
      guard let log = try membershipLog(notebook) else { continue }
      entries.append(
        NotebookEntry(
          id: notebook, heads: log.heads, held: true, knowledge: try knowledge(of: notebook),
          cursor: try syncCursor(for: peer, in: notebook)))
      devices += state.members.keys.sorted()
    }
    for invitation in try invitations(includingDeclined: true) where entries.count < NotebookEntries.maximumEntries {
      guard let log = try membershipLog(invitation.notebook), log.state.members[peer] != nil || invitation.peer == peer
      else { continue }
      entries.append(NotebookEntry(id: invitation.notebook, heads: log.heads, held: false))
    }
    var keys: [String] = []
    var seen: Set<DeviceID> = []
    for device in devices where keys.count < NotebookEntries.maximumKeys && seen.insert(device).inserted {
      if let text = try publicKeyText(device) { keys.append(text) }
    }
    return (Array(entries.prefix(NotebookEntries.maximumEntries)), keys)
  }

  /// This device's memberships with `peer` that sync: a role of member or relay (as the
  /// notebook's log makes it, `materialize`), in a notebook that is here and not deleted.
  func activeMemberships(of peer: DeviceID) throws -> [(NotebookMember, Notebook)] {
    try memberships(of: peer).compactMap { member in
      guard member.role != .removed, let found = try notebook(member.notebook), !found.isDeleted else { return nil }
      return (member, found.notebook)
    }
  }

  private func publicKeyText(_ device: DeviceID) throws -> String? {
    try publicKey(of: device).map { Data($0).base64EncodedString() }
  }

  /// The notebooks held here that this device syncs with `peer`: both are in its log (as
  /// member or relay), and this device still takes part (a member demoted to relay keeps
  /// its memos but moves nothing).
  private func syncedNotebooks(with peer: DeviceID, me: DeviceID) throws -> [(NotebookID, MembershipState)] {
    try notebooks().compactMap { notebook in
      guard let state = try membershipState(notebook.id), let mine = state.members[me], state.members[peer] != nil,
        !(mine == .relay && notebook.role == .member)
      else { return nil }
      return (notebook.id, state)
    }
  }

  /// The ops `peer` lacks of each notebook this device syncs with it, computed from the heads
  /// its hello listed (every op when it listed none: it has not got the notebook yet), parents
  /// first, within one `sync-ops` frame.
  public func opsLacking(for peer: DeviceID, entries: [CheckedEntry]) throws -> [SyncOps.Notebook] {
    let me = try thisDevice()
    guard try !revokedDevices().contains(peer) else { return [] }
    let heads = Dictionary(entries.map { ($0.id, $0.heads) }, uniquingKeysWith: { a, _ in a })
    var budget = SyncOps.maximumBytes
    var result: [SyncOps.Notebook] = []
    for (notebook, _) in try syncedNotebooks(with: peer, me: me) {
      guard let log = try membershipLog(notebook), budget > 0 else { continue }
      let (ops, _) = log.missing(peerHeads: heads[notebook] ?? [], maximumBytes: budget)
      guard !ops.isEmpty else { continue }
      let encoded = ops.map(\.encoded)
      budget -= encoded.reduce(0) { $0 + $1.count + 4 }
      result.append(SyncOps.Notebook(id: notebook, ops: encoded))
    }
    return result
  }

  /// Takes what a peer's hello carries before anything else of the session: its
  /// revocations (a device revoked elsewhere gets nothing of this session; it is then dropped
  /// from the trust store) and the public keys it passes on (members can then seal keys to
  /// devices they never met: `grantMissingKeys`). `trustedNames` reads the trust store
  /// (devices and their names), only when a new revocation needs it. Writes the database
  /// only: the caller applies the result's `trustChanges` to the node's files.
  public func takeHello(
    from peer: DeviceID, revocations: [Revocation], keys: [[UInt8]],
    trustedNames: () throws -> [DeviceID: String], now: Timestamp
  ) throws -> HelloTaken {
    var taken = HelloTaken()
    try batch {
      taken.revoked = try takeRevocations(revocations, from: peer, trustedNames: trustedNames, now: now)
      try learnKeys(keys, from: peer, now: now)
      try grantMissingKeysEverywhere(now: now)
    }
    taken.trustChanges = TrustChanges(untrust: try revokedDevices(), rotateDiscoveryKey: !taken.revoked.isEmpty)
    taken.peerRevoked = try revokedDevices().contains(peer)
    return taken
  }

  /// Takes the peer's ops (`takeOps`) and makes the session's plan from what the logs say
  /// then, in one transaction; the peer's purges last (a purge counts only from a member of a
  /// notebook held here), so a memo purged elsewhere is gone before records move.
  public func plan(
    with peer: DeviceID, entries: [CheckedEntry], ops: [SyncOps.Notebook], purges: [Purge] = [], now: Timestamp
  ) throws -> SyncPlan {
    let me = try thisDevice()
    let plan = try batch {
      var plan = SyncPlan(announced: Set(entries.filter(\.held).map(\.id)))
      guard try !revokedDevices().contains(peer) else { return plan }
      plan.ops = try takeOps(ops, from: peer, now: now)
      try grantMissingKeysEverywhere(now: now)
      for (notebook, state) in try syncedNotebooks(with: peer, me: me) {
        guard let mine = state.members[me] else { continue }
        plan.receiving[notebook] = mine == .member ? .member : .relay
      }
      plan.sending = try sending(to: peer, entries: entries)
      plan.purged = try takePurges(purges, from: peer, now: now)
      return plan
    }
    if plan.purged > 0 { checkpointAfterPurge() }
    return plan
  }

  /// A relayed notebook whose keys just arrived: its records become memos here (those the
  /// keys open), and every peer's cursor and this device's knowledge in it start over, so
  /// whatever could not be opened is sent again.
  /// The notebooks this device sends `peer` as the logs stand now: those it syncs with the
  /// peer that the peer listed as synced (held), from the peer's cursor in this replica.
  public func sending(to peer: DeviceID, entries: [CheckedEntry]) throws -> [NotebookID: SyncPlan.Outgoing] {
    guard try !revokedDevices().contains(peer) else { return [:] }
    let byID = Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    var sending: [NotebookID: SyncPlan.Outgoing] = [:]
    for (notebook, _) in try syncedNotebooks(with: peer, me: try thisDevice()) {
      guard let entry = byID[notebook], entry.held else { continue }
      let start = entry.cursor.flatMap { $0.replica == replicaID ? $0.position : nil } ?? 0
      sending[notebook] = SyncPlan.Outgoing(knowledge: entry.knowledge, start: start)
    }
    return sending
  }

  func openRelayedRecords(_ notebook: NotebookID, now: Timestamp) throws {
    let records = try sql {
      let query = try db.prepare(
        "SELECT memo, dot_origin, dot_seq, clock, key_id, sealed FROM relayed WHERE notebook = ? ORDER BY feed_seq")
      try query.bind(1, notebook)
      var records: [SyncRecord] = []
      while try query.step() {
        guard let memo = query.memo(0), let clock = VersionVector(encoded: query.blob(3)) else {
          continue
        }
        records.append(
          SyncRecord(
            notebook: notebook, memo: memo, dot: try storedDot(query, 1, 2),
            clock: clock, keyID: query.text(4), sealed: query.blob(5)))
      }
      return records
    }
    // Held to the rules of a sync (they came from peers): a record that breaks one stays
    // unopened and is dropped with the rest; members send it again if it is sound.
    let receiver = try receiver()
    for record in records {
      guard (try? SyncRules.checkNumbers(record)) != nil, case .revision(let revision) = try? openRecord(record),
        (try? SyncRules.checkShape(revision)) != nil
      else { continue }
      do { _ = try applyRemote(revision, holdingFor: nil, receiver: receiver) } catch is SyncViolation { continue }
    }
    for statement in [
      "DELETE FROM relayed WHERE notebook = ?", "DELETE FROM notebook_knowledge WHERE notebook = ?",
      "DELETE FROM sync_cursors WHERE notebook = ?",
    ] {
      let change = try db.prepare(statement)
      try change.bind(1, notebook)
      _ = try change.step()
    }
  }
}
