import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// What one sync session moves between this device and a peer, notebook by notebook
/// (docs/PROTOCOL.md, "Sync, version 2"): made from this device's membership table after it
/// took the peer's offers.
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
  /// The notebooks the peer said it sends: only their cursors move with its batches.
  public var announced: Set<NotebookID>
  /// Offers this device declined, and why.
  public var declined: [NotebookID: NotebookOffers.DeclineReason]
  /// Notebooks this device joined in this session.
  public var joined: [NotebookID: NotebookRole]
  /// Revocations the peer passed on that this device applied in this session.
  public var revoked: [RevocationNote] = []
  /// Purges the peer passed on that this device applied in this session.
  public var purged = 0

  public init(
    sending: [NotebookID: Outgoing] = [:], receiving: [NotebookID: NotebookRole] = [:], announced: Set<NotebookID> = [],
    declined: [NotebookID: NotebookOffers.DeclineReason] = [:], joined: [NotebookID: NotebookRole] = [:]
  ) {
    self.sending = sending
    self.receiving = receiving
    self.announced = announced
    self.declined = declined
    self.joined = joined
  }
}

extension MemoStore {
  /// The notebooks this device shares with `peer`, as its `sync-hello` offers them: its own
  /// role, the peer's, its knowledge and cursor in each, and — to a member, from a member —
  /// the notebook's name and every key generation.
  public func offers(for peer: DeviceID) throws -> [NotebookOffer] {
    try activeMemberships(of: peer).map { member, notebook in
      let given: NotebookRole = member.role == .member ? .member : .relay
      let keys = notebook.role == .member && given == .member
      let removed = try members(of: notebook.id, includingRemoved: true).filter { $0.role == .removed }.map {
        NotebookOffer.Removal(device: $0.device, at: $0.added)
      }
      return NotebookOffer(
        id: notebook.id, role: notebook.role, given: given, knowledge: try knowledge(of: notebook.id),
        cursor: try syncCursor(for: peer, in: notebook.id), name: keys ? notebook.name : nil,
        keys: keys ? try keyMaterial(notebook.id) : nil, removed: removed.isEmpty ? nil : removed)
    }
  }

  /// This device's memberships with `peer` that sync: a role of member or relay, in a
  /// notebook that is here and not deleted.
  func activeMemberships(of peer: DeviceID) throws -> [(NotebookMember, Notebook)] {
    try memberships(of: peer).compactMap { member in
      guard member.role != .removed, let found = try notebook(member.notebook), !found.isDeleted else { return nil }
      return (member, found.notebook)
    }
  }

