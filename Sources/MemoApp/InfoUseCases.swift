import MemoCore
import MemoNode
import MemoPresentation
import MemoStore
import MemoSystem
import MemoVault

/// Reads that never count as a person's use and never create a node: the widget's line and
/// the values shell completion offers.
public struct InfoUseCases {
  let app: App

  /// What the widget shows: the pinned (else latest) memo, trusted devices online, outbox
  /// entries waiting, memos in the inbox, relayed revisions — redacted later by the widget's
  /// rules. Without a store there is nothing but the lock state.
  public func widget() throws -> WidgetInput {
    let paths = app.paths
    let presence = RecentTrustedContacts(paths: paths, now: app.now)
    let settings = try NodeConfig.load(paths: paths).widget
    let lockState = try app.keys.status().lockState
    var memo: WidgetMemo?
    var outbox = 0
    var inbox = 0
    var relayed = 0
    if let store = try backgroundStore() {
      outbox = try store.outboxWaitingCount()
      inbox = try store.alertSnapshot().inbox.count
      relayed = try store.relayedRevisionCount()
      if let listed = try store.widgetMemo() {
        memo = WidgetMemo(
          id: listed.id, isPrivate: listed.isPrivate, isPinned: listed.isPinned, title: listed.title,
          tags: listed.tags, updated: listed.updated)
      }
    }
    var input = WidgetInput(
      lockState: lockState, memo: memo, peersOnline: presence.onlineCount(), outboxWaiting: outbox,
      inboxWaiting: inbox, relayedRevisions: relayed, peersLive: presence.liveCount(), settings: settings)
    if let serve = ServeStatus.read(paths), serve.isRunning, serve.state == .waiting {
      input.daemonWaitingFor = serve.waitingFor ?? "something"
    }
    return input
  }

  /// Ids of live memos starting with `prefix` (none for a prefix that cannot be one).
  public func memoIDs(prefix: String, limit: Int) throws -> [MemoID] {
    guard (try? IDPrefix(prefix)) != nil || prefix.isEmpty else { return [] }
    return try backgroundStore()?.liveMemoIDs(prefix: prefix, limit: limit) ?? []
  }

  /// Names of trusted devices.
  public func peerNames() throws -> [String] { try TrustStore(paths: app.paths).load().peers.map(\.name) }

  /// Names of notebooks (relayed ones, which have none, are left out).
  public func notebookNames() throws -> [String] { try backgroundStore()?.notebooks().compactMap(\.name) ?? [] }

  /// The store opened for reading only, not as a person's use; nil when there is none.
  private func backgroundStore() throws -> MemoStore? {
    guard PrivateFiles.exists(app.paths.databasePath) else { return nil }
    return try MemoStore.open(paths: app.paths, logger: app.logger.scoped("store"), keys: app.keys, use: .background)
  }
}

/// `doctor`: why discovery finds nothing, and how to fix it.
public struct DoctorUseCases {
  let app: App

  /// The checks of consent, D-Bus, avahi-daemon, the interfaces, the daemon and (with
  /// consent) whether this node sees itself. `environment` is where the buses are found.
  public func run(environment: [String: String]) throws -> [DoctorCheck] {
    let paths = app.paths
    return try runBlocking { await Doctor.run(paths: paths, environment: environment) }
  }
}
