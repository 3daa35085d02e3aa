import MemoCore
import MemoCrypto
import MemoNode
import MemoStore
import MemoWeb

/// The page's API on this node (docs/WEB.md). Each call opens the store afresh, so a lock
/// or unlock anywhere shows at once, and goes through the same store, consent log and
/// trust store APIs as the commands, answering in their `--json` shapes.
///
/// Only what a person asks for opens the store as their use (restarting the idle timeout
/// of protection `complete`); the page's polling (`status`, `sync`) does not.
final class WebBackend: WebAPI {
  let paths: NodePaths
  let logger: Logger
  let syncJob: WebSyncJob
  let clock: @Sendable () -> Timestamp
  /// How long a sync waits for each device unless the call says (as `sync`'s default).
  let syncTimeout: Double

  init(paths: NodePaths, logger: Logger, clock: @escaping @Sendable () -> Timestamp, syncTimeout: Double = 10) {
    self.paths = paths
    self.logger = logger
    self.clock = clock
    self.syncTimeout = syncTimeout
    syncJob = WebSyncJob(clock: clock)
  }

  func perform(_ call: APICall) -> HTTPResponse {
    do {
      return try run(call)
    } catch let error as MemoPeerError {
      logger.error(error, while: "answering the web page")
      return .error(error)
    } catch {
      logger.error(error, while: "answering the web page")
      return .error(500, code: "internal", "memo-peer failed unexpectedly; nothing was changed")
    }
  }

  private func run(_ call: APICall) throws -> HTTPResponse {
    switch call {
    case .status:
      return .json(200, encoding: try NetworkCommands.StatusJSON(paths: paths))
    case .listMemos:
      let store = try open()
      return .json(
        200,
        encoding: OutputFormat.MemoListJSON(
          memos: try store.listing().map { .init($0, names: names(store)) }, locked: !store.lockState.canReadContent))
    case .search(let query):
      return .json(200, encoding: try search(query))
    case .createMemo(let draft):
      let store = try unlockedStore()
      return .json(
        201,
        encoding: OutputFormat.MemoJSON(memo: .init(try store.create(draft, now: clock()).summary, names: names(store)))
      )
    case .showMemo(let text):
      let store = try open()
      let memo = try store.memo(try store.resolve(text))
      return .json(
        200,
        encoding: OutputFormat.MemoJSON(
          memo: .init(memo.summary, body: memo.body, conflictOf: memo.conflictOf, names: names(store))))
    case .editMemo(let text, let edit):
      return try self.edit(text, edit)
    case .deleteMemo(let text):
      let store = try unlockedStore()
      let id = try store.resolve(text)
      try store.checkChangeable(id)
      try store.delete(id, now: clock())
      return .json(200, encoding: MemoCommands.DeletedJSON(deleted: id.rawValue))
    case .inbox:
      let store = try unlockedStore()
      return .json(
        200, encoding: DeliveryCommands.InboxJSON(try store.inboxEntries(), names: try PeerNames(paths: paths)))
    case .acceptInbox(let id):
      let store = try unlockedStore()
      let memo = try store.acceptInboxEntry(id)
      return .json(200, encoding: OutputFormat.MemoJSON(memo: .init(memo.summary, names: names(store))))
    case .dropInbox(let id):
      let entry = try unlockedStore().dropInboxEntry(id)
      return .json(200, encoding: DeliveryCommands.DroppedJSON(dropped: entry.id))
    case .conflicts:
      let store = try unlockedStore()
      return .json(
        200,
        encoding: SyncCommands.ConflictsJSON(
          conflicts: try store.conflicts().map(SyncCommands.ConflictsJSON.Entry.init)))
    case .resolveConflict(let text, let keep):
      guard let choice = SyncCommands.conflictChoice(keep) else {
        throw MemoPeerError(.invalidInput, "\"keep\" must be A, B or both", hint: "docs/WEB.md")
      }
      let store = try unlockedStore()
      let resolution = try store.resolveConflict(try store.resolve(text), keep: choice, now: clock())
      return .json(200, encoding: SyncCommands.ResolvedJSON(resolution))
    case .peers:
      let rows = try SyncCommands.peerRows(paths: paths, store: try open())
      return .json(200, encoding: SyncCommands.PeersJSON(peers: rows.map(\.json)))
    case .consent:
      let gate = try ConsentGate(paths: paths)
      return .json(200, encoding: NetworkCommands.ConsentJSON(gate: gate, records: try gate.log.records()))
    case .recordConsent(let answer):
      return try recordConsent(answer)
    case .syncState:
      return .json(200, encoding: syncJob.snapshot)
    case .startSync(let peer, let timeout):
      return try startSync(peer: peer, timeout: timeout ?? syncTimeout)
    case .unlock(let passphrase):
      let keys = DeviceKeys(paths: paths)
      let status = try keys.status()
      guard status.protection.isProtected else {
        throw MemoPeerError(.notProtected, "this node's key has no passphrase (protection none): it is always unlocked")
      }
      if status.lockState == .unlocked {
        return .json(200, encoding: ProtectionCommands.ProtectionJSON(status, changed: false))
      }
      return .json(
        200, encoding: ProtectionCommands.ProtectionJSON(try keys.unlock(passphrase: passphrase), changed: true))
    case .lock:
      let keys = DeviceKeys(paths: paths)
      try keys.lock()
      return .json(200, encoding: ProtectionCommands.ProtectionJSON(try keys.status(), changed: true))
    }
  }