  /// Takes the peer's offers in one transaction — joins notebooks new here, records new
  /// members and relays, stores delivered key generations, stops sharing with devices the
  /// peer unshared — and returns the session's plan. `restrictSending`: send
  /// only notebooks the peer's offers list (the asker, who has the answerer's final list);
  /// the answerer sends all it shares, since the asker may join from its answer.
  ///
  /// The peer's revocations are taken first (`takeRevocations`), so a device revoked
  /// elsewhere gets nothing of this session, and is then dropped from the trust store; its
  /// purges last (`takePurges`), so a memo purged elsewhere is gone before records move.
  public func plan(
    with peer: DeviceID, offers: [CheckedOffer], revocations: [Revocation] = [], purges: [Purge] = [],
    restrictSending: Bool, now: Timestamp
  ) throws -> SyncPlan {
    let plan = try batch {
      var plan = SyncPlan(announced: Set(offers.map(\.id)))
      plan.revoked = try takeRevocations(revocations, from: peer, now: now)
      for offer in offers {
        let found = try notebook(offer.id)
        let member = try memberships(of: peer).first { $0.notebook == offer.id }
        let local = NotebookOffers.Local(
          role: found?.notebook.role, isDeleted: found?.isDeleted ?? false, peerRole: member?.role)
        let peerRole: NotebookMember.Role = offer.role == .member ? .member : .relay
        switch NotebookOffers.decide(offer, local: local) {
        case .decline(let reason):
          plan.declined[offer.id] = reason
        case .join(let role):
          let name = role == .member ? try freeName(offer.name) : nil
          try insertNotebook(offer.id, name: name, role: role, now: now)
          try setMember(offer.id, peer, role: peerRole, now: now)
          try importKeys(offer, from: peer, now: now)
          plan.joined[offer.id] = role
        case .accept(let offeredUpgrade):
          // A member takes keys only from a peer it has as a member: a relay that offers the
          // notebook back as a member with a key of its own choosing (issue 23) gives none,
          // nor does a device it never recorded. A relay here takes them, as at a join, from
          // a device that shares the notebook with it as a member for the first time, or
          // from one it has as a member; never from one it has as a relay.
          let keysFromPeer = member.map { $0.role == .member } ?? (found?.notebook.role == .relay)
          let upgrade = offeredUpgrade && keysFromPeer
          if member == nil { try setMember(offer.id, peer, role: peerRole, now: now) }
          if upgrade {
            try insertNotebook(offer.id, name: try freeName(offer.name), role: .member, now: now)
          }
          if keysFromPeer && (upgrade || found?.notebook.role == .member) {
            try importKeys(offer, from: peer, now: now)
          }
          if upgrade { try openRelayedRecords(offer.id, now: now) }
        }
        if plan.declined[offer.id] == nil { try applyRemovals(offer, from: peer) }
      }
      let byID = Dictionary(offers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
      for (_, notebook) in try activeMemberships(of: peer) {
        plan.receiving[notebook.id] = notebook.role
        let offer = byID[notebook.id]
        if restrictSending && offer == nil { continue }
        let start = offer?.cursor.flatMap { $0.replica == replicaID ? $0.position : nil } ?? 0
        plan.sending[notebook.id] = SyncPlan.Outgoing(knowledge: offer?.knowledge ?? VersionVector(), start: start)
      }
      // After the offers: a purge counts only from a member of a notebook held here.
      plan.purged = try takePurges(purges, from: peer, now: now)
      return plan
    }
    try untrustRevoked()
    if plan.purged > 0 { checkpointAfterPurge() }
    return plan
  }

  /// The name a notebook a member shares gets here: the member's name for it (or
  /// `shared`), made unique among this device's notebooks.
  private func freeName(_ offered: String?) throws -> String {
    let taken = Set(try notebooks().compactMap { $0.name?.lowercased() })
    return NotebookNames.available(offered ?? "shared") { taken.contains($0.lowercased()) }
  }

  /// Stores the key generations an offer delivers that are not here yet, oldest first, each
  /// at most one past the newest held by then. A member that rotated k times since the last
  /// sync offers k consecutive generations, which pass one by one; a generation a peer made
  /// up (2^53) would make this device's next rotation one that every peer refuses, and its
  /// syncs fail from then on (issue 23). A key refused here leaves what it sealed unopened
  /// (kept aside), nothing else.
  private func importKeys(_ offer: CheckedOffer, from peer: DeviceID, now: Timestamp) throws {
    let held = try keyring(offer.id)
    var newest = held.newestGeneration
    let offered = offer.keys.sorted { ($0.generation, $0.id) < ($1.generation, $1.id) }
    for key in offered where held[key.id] == nil && key.generation <= newest + 1 {
      guard var raw = Data(base64Encoded: key.key).map(Array.init), raw.count == AES256GCMKey.keySize else { continue }
      defer { SecureBytes.wipe(&raw) }
      try storeNotebookKey(offer.id, id: key.id, generation: key.generation, raw: raw, now: now)
      newest = max(newest, key.generation)
    }
  }

  /// Stops sharing the notebook with the devices the peer unshared it from (an unshare on
  /// one member reaches the other members and the relays), unless this device shared it
  /// with one of them again after that; never with the peer itself.
  private func applyRemovals(_ offer: CheckedOffer, from peer: DeviceID) throws {
    let members = try self.members(of: offer.id, includingRemoved: true)
    for removal in offer.removed where removal.device != peer {
      let current = members.first { $0.device == removal.device }
      if let current, current.role == .removed || current.added > removal.at { continue }
      try setMember(offer.id, removal.device, role: .removed, now: removal.at)
    }
  }

  /// A relayed notebook whose keys just arrived: its records become memos here (those the
  /// keys open), and every peer's cursor and this device's knowledge in it start over, so
  /// whatever could not be opened is sent again.
  private func openRelayedRecords(_ notebook: NotebookID, now: Timestamp) throws {
    let records = try sql {
      let query = try db.prepare(
        "SELECT memo, dot_origin, dot_seq, clock, key_id, sealed FROM relayed WHERE notebook = ? ORDER BY feed_seq")
      try query.bind(1, notebook.rawValue)
      var records: [SyncRecord] = []
      while try query.step() {
        guard let memo = MemoID(canonical: query.text(0)), let clock = VersionVector(encoded: query.blob(3)) else {
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
      try change.bind(1, notebook.rawValue)
      _ = try change.step()
    }
  }
}
