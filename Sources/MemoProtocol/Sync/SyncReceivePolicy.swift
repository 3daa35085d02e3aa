import MemoCore

/// What a receiver decides of each record of a peer's batches, apart from the store that
/// reads the facts and writes the rows (`SyncSink`): which records it takes, which it keeps
/// aside, which break a rule or a limit, and the counts those limits weigh across a
/// direction of a sync. A value: a sink decides a batch on a copy and keeps it only when the
/// batch commits.
///
/// For each record, in order: a notebook not taken, one left incomplete, a purged memo —
/// skipped; numbers out of range — refused; a forgery (its signature fails, it is bound to
/// another device, its author is revoked) — kept aside; its author's share not here — its
/// notebook is incomplete; a clock claiming edits of this device it never made — kept aside
/// (its signer lied, the peer may only pass the lie on); a revision of this device it
/// never made — refused; a new replica beyond the cap — refused; this device's own revision
/// coming back — skipped; a relay's sealed bytes per author beyond the quota — refused.
/// A member then opens it (`decide(opened:of:author:)`), and the store's write is counted
/// (`count`): held removals, new memos a day, new memos in a first fill.
public struct SyncReceivePolicy: Sendable {
  /// The limits of one direction (`SyncLimits` and config.json's quotas; tests make them
  /// small).
  public struct Limits: Sendable, Equatable {
    public var maximumHeld: Int
    public var maximumNewMemos: Int
    public var maximumFirstFill: Int
    public var maximumRelayedBytes: Int64

    public init(maximumHeld: Int, maximumNewMemos: Int, maximumFirstFill: Int, maximumRelayedBytes: Int64) {
      self.maximumHeld = maximumHeld
      self.maximumNewMemos = maximumNewMemos
      self.maximumFirstFill = maximumFirstFill
      self.maximumRelayedBytes = maximumRelayedBytes
    }
  }

  /// A pair whose sealed bytes a relay keeps count of.
  public struct RelayedAuthor: Hashable, Sendable {
    public var notebook: NotebookID
    public var author: DeviceID

    public init(notebook: NotebookID, author: DeviceID) {
      self.notebook = notebook
      self.author = author
    }
  }

  public let limits: Limits
  /// The notebooks taken from the peer, with this device's role in each.
  public let receiving: [NotebookID: NotebookRole]
  /// Notebooks the peer sends for the first time (no position in its feed yet): their new
  /// memos count towards `maximumFirstFill`, per notebook, not the daily quota.
  public let firstFill: Set<NotebookID>
  /// This replica and its sequence, read again for every batch: a revision this device
  /// commits while the session runs can come straight back, and is then its own echo.
  public var receiver: SyncRules.Receiver
  /// Memos purged here: their records are dropped on arrival.
  public var purged: Set<PurgedMemo>

  public private(set) var budget: ReplicaBudget
  /// Removals held for this peer (before this session, and in it).
  public private(set) var held: Int
  /// Notebooks with a record that could not be opened yet: nothing more of them is taken.
  public private(set) var incomplete: Set<NotebookID> = []
  /// What the direction did so far; a sink adds what its end does (held removals).
  public var outcome = SyncMessage.Outcome()
  /// How many memos a member's writes made live less those they made not live.
  public private(set) var liveChange = 0
  /// The quota day, and the memos added from this peer that day before it was read.
  public private(set) var day: (day: Int64, before: Int)?
  /// New memos from this peer in this session (outside first fills).
  public private(set) var added = 0
  private var filled: [NotebookID: Int] = [:]
  private var relayedBytes: [RelayedAuthor: Int64] = [:]

  public init(
    limits: Limits, receiving: [NotebookID: NotebookRole], firstFill: Set<NotebookID>,
    receiver: SyncRules.Receiver, budget: ReplicaBudget, held: Int, purged: Set<PurgedMemo>
  ) {
    self.limits = limits
    self.receiving = receiving
    self.firstFill = firstFill
    self.receiver = receiver
    self.budget = budget
    self.held = held
    self.purged = purged
  }

  /// Starts counting the daily quota of `day`, with `before` memos already added that day.
  public mutating func startDay(_ day: Int64, before: Int) { self.day = (day, before) }

  /// The (notebook, author) pairs of relayed records whose sealed bytes kept here are not
  /// counted yet: what the store reads for the batch, once per pair and session.
  public func uncountedRelayedAuthors(_ records: [SyncRecord], _ authorships: [SyncAuthorship]) -> Set<RelayedAuthor> {
    var pairs: Set<RelayedAuthor> = []
    for (record, authorship) in zip(records, authorships) where receiving[record.notebook] == .relay {
      guard case .author(let author?) = authorship else { continue }
      let pair = RelayedAuthor(notebook: record.notebook, author: author)
      if relayedBytes[pair] == nil { pairs.insert(pair) }
    }
    return pairs
  }

