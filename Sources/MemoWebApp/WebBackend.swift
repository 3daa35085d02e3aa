import MemoApp
import MemoCore
import MemoSystem
import MemoVault
import MemoWeb

/// The page's API on this node (docs/WEB.md): an adapter that answers each `APICall` with
/// the use case the matching command calls (MemoApp), in the same `--json` shape. Each call
/// is a use of the node of its own (`App`), so the store is opened afresh and a lock or
/// unlock anywhere shows at once.
///
/// What the page adds is its own policy: everything but the list, status, peers, consent and
/// this network's decision needs the node unlocked; a sync needs a consent on record (the
/// page asks on a click); a sync runs in the background (`WebSyncJob`). Only what a person
/// asks for opens the store as their use (restarting the idle timeout of protection `complete`); the page's polling
/// (`status`, `sync`) does not.
public final class WebBackend: WebAPI {
  let paths: NodePaths
  let keys: DeviceKeys?
  let logger: Logger
  let syncJob: WebSyncJob
  let clock: @Sendable () -> Timestamp
  /// How long a sync waits for each device unless the call says (as `sync`'s default).
  let syncTimeout: Double

  /// `keys` nil: the node's own, with the kernel keyring (tests give a fake keyring).
  public init(
    paths: NodePaths, keys: DeviceKeys? = nil, logger: Logger, clock: @escaping @Sendable () -> Timestamp,
    syncTimeout: Double = 10
  ) {
    self.paths = paths
    self.keys = keys
    self.logger = logger
    self.clock = clock
    self.syncTimeout = syncTimeout
    syncJob = WebSyncJob(clock: clock)
  }

