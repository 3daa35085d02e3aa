import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

/// One outbox entry as `outbox` shows it (the memo stays sealed until it is sent).
public struct OutboxEntry: Sendable, Equatable {
  public var id: String
  /// The recipient; nil for a row that names no device (no memo-peer wrote one, but the
  /// schema 1–2 fixtures hold some): it can reach nobody, and is listed to be cancelled.
  public var recipient: DeviceID?
  public var created: Timestamp
  public var expires: Timestamp?
  public var state: OutboxState
  public var attempts: Int

  /// Pending, but past its expiry time.
  public func hasExpired(at now: Timestamp) -> Bool { state.isPending && (expires.map { now >= $0 } ?? false) }
}

/// One inbox entry, opened.
public struct InboxEntry: Sendable, Equatable {
  public var id: String
  /// The sender; nil for a row that names no device (as `OutboxEntry.recipient`): listed
  /// to be dropped, never accepted.
  public var sender: DeviceID?
  public var received: Timestamp
  public var memo: DeliveryMessage.Content
  /// `sender`, under the name it had while `sender` was the row's text.
  public var senderID: DeviceID? { sender }
}

/// What the receiver did with a delivery.
public enum DeliveryOutcome: Equatable, Sendable {
  /// Stored now (`inbox` or `memos`), or earlier (`duplicate`).
  case stored(String, duplicate: Bool)
  case refused(RefusalReason)
}

/// Delivery: the outbox (sender) and the inbox (receiver). Every memo stays sealed at rest
/// (the queue tables' additional data binds the entry id and the peer).
extension MemoStore {
  // MARK: - Outbox

  /// Queues a memo for a trusted peer; returns the entry id.
  @discardableResult
  public func queueForDelivery(
    _ memo: DeliveryMessage.Content, to recipient: DeviceID, expires: Timestamp?, now: Timestamp
  ) throws -> String {
    let id = MemoID().rawValue
    try batch {
      try enqueue(
        QueuedPayload(id: id, peer: recipient, payload: DeliveryMessage.encode(memo), time: now), in: .outbox)
      try sql {
        let update = try db.prepare("UPDATE outbox SET expires = ? WHERE id = ?")
        try update.bind([expires.map { .integer($0) } ?? .null, .text(id)])
        _ = try update.step()
      }
    }
    return id
  }

  /// Every outbox entry, oldest first, without opening the memos.
  public func outboxEntries() throws -> [OutboxEntry] {
    try outboxEntries { DeviceID($0) }
  }

  /// The outbox entries for `recipient`, oldest first. A round reads every entry it sends
  /// through this, so a row written in the compact form every version writes is matched by
  /// its text without parsing the device ID again; any other text is parsed, as
  /// `outboxEntries()` does, so that no entry is passed over for how its recipient is written.
  public func outboxEntries(for recipient: DeviceID) throws -> [OutboxEntry] {
    let compact = recipient.compact
    return try outboxEntries { $0 == compact ? recipient : DeviceID($0) }.filter { $0.recipient == recipient }
  }

  private func outboxEntries(recipient: (String) -> DeviceID?) throws -> [OutboxEntry] {
    try sql {
      let query = try db.prepare(
        "SELECT id, recipient, created, expires, state, attempts, delivered FROM outbox ORDER BY created, id")
      var result: [OutboxEntry] = []
      while try query.step() {
        result.append(
          OutboxEntry(
            id: query.text(0), recipient: recipient(query.text(1)), created: query.int64(2),
            expires: query.isNull(3) ? nil : query.int64(3),
            state: OutboxState.parse(query.text(4), delivered: query.isNull(6) ? nil : query.int64(6)),
            attempts: Int(query.int64(5))))
      }
      return result
    }
  }

  /// The sealed memo of an outbox entry, opened for sending.
  public func outboxContent(_ id: String) throws -> DeliveryMessage.Content {
    try Self.content(of: openedOutboxEntry(id))
  }

  /// The same memo as the JSON object a batch carries: the stored JSON as it is when
  /// `DeliveryMessage.sendableJSON` lets it through (every entry queued as JSON), else the
  /// memo `outboxContent` makes of it, encoded.
  public func outboxContentJSON(_ id: String) throws -> [UInt8] {
    let entry = try openedOutboxEntry(id)
    return try DeliveryMessage.sendableJSON(entry.payload) ?? DeliveryMessage.encode(Self.content(of: entry))
  }

