import MemoCore
import MemoStore
import MemoSystem

/// Live push: a change stored here goes to every trusted device as soon as it commits,
/// whoever made it (the CLI, the web page, a delivery, another sync), while the
/// background-sync scope is granted. The store's folder is watched with inotify
/// (`FolderChangeWatch`): a save by another process wakes the daemon's next poll without
/// opening the store, and only then is the change feed read to tell a new revision from a
/// write that was only progress. One sync per peer at a time, each on its own, so a peer
/// that is away never holds up the others (`LivePush` keeps the rules).
extension ServeEngine {
  /// How long one push waits for a peer to appear and answer.
  static let livePushTimeout = 5.0

  func pushLive() {
    guard let trusted, let connector else { return }
    let now = clock()
    // Without a watch (no store folder yet, or inotify refused), the feed is read every 5 s,
    // and the watch tried again then.
    if storeWatch == nil && now >= livePushFallbackCheck { watchStore() }
    let woken = storeWatch?.takeChanges() ?? (now >= livePushFallbackCheck)
    if woken || livePush.feedSeen == nil || livePushRecheck {
      livePushFallbackCheck = now + 5000
      do {
        let position = try store.open().feedEnd()
        livePushRecheck = false
        livePush.feed(at: position, peers: Array(trusted.all))
      } catch {
        // Locked or busy: read it again at the next poll rather than lose the change.
        livePushRecheck = true
        return
      }
    }
    // The consent is read once a second, so that `status` says what live sync does, and
    // again right before any push: a revoke holds from the next session on.
    let running = Set(livePushes.keys)
    let due = livePush.hasDue(now: now, running: running)
    if (due && livePushAllowed) || now >= livePushConsentCheck {
      livePushConsentCheck = now + 1000
      livePushAllowed = (try? gate.state(.backgroundSync))?.isGranted == true
      showLiveSync(livePushAllowed ? "on" : "waiting (background-sync consent)")
    }
    guard due else { return }
    guard livePushAllowed else {
      if !livePushConsentNoted {
        livePushConsentNoted = true
        report("live sync waits for the background-sync consent (`memo-peer consent grant --scope background-sync`)")
      }
      return
    }
    livePushConsentNoted = false
    livePush.keep(only: trusted.all)
    guard let loaded = try? trusted.store.load().peers else { return }
    let peers = Dictionary(loaded.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
    let runner = PeerSync(store: store, dialer: connector, clock: clock)
    for device in livePush.takeDue(now: now, running: running) {
      guard let peer = peers[device] else { continue }
      livePushes[device] = Task.detached { [self] in
        let result = await runner.sync(with: peer, timeout: Self.livePushTimeout, deleteGuard: MassDeleteGuard())
        await self.finishLivePush(result)
      }
    }
  }

  private func watchStore() {
    do {
      storeWatch = try FolderChangeWatch(folder: paths.dataDirectory)
      // What was written before the watch began is read from the feed once.
      livePushRecheck = true
    } catch {
      guard !storeWatchNoted else { return }
      storeWatchNoted = true
      logger.info(
        "live sync cannot watch the store's folder (\(error.description, privacy: .public)): it reads the store every 5 s"
      )
    }
  }

  private func finishLivePush(_ result: PeerSync.PeerResult) {
    let device = result.peer.deviceID
    livePushes[device] = nil
    livePush.finished(device, succeeded: result.report != nil, now: clock(), random: Double.random(in: 0..<1))
    if result.report != nil {
      logger.debug("live sync session with \(device.short, privacy: .public) ended")
      if result.movedAnything { self.report("live sync: " + result.summary) }
    } else {
      logger.info("live sync with \(device.short, privacy: .public) failed; tried again after a pause")
    }
  }

  /// The node locked: every push stops, and after the unlock every peer is owed again.
  func stopLivePushes() {
    for task in livePushes.values { task.cancel() }
    livePushes = [:]
    livePush.reset()
  }
}