  /// The sealed bytes by `pair` kept here before this session.
  public mutating func learnRelayedBytes(_ bytes: Int64, of pair: RelayedAuthor) {
    if relayedBytes[pair] == nil { relayedBytes[pair] = bytes }
  }

  /// The decision for one record of a batch, given who the store found wrote it.
  public mutating func decide(_ record: SyncRecord, _ authorship: SyncAuthorship) -> SyncReceiveDecision {
    guard let role = receiving[record.notebook] else { return .skip(.notTaken) }
    guard !incomplete.contains(record.notebook) else { return .skip(.incomplete) }
    guard !purged.contains(PurgedMemo(notebook: record.notebook, memo: record.memo)) else { return .skip(.purged) }
    do throws(SyncViolation) {
      // The decoder checked the clear part; checked again, cheaply, for a batch that
      // reaches the store another way.
      try SyncRules.checkNumbers(record)
      let author: DeviceID?
      switch authorship {
      case .author(let device): author = device
      case .refused(let reason): return keepAside(reason)
      case .waiting:
        incomplete.insert(record.notebook)
        return .skip(.waiting)
      }
      let admitted: Bool
      do throws(SyncViolation) {
        admitted = try SyncRules.admit(record, into: receiver)
      } catch let lie where lie.reason == .futureClock {
        let signer = author.map { "a revision signed by \($0.short)" } ?? "an unsigned revision"
        return keepAside(signer + " claiming edits this device never made")
      }
      try budget.admit(record.dot.origin)
      guard admitted else { return .skip(.echo) }
      if role == .relay, let author { try countRelayed(record, by: author) }
      return .apply(role, author: author)
    } catch {
      return .refuse(error)
    }
  }

  /// The decision for a member's record once the store tried to open it.
  public mutating func decide(opened: SyncOpenedRecord, of record: SyncRecord, author: DeviceID?)
    -> SyncReceiveDecision
  {
    switch opened {
    case .unreadable(let violation): return keepAside(violation.detail)
    case .missingKey:
      incomplete.insert(record.notebook)
      return .skip(.missingKey)
    case .revision(let revision):
      do throws(SyncViolation) { try SyncRules.checkShape(revision) } catch { return .refuse(error) }
      return .apply(.member, author: author)
    }
  }

  /// Counts what the store's write of a record of `notebook` did, under this device's
  /// `role` there; refuses when that breaks a limit (held removals, new memos in a first
  /// fill or a day).
  public mutating func count(_ result: SyncApplyResult, in notebook: NotebookID, as role: NotebookRole)
    throws(SyncViolation)
  {
    switch result {
    case .known: break
    case .held:
      held += 1
      guard held <= limits.maximumHeld else {
        throw SyncViolation(.tooManyHeld, "more than \(limits.maximumHeld) removals held back")
      }
    case .stored(let conflict, let live):
      outcome.applied += 1
      if conflict { outcome.conflicts += 1 }
      if role == .member { liveChange += live }
      guard live > 0 else { return }
      if firstFill.contains(notebook) { try countFirstFill(notebook) } else { try countNewMemo() }
    }
  }

  private mutating func keepAside(_ reason: String) -> SyncReceiveDecision {
    outcome.quarantined += 1
    return .keepAside(reason)
  }

  private mutating func countRelayed(_ record: SyncRecord, by author: DeviceID) throws(SyncViolation) {
    let pair = RelayedAuthor(notebook: record.notebook, author: author)
    let total = relayedBytes[pair, default: 0] + Int64(record.sealed.count)
    guard total <= limits.maximumRelayedBytes else {
      throw SyncViolation(
        .overQuota,
        "more than \(limits.maximumRelayedBytes / 1_048_576) MiB of sealed records by \(author.short) in notebook "
          + "\(record.notebook.short)")
    }
    relayedBytes[pair] = total
  }

  private mutating func countFirstFill(_ notebook: NotebookID) throws(SyncViolation) {
    let count = filled[notebook, default: 0] + 1
    guard count <= limits.maximumFirstFill else {
      throw SyncViolation(
        .overQuota,
        "more than \(limits.maximumFirstFill) new memos in the first sync of notebook \(notebook.short) "
          + "from one device (config.json's quotas.first_fill_memos)")
    }
    filled[notebook] = count
  }

  private mutating func countNewMemo() throws(SyncViolation) {
    added += 1
    guard (day?.before ?? 0) + added <= limits.maximumNewMemos else {
      throw SyncViolation(
        .overQuota, "more than \(limits.maximumNewMemos) new memos from one device in a day (the rest comes tomorrow)")
    }
  }
}