  /// Outbox entry `id` with its payload opened.
  private func openedOutboxEntry(_ id: String) throws -> QueueRow {
    let row = try sql { () -> QueueRow? in
      try db.withCached("SELECT recipient, payload, created FROM outbox WHERE id = ?") { query in
        try query.bind(1, id)
        guard try query.step() else { return nil }
        return QueueRow(id: id, peer: query.text(0), payload: query.blob(1), time: query.int64(2))
      }
    }
    guard let row else {
      throw MemoPeerError(.notFound, "no outbox entry \(id)", remedy: .listOutbox)
    }
    let sealer = try sealer()
    let payload: [UInt8]
    do {
      payload = try sealer.open(row.payload, associatedData: Queue.outbox.context(id: id, peer: row.peer))
    } catch {
      throw MemoPeerError(
        .integrity, "outbox entry \(id) failed the integrity check (tampered, truncated or moved)",
        diagnostics: "\(error)")
    }
    return QueueRow(id: id, peer: row.peer, payload: payload, time: row.time)
  }

  /// One outbox entry's state, without opening its memo.
  func outboxState(_ id: String) throws -> OutboxState? {
    try sql {
      try db.withCached("SELECT state, delivered FROM outbox WHERE id = ?") { query in
        try query.bind(1, id)
        guard try query.step() else { return nil }
        return OutboxState.parse(query.text(0), delivered: query.isNull(1) ? nil : query.int64(1))
      }
    }
  }

  /// Moves an entry to `state` if its current state allows it (a delivered or cancelled
  /// entry never changes again); `attempted` counts a delivery attempt. Returns whether it moved.
  @discardableResult
  public func setOutboxState(_ id: String, _ state: OutboxState, attempted: Bool = false) throws -> Bool {
    try batch {
      guard let current = try outboxState(id) else { return false }
      guard current != state || attempted else { return false }
      guard current.allows(state) else { return false }
      var delivered: SQLiteValue = .null
      if case .delivered(let time) = state { delivered = .integer(time) }
      return try sql {
        try db.withCached("UPDATE outbox SET state = ?, delivered = ?, attempts = attempts + ? WHERE id = ?") {
          update in
          try update.bind([.text(state.stored), delivered, .integer(attempted ? 1 : 0), .text(id)])
          _ = try update.step()
          return db.changes > 0
        }
      }
    }
  }

  /// Moves several entries, each as `setOutboxState` would, in **one** transaction: the
  /// sender marks a whole batch `sending`, and then each entry's fate, with one commit each.
  /// Returns how many moved.
  @discardableResult
  public func setOutboxStates(_ changes: [(id: String, state: OutboxState)], attempted: Bool = false) throws -> Int {
    try batch {
      var moved = 0
      for change in changes where try setOutboxState(change.id, change.state, attempted: attempted) { moved += 1 }
      return moved
    }
  }

  /// Resolves an entry id or unique prefix.
  public func resolveOutboxEntry(_ text: String) throws -> OutboxEntry {
    let matches = try outboxEntries().filter { $0.id.hasPrefix(text.lowercased()) }
    guard matches.count == 1, !text.isEmpty else {
      throw MemoPeerError(
        matches.isEmpty ? .notFound : .ambiguousID,
        matches.isEmpty ? "no outbox entry matches \(text)" : "\(text) matches \(matches.count) outbox entries",
        remedy: .listOutbox)
    }
    return matches[0]
  }

  // MARK: - Inbox (receiver)