  // MARK: - Calls

  /// `search --json` for text (with a tag, only memos that have it); `list --tag --json`
  /// for a tag alone.
  /// Notebook names (and device names), as the commands' `--json` gives them.
  private func names(_ store: MemoStore) -> OutputFormat.Names { OutputFormat.Names(store: store, paths: paths) }

  private func search(_ query: MemoQuery) throws -> OutputFormat.MemoListJSON {
    let store = try unlockedStore()
    let tag = try query.tag.map { tag -> String in
      guard let normalized = try MemoRules.normalizeTags([tag]).first else {
        throw MemoPeerError(.invalidInput, "the tag is empty")
      }
      return normalized
    }
    guard let text = query.text?.trimmingWhitespace, !text.isEmpty else {
      return OutputFormat.MemoListJSON(
        memos: try store.listing(tag: tag).map { .init($0, names: names(store)) }, locked: false)
    }
    let found = try store.search(text).filter { memo in tag.map { memo.tags.contains($0) } ?? true }
    return OutputFormat.MemoListJSON(memos: found.map { .init($0, names: names(store)) })
  }

  private func edit(_ text: String, _ edit: MemoEdit) throws -> HTTPResponse {
    let store = try open()
    let id = try store.resolve(text)
    if let pinned = edit.pinned {
      try store.setPinned(id, pinned)
      if edit.change.isEmpty {
        guard store.lockState.canReadContent else {
          return .json(200, encoding: PinnedJSON(memo: id.rawValue, pinned: pinned))
        }
        return .json(200, encoding: OutputFormat.MemoJSON(memo: .init(try store.memo(id).summary, names: names(store))))
      }
    }
    guard store.lockState.canReadContent else { throw MemoStore.lockedError }
    try store.checkChangeable(id)
    let memo = try MemoCommands.save(edit.change, to: id, in: store, now: clock(), expectedRevision: edit.revision)
    return .json(200, encoding: OutputFormat.MemoJSON(memo: .init(memo.summary, names: names(store))))
  }

  /// Records a person's click on the page's consent prompt, with the same usage text as the
  /// terminal's prompt. Revoking what is not granted records nothing, as `consent revoke`.
  private func recordConsent(_ answer: ConsentAnswer) throws -> HTTPResponse {
    let gate = try ConsentGate(paths: paths)
    if answer.decision == .revoked, try !gate.state(answer.scope).isGranted {
      return .json(200, encoding: NetworkCommands.ConsentJSON(gate: gate, records: try gate.log.records()))
    }
    let record = try gate.record(answer.decision, scope: answer.scope, method: .web, note: nil, now: clock())
    logger.info("consent recorded from the web page: \(answer.scope.rawValue, privacy: .public)")
    return .json(200, encoding: record)
  }

  /// Starts a sync as `sync` would (with the mass-delete guard), after the same checks:
  /// unlocked, someone to sync with, local-network consent on record. The page asks for the
  /// consent itself, on a click, before it calls this.
  private func startSync(peer reference: String?, timeout: Double) throws -> HTTPResponse {
    guard try DeviceKeys(paths: paths).status().lockState.canReadContent else { throw MemoStore.lockedError }
    let gate = try ConsentGate(paths: paths)
    switch try gate.verdict(for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType)) {
    case .allowed: break
    case .refused(let error): throw error
    case .needsConsent(let scope):
      let error = ConsentGate.consentRequired(scope, manifest: gate.manifest)
      throw MemoPeerError(
        error.code, error.message,
        hint: "answer the question the page shows when you press Sync, or run `memo-peer consent grant`")
    }
    let trust = TrustStore(paths: paths)
    let list = try trust.load()
    let peers = try reference.map { [try list.find($0)] } ?? list.peers
    guard !peers.isEmpty else { throw SyncCommands.nobodyToSync }
    let (paths, logger) = (paths, logger.scoped("sync"))
    let snapshot = syncJob.start { note, progress in
      // `memo-peer lock` during the sync closes its connections, as for `memo-peer sync`.
      let watch = LockWatch(keys: DeviceKeys(paths: paths))
      defer { watch.stop() }
      return SyncCommands.SyncJSON(
        try await SyncCommands.syncAll(
          peers, paths: paths, gate: gate, trust: trust, sessions: watch.sessions, timeout: timeout, guarded: true,
          logger: logger, note: note, progress: progress))
    }
    return .json(202, encoding: snapshot)
  }

  // MARK: - Store

  /// The store, opened as a person's use.
  private func open() throws -> MemoStore { try MemoStore.open(paths: paths, logger: logger.scoped("store")) }

  private func unlockedStore() throws -> MemoStore {
    let store = try open()
    guard store.lockState.canReadContent else { throw MemoStore.lockedError }
    return store
  }

  /// A pin changed while the node is locked (the pin is not content).
  struct PinnedJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let memo: String
    let pinned: Bool
  }
}