  public func perform(_ call: APICall) -> HTTPResponse {
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

  public func changeMark() -> String? {
    App(paths: paths, keys: keys, logger: logger, clock: clock).status.changeMark()
  }

  private func run(_ call: APICall) throws -> HTTPResponse {
    // A use of the node of its own per call: the store is opened afresh each time.
    let app = App(paths: paths, keys: keys, logger: logger, clock: clock)
    switch call {
    case .status:
      return .json(200, encoding: StatusJSON(try app.status.current()))
    case .listMemos:
      let list = try app.memos.list(includingRelayed: false)
      return .json(200, encoding: MemoListJSON(list, names: try app.names()))
    case .search(let query):
      try app.requireUnlocked()
      switch try app.memos.find(text: query.text, tag: query.tag) {
      case .listed(let list): return .json(200, encoding: MemoListJSON(list, names: try app.names()))
      case .found(let found): return .json(200, encoding: MemoListJSON(found, names: try app.names()))
      }
    case .createMemo(let draft):
      let memo = try app.memos.create { draft }
      return .json(201, encoding: MemoJSON(memo: .init(memo.summary, names: try app.names())))
    case .showMemo(let text):
      let memo = try app.memos.show(text, explainingSealed: false)
      return .json(
        200,
        encoding: MemoJSON(
          memo: .init(memo.summary, body: memo.body, conflictOf: memo.conflictOf, names: try app.names())))
    case .editMemo(let text, let edit):
      switch try app.memos.edit(text, pin: edit.pinned, change: edit.change, expectedRevision: edit.revision) {
      case .pinned(let id, let pinned, nil): return .json(200, encoding: PinnedJSON(memo: id, pinned: pinned))
      case .pinned(_, _, let memo?), .saved(let memo):
        return .json(200, encoding: MemoJSON(memo: .init(memo.summary, names: try app.names())))
      }
    case .deleteMemo(let text):
      try app.requireUnlocked()
      return .json(200, encoding: DeletedMemoJSON(deleted: try app.memos.delete(text)))
    case .inbox:
      try app.requireUnlocked()
      return .json(200, encoding: InboxJSON(try app.delivery.inbox(), names: try app.peerNames()))
    case .acceptInbox(let id):
      try app.requireUnlocked()
      let memo = try app.delivery.accept(id)
      return .json(200, encoding: MemoJSON(memo: .init(memo.summary, names: try app.names())))
    case .dropInbox(let id):
      try app.requireUnlocked()
      return .json(200, encoding: DroppedJSON(try app.delivery.drop(id)))
    case .conflicts:
      try app.requireUnlocked()
      return .json(200, encoding: ConflictsJSON(try app.conflicts.list(), names: try app.names()))
    case .resolveConflict(let text, let keep):
      guard let choice = ConflictUseCases.choice(keep) else {
        throw MemoPeerError(.invalidInput, "\"keep\" must be A, B or both", hint: "docs/WEB.md")
      }
      try app.requireUnlocked()
      return .json(200, encoding: ResolvedJSON(try app.conflicts.resolve(text, keep: choice)))
    case .memoHistory(let text):
      return .json(200, encoding: HistoryJSON(try app.history.history(text), names: try app.names()))
    case .diffMemo(let text, let from, let to):
      return .json(200, encoding: DiffJSON(try app.history.diff(text, from: from, to: to), names: try app.names()))
    case .diffCopy(let text, let copy):
      return .json(200, encoding: DiffJSON(try app.history.diff(text, copy: copy), names: try app.names()))
    case .restoreMemo(let text, let revision):
      let memo = try app.history.restore(text, revision: revision)
      return .json(200, encoding: MemoJSON(memo: .init(memo.summary, names: try app.names())))
    case .trash:
      return .json(200, encoding: TrashJSON(try app.history.trash(), names: try app.names()))
    case .restoreFromTrash(let text):
      let memo = try app.history.restoreFromTrash(text)
      return .json(200, encoding: MemoJSON(memo: .init(memo.summary, names: try app.names())))
    case .peers:
      return .json(200, encoding: PeersJSON(try app.sync.peers()))
    case .addPeerAddress(let peer, let address):
      // As `trust address PEER add`: checked (a name must resolve here and now) before it is
      // stored; the answer is `trust address PEER list --json`.
      try app.requireUnlocked()
      return .json(200, encoding: TrustAddressesJSON(try app.trust.addAddress(address, for: peer)))
    case .removePeerAddress(let peer, let address):
      try app.requireUnlocked()
      return .json(200, encoding: TrustAddressesJSON(try app.trust.removeAddress(address, for: peer)))
    case .invitations:
      return .json(200, encoding: InvitationListJSON(try app.notebooks.invitations(), names: try app.names()))
    case .acceptInvitation(let id):
      let accepted = try app.notebooks.accept(id)
      return .json(
        200, encoding: NotebookOnlyJSON(try app.notebooks.summary(of: accepted), names: try app.names()))
    case .declineInvitation(let id):
      return .json(200, encoding: DeclinedJSON(try app.notebooks.decline(id), names: try app.names()))
    case .consent:
      return .json(200, encoding: ConsentJSON(try app.consent.overview(), network: try app.networks.current()))
    case .recordConsent(let answer):
      // A person's click on the page's consent prompt, with the same usage text as the
      // terminal's prompt. Revoking what is not granted records nothing, as `consent revoke`.
      switch try app.consent.decide(answer.decision, scope: answer.scope, method: .web) {
      case .notGranted:
        return .json(200, encoding: ConsentJSON(try app.consent.overview(), network: try app.networks.current()))
      case .recorded(let record):
        logger.info("consent recorded from the web page: \(answer.scope.rawValue, privacy: .public)")
        return .json(200, encoding: record)
      }
    case .decideNetwork(let decision):
      // A person's click on the page's question about this network (the same question
      // `network allow` records), recorded with method `web`.
      let record = try app.networks.decide(decision, network: nil, method: .web, note: nil)
      logger.info("network \(decision == .granted ? "allowed" : "denied", privacy: .public) from the web page")
      return .json(200, encoding: record)
    case .syncState:
      return .json(200, encoding: syncJob.snapshot)
    case .startSync(let peer, let timeout):
      // As `sync` (with the mass-delete guard), after the same checks; the page asks for the
      // consent itself, on a click, before it calls this.
      let sync = try app.sync.prepare(
        peer: peer, timeout: timeout ?? syncTimeout,
        consent: .required(
          hint: "answer the question the page shows when you press Sync, or run `memo-peer consent grant`"))
      return .json(
        202,
        encoding: syncJob.start { note, progress in
          SyncJSON(try await sync.run(note: note, progress: progress).results, wording: PageRemedyText.words)
        })
    case .unlock(let passphrase):
      // A key without a passphrase: its remedy (protect it) is the command line's, and the
      // page's wording leaves it out.
      return .json(200, encoding: ProtectionJSON(try app.protection.unlock { passphrase }))
    case .lock:
      return .json(200, encoding: ProtectionJSON(try app.protection.lock()))
    }
  }
}