  /// Stores a delivered memo exactly once per entry id: a retransmission (its receipt was
  /// lost) is answered as a duplicate without storing anything. The entry, the memo and
  /// the record of the id commit in one transaction, so a crash leaves all or none.
  public func receiveDelivery(
    id: String, from sender: DeviceID, memo: DeliveryMessage.Content, size: Int, policy: ReceivePolicy?,
    limits: ReceiveLimits, now: Timestamp
  ) throws -> DeliveryOutcome {
    guard !id.isEmpty, id.utf8.count <= 64 else { return .refused(.invalid) }
    return try batch {
      if let earlier = try receivedMarker(id) { return .stored(earlier, duplicate: true) }
      let waiting = try sql {
        let count = try db.prepare("SELECT count(*) FROM inbox WHERE sender = ?")
        try count.bind(1, sender)
        _ = try count.step()
        return Int(count.int64(0))
      }
      let decision = ReceiveDecision.decide(
        policy: policy, size: size, waitingFromSender: waiting,
        acceptedRecently: policy == .accept ? try acceptedRecently(from: sender, now: now) : 0, limits: limits)
      let place: String
      switch decision {
      case .refuse(let reason): return .refused(reason)
      case .inbox:
        _ = try MemoRules.validated(
          MemoDraft(title: memo.title, body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate))
        try enqueue(
          QueuedPayload(id: id, peer: sender, payload: DeliveryMessage.encode(memo), time: now), in: .inbox)
        place = "inbox"
      case .memos:
        _ = try storeDelivered(memo, entryID: id, from: sender, now: now)
        try logAccepted(from: sender, now: now)
        place = "memos"
      }
      try sql {
        let insert = try db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)")
        try insert.bind([.text(Self.receivedKey(id)), .blob(Array(place.utf8))])
        _ = try insert.step()
      }
      return .stored(place, duplicate: false)
    }
  }

  /// Stores a batch of deliveries from one sender (delivery version 2) in **one**
  /// transaction, with one outcome per entry in order. Each entry is decided as
  /// `receiveDelivery` decides one (its id seen before: a duplicate; the policy; the size;
  /// the inbox and daily limits, counting what this batch stored before it), and each is
  /// written inside a savepoint: an entry refused as invalid leaves nothing behind and does
  /// not refuse the rest. A storage or sealing failure throws and leaves nothing of the
  /// batch, so a kill -9 at any point leaves the whole batch or none of it; its
  /// retransmission then finds every stored entry's id and answers it as a duplicate.
  public func receiveDeliveries(
    _ entries: [DeliveryMessage.Deliver], from sender: DeviceID, policy: ReceivePolicy?, limits: ReceiveLimits,
    now: Timestamp
  ) throws -> [DeliveryOutcome] {
    try batch {
      var waiting = try inboxCount(from: sender)
      var accepted = policy == .accept ? try acceptedRecently(from: sender, now: now) : 0
      var outcomes: [DeliveryOutcome] = []
      outcomes.reserveCapacity(entries.count)
      for entry in entries {
        guard !entry.id.isEmpty, entry.id.utf8.count <= 64 else {
          outcomes.append(.refused(.invalid))
          continue
        }
        if let earlier = try receivedMarker(entry.id) {
          outcomes.append(.stored(earlier, duplicate: true))
          continue
        }
        let payload = DeliveryMessage.encode(entry.memo)
        let decision = ReceiveDecision.decide(
          policy: policy, size: payload.count, waitingFromSender: waiting, acceptedRecently: accepted, limits: limits)
        if case .refuse(let reason) = decision {
          outcomes.append(.refused(reason))
          continue
        }
        do {
          let place = try sql {
            try db.savepoint {
              try storeReceived(
                id: entry.id, memo: entry.memo, payload: payload, from: sender, toMemos: decision == .memos, now: now)
            }
          }
          if decision == .memos { accepted += 1 } else { waiting += 1 }
          outcomes.append(.stored(place, duplicate: false))
        } catch let error as MemoPeerError where error.code == .invalidInput || error.code == .tooLarge {
          outcomes.append(.refused(.invalid))
        }
      }
      return outcomes
    }
  }

  /// Writes one new delivery (in the inbox, or with `toMemos` in the memos) and the record
  /// of its id; returns the place. Runs inside the caller's transaction.
  private func storeReceived(
    id: String, memo: DeliveryMessage.Content, payload: [UInt8], from sender: DeviceID, toMemos: Bool,
    now: Timestamp
  ) throws -> String {
    let place: String
    if toMemos {
      _ = try storeDelivered(memo, entryID: id, from: sender, now: now)
      try logAccepted(from: sender, now: now)
      place = "memos"
    } else {
      _ = try MemoRules.validated(
        MemoDraft(title: memo.title, body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate))
      try enqueue(QueuedPayload(id: id, peer: sender, payload: payload, time: now), in: .inbox)
      place = "inbox"
    }
    try sql {
      try db.withCached("INSERT INTO meta (key, value) VALUES (?, ?)") { insert in
        try insert.bind([.text(Self.receivedKey(id)), .blob(Array(place.utf8))])
        _ = try insert.step()
      }
    }
    return place
  }

  private func inboxCount(from sender: DeviceID) throws -> Int {
    try sql {
      let count = try db.prepare("SELECT count(*) FROM inbox WHERE sender = ?")
      try count.bind(1, sender)
      _ = try count.step()
      return Int(count.int64(0))
    }
  }

  /// Entries waiting in the inbox, oldest first.
  public func inboxEntries() throws -> [InboxEntry] {
    try rows(in: .inbox).map { row in
      InboxEntry(id: row.id, sender: DeviceID(row.peer), received: row.time, memo: try Self.content(of: row))
    }
  }

  /// Moves an inbox entry into the memos, keeping its id, its sender (as origin) and the
  /// time it was sent. One transaction: the entry is in the inbox or in the memos, never both.
  /// Returns the memo as stored (under the id `storeDelivered` chose). An entry that names
  /// no device is refused (it can only be dropped).
  @discardableResult
  public func acceptInboxEntry(_ text: String) throws -> Memo {
    let entry = try resolveInboxEntry(text)
    guard let sender = entry.sender else {
      throw MemoPeerError(
        .invalidInput, "inbox entry \(entry.id.prefix(8)) names no device it came from",
        remedy: .dropInboxEntry(String(entry.id.prefix(8))))
    }
    let id = try batch {
      let id = try storeDelivered(entry.memo, entryID: entry.id, from: sender, now: entry.received)
      try deleteInboxRow(entry.id)
      return id
    }
    return try loadRow(id) ?? Self.memo(id, entry.memo, from: sender)
  }

  /// Stores a delivered memo and returns its id: as the sent memo's own revision when it
  /// says which (so the two devices hold one memo with one history), else as a new memo
  /// named by the entry id (`deliveredMemoID`). Runs inside the caller's transaction. A
  /// revision that breaks a sync rule is refused as invalid input.
  private func storeDelivered(
    _ content: DeliveryMessage.Content, entryID: String, from sender: DeviceID, now: Timestamp
  ) throws
    -> MemoID
  {
    let claimed: SyncRevision?
    do { claimed = try DeliveryMessage.revision(of: content) } catch { throw Self.invalidDelivery(error) }
    guard let claimed, let revision = try signedRevision(claimed, of: content, from: sender, now: now)
    else {
      let id = Self.deliveredMemoID(entryID: entryID, sender: sender)
      _ = try importMemo(Self.memo(id, content, from: sender))
      return id
    }
    do {
      // A delivered revision counts towards the replicas this node tracks, as a synced one,
      // and what would delete or empty a memo waits for the guard like any removal.
      var budget = ReplicaBudget(known: try knownReplicas())
      try budget.admit(revision.head.dot.origin)
      _ = try applyRemote(revision, holdingFor: sender, receiver: try receiver())
    } catch let error as SyncViolation {
      throw Self.invalidDelivery(error)
    }
    return revision.memo
  }

  /// The delivered revision as its signed record says it is, when it may land as a
  /// revision of its memo here: this device is a member of the memo's notebook (the one
  /// the memo is in here, else the one the record names), the sender is a member of it
  /// too, and the record verifies as any synced record does. Nil otherwise: the memo then
  /// arrives as a new memo (docs/design/sync-v3.md; issue 23, deliveries respect
  /// notebooks). Runs inside the caller's transaction.
  private func signedRevision(
    _ claimed: SyncRevision, of content: DeliveryMessage.Content, from sender: DeviceID, now: Timestamp
  ) throws -> SyncRevision? {
    guard let (record, binding) = DeliveryMessage.record(of: content), record.memo == claimed.memo,
      record.dot == claimed.head.dot, record.clock == claimed.head.clock
    else { return nil }
    let notebook = try loadRow(claimed.memo)?.notebook ?? record.notebook
    guard notebook == record.notebook, let held = try self.notebook(notebook), !held.isDeleted,
      held.notebook.role == .member,
      try members(of: notebook).contains(where: { $0.device == sender && $0.role == .member })
    else { return nil }
    let refused = try takeBindings(binding.map { [$0] } ?? [], from: sender, now: now)
    guard case .author(let author) = try authorship(of: record, refused: refused), author != nil,
      case .revision(let revision) = try? openRecord(record, author: author),
      (try? SyncRules.checkShape(revision)) != nil
    else { return nil }
    return revision
  }

  /// A stored memo as a delivery carries it: its place in history, and its signed record
  /// with the binding of its replica.
  public func sentRevision(of memo: Memo) throws -> DeliveryMessage.SentRevision {
    DeliveryMessage.SentRevision(memo: memo, binding: try memo.dot.flatMap { try binding(of: $0.origin) })
  }

  static func invalidDelivery(_ violation: SyncViolation) -> MemoPeerError {
    MemoPeerError(
      .invalidInput, "the delivered memo's place in its history is not valid (\(violation.reason.badData))",
      hint: "update memo-peer on the sending device", diagnostics: violation.detail)
  }

  /// The memo id of a delivery that names no revision: the entry id when it is a UUID (as
  /// every memo-peer sender makes them), else one derived from the sender and the entry id
  /// (a peer may send any id of up to 64 bytes): the same on every path that stores it.
  static func deliveredMemoID(entryID: String, sender: DeviceID) -> MemoID {
    MemoID(canonical: entryID) ?? hashedID("memo-peer/1\0delivered\0\(sender.compact)\0\(entryID)")
  }

  /// Removes an inbox entry; a retransmission of it is still recognised (and not stored).
  public func dropInboxEntry(_ text: String) throws -> InboxEntry {
    let entry = try resolveInboxEntry(text)
    try batch { try deleteInboxRow(entry.id) }
    return entry
  }

  public func resolveInboxEntry(_ text: String) throws -> InboxEntry {
    let matches = try inboxEntries().filter { $0.id.hasPrefix(text.lowercased()) }
    guard matches.count == 1, !text.isEmpty else {
      throw MemoPeerError(
        matches.isEmpty ? .notFound : .ambiguousID,
        matches.isEmpty ? "no inbox entry matches \(text)" : "\(text) matches \(matches.count) inbox entries",
        remedy: .listInbox)
    }
    return matches[0]
  }

  private func deleteInboxRow(_ id: String) throws {
    try sql {
      let delete = try db.prepare("DELETE FROM inbox WHERE id = ?")
      try delete.bind(1, id)
      _ = try delete.step()
    }
  }

  func receivedMarker(_ id: String) throws -> String? {
    try sql {
      try db.withCached("SELECT value FROM meta WHERE key = ?") { read in
        try read.bind(1, Self.receivedKey(id))
        return try read.step() ? String(decoding: read.blob(0), as: UTF8.self) : nil
      }
    }
  }

  /// An entry's memo. Entries queued before delivery existed (schema 1 and 2 fixtures) hold
  /// plain UTF-8 text rather than a JSON memo: it becomes the body, sent at queueing time.
  static func content(of entry: QueueRow) throws -> DeliveryMessage.Content {
    if let content = DeliveryMessage.decode(entry.payload) { return content }
    let body = try MemoRules.decodeUTF8(entry.payload, source: "outbox entry \(entry.id)")
    let valid = try MemoRules.validated(MemoDraft(title: "", body: body))
    return DeliveryMessage.Content(
      title: valid.title, body: valid.body, tags: valid.tags, isPrivate: false, sent: entry.time)
  }

  static func receivedKey(_ id: String) -> String { "received:" + id }

  /// Memos stored from `sender` under the `accept` policy within the last 24 hours.
  private func acceptedRecently(from sender: DeviceID, now: Timestamp) throws -> Int {
    try sql {
      let count = try db.prepare("SELECT count(*) FROM received_log WHERE sender = ? AND time > ?")
      let cutoff = now > Int64.min + SyncLimits.guardWindow ? now - SyncLimits.guardWindow : Int64.min
      try count.bind([.device(sender), .integer(cutoff)])
      _ = try count.step()
      return Int(count.int64(0))
    }
  }

  /// Records one memo stored under the `accept` policy, forgetting entries older than a day.
  private func logAccepted(from sender: DeviceID, now: Timestamp) throws {
    try sql {
      let cutoff = now > Int64.min + SyncLimits.guardWindow ? now - SyncLimits.guardWindow : Int64.min
      let forget = try db.prepare("DELETE FROM received_log WHERE sender = ? AND time <= ?")
      try forget.bind([.device(sender), .integer(cutoff)])
      _ = try forget.step()
      let insert = try db.prepare("INSERT INTO received_log (sender, time) VALUES (?, ?)")
      try insert.bind([.device(sender), .integer(now)])
      _ = try insert.step()
    }
  }

  static func memo(_ id: MemoID, _ content: DeliveryMessage.Content, from sender: DeviceID) -> Memo {
    Memo(
      id: id, title: content.title, body: content.body, tags: content.tags, created: content.sent,
      updated: content.sent, isPrivate: content.isPrivate, revision: 1, origin: .device(sender))
  }
}
