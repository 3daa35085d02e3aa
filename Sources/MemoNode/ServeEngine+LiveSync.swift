import MemoCore
import MemoSystem

/// Live sync: `serve` keeps a link open with every trusted device it can reach
/// (`LiveLink`, at most 16), and a change stored here goes to each of them as soon as it
/// commits, whoever made it (the CLI, the web page, a delivery, another sync), while the
/// background-sync scope is granted. The daemon sleeps on an inotify watch of the store's
/// folder (`FolderChangeWatch`): a save by another process wakes it without opening the
/// store, and only then are the store's marks read (`SyncMarks`: the change feed, and what
/// this device may read) to tell a new revision or an accepted invitation, a share, an
/// unshare or a new key from a write that was only progress (`LiveChange`). `LiveLinkPlan`
/// keeps the rules: who is dialled when, and the pauses.
extension ServeEngine {
  /// How long one dial waits for a peer to appear and answer.
  static let liveDialTimeout = 5.0

  /// Live sync's part of a step: `granted` is the background-sync consent, as read at
  /// the step's start (`ServeFacts`), so a revoke closes every link at the next wake.
  func syncLive(granted: Bool) {
    guard let trusted, let connector, let local = identity?.deviceID else { return }
    let now = clock()
    let consent = live.consent(granted: granted)
    showLiveSync(consent.shown)
    guard consent.allowed else { return waitForLiveSyncConsent(consent) }
    let change: LiveChange
    do {
      let reader = try feed.reader ?? store.open()
      feed.reader = reader
      change = live.plan.look(at: try reader.syncMarks())
    } catch {
      // Locked or busy: the next step reads it again rather than lose the change.
      feed.reader = nil
      return
    }
    if change.owesSync {
      // Checked again before any change is pushed (a stat; the log is read only if it
      // changed): a revoke made while this step waited (on the mDNS daemon) is honoured.
      let again = live.consent(granted: factsReader.consent().backgroundSync)
      guard again.allowed else {
        showLiveSync(again.shown)
        return waitForLiveSyncConsent(again)
      }
      if change == .catchUp, !liveLinks.isEmpty {
        logger.info("what this device may read changed (a notebook accepted, shared or rekeyed): every live link syncs")
      }
      for link in liveLinks.values { link.push() }
    }
    for device in live.plan.keep(only: trusted.all) { liveLinks.removeValue(forKey: device)?.close() }
    checkLinksAfterANetworkChange(now: now)
    let due = live.plan.toDial(trusted: trusted.all, now: now)
    guard !due.isEmpty else { return }
    guard let loaded = try? trusted.store.load().peers else { return }
    let peers = Dictionary(loaded.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
    let runner = PeerSync(
      store: store, dialer: connector, stillTrusted: PeerTrustCheck(following: trusted), clock: clock)
    for device in due {
      guard let peer = peers[device] else {
        live.plan.ended(device, synced: false, now: now, random: Double.random(in: 0..<1))
        continue
      }
      let link = LiveLink(peer: peer, local: local, activity: activity)
      liveLinks[device] = link
      Task.detached { [self] in
        let ready: PeerLink
        do {
          ready = try await connector.connect(to: peer, timeout: Self.liveDialTimeout)
        } catch {
          await self.liveLinkEnded(link, wasUp: false, .failed(PeerSync.memoPeerError(error)))
          return
        }
        await self.liveLinkUp(link, dialledAt: ready.dialledAt)
        let ending =
          (try? await BlockingIO.run("mp.live") {
            link.drive(ready.channel, runner: runner) { result in Task { await self.liveSynced(result) } }
          }) ?? .failed(MemoPeerError(.connection, "no thread for the link"))
        await self.liveLinkEnded(link, wasUp: true, ending)
      }
    }
  }

  /// Without the background-sync consent: no link stays open, and the daemon says once why.
  private func waitForLiveSyncConsent(_ consent: LiveSyncState.Consent) {
    if !liveLinks.isEmpty { stopLiveLinks() }
    guard consent.note else { return }
    report("live sync waits for the background-sync consent (`memo-peer consent grant --scope background-sync`)")
  }

  private func liveLinkUp(_ link: LiveLink, dialledAt: String?) {
    guard liveLinks[link.peer.deviceID] === link else { return link.close() }
    live.plan.linked(link.peer.deviceID)
    live.dialledAt[link.peer.deviceID] = dialledAt
    logger.info("live link with \(link.peer.deviceID.short, privacy: .public) up")
    showLivePeers()
  }

  private func liveSynced(_ result: PeerSync.PeerResult) {
    logger.debug("live sync session with \(result.peer.deviceID.short, privacy: .public) ended")
    if result.movedAnything { report("live sync: " + result.summary) }
  }

  private func liveLinkEnded(_ link: LiveLink, wasUp: Bool, _ ending: LiveLink.Ending) {
    let device = link.peer.deviceID
    // A link closed on purpose (a lock, a revoke) was forgotten when it was closed.
    guard liveLinks[device] === link else { return }
    liveLinks[device] = nil
    live.dialledAt[device] = nil
    live.plan.ended(device, synced: link.hasSynced, now: clock(), random: Double.random(in: 0..<1))
    wake()
    if wasUp, case .failed(let error) = ending {
      logger.info(
        "live link with \(device.short, privacy: .public) ended (\(error.message, privacy: .public)); dialled again after a pause"
      )
    }
    showLivePeers()
  }

  /// An interface or address of this machine changed (netlink, `FolderChangeWatch`): once
  /// the burst settles, the links are checked and the devices not linked dialled, not
  /// after their pauses, so a laptop back on the network is in sync within a dial.
  func networkChanged() { live.plan.networkEvent(now: clock()) }

  /// Once a burst of network changes has settled (`LiveLinkPlan.networkEvent`): every
  /// live link pings now (one over an address that went away dies without a word), and
  /// the devices not linked are dialled at this step.
  private func checkLinksAfterANetworkChange(now: Timestamp) {
    guard live.plan.networkCheckDue(now: now) else { return }
    guard lookWhereWeAre() else {
      logger.info("the network changed here: checking every live link, dialling the devices not linked now")
      for link in liveLinks.values { link.check() }
      return
    }
    // A link over an address that went away is dead without a word; one that lives would
    // not tell its peer the new addresses (hellos do): every link starts again now.
    logger.info("this device's addresses changed: every live link starts again, saying where it listens now")
    stopLiveLinks()
  }

  /// Reads where this machine is now into `place`, and has the listener's hellos say it;
  /// whether it changed.
  @discardableResult
  func lookWhereWeAre() -> Bool {
    var now = place
    now.listenPort = served.server?.port
    now.listenAddresses = NetworkInterfaces.listenAddresses(on: setup.interfaces.map(\.name))
    now.network = factsReader.gate.networks.current()?.id
    guard now != place else { return false }
    place = now
    if let identity { held.served?.replace(with: identity) }
    return true
  }

  /// Devices that connected to us are reachable: dialled back without waiting for a pause.
  /// One whose link to us seems up dialled us afresh, so its end of our link may be gone:
  /// that link pings now, and ends at once if nothing answers.
  func heardFrom(_ devices: Set<DeviceID>) {
    for device in devices {
      live.plan.heardFrom(device)
      if live.plan.up.contains(device) { liveLinks[device]?.check() }
    }
  }

  /// What `status` shows of the links that are up.
  func showLivePeers() {
    let up = live.plan.up
    let dialled = live.dialledAt.filter { up.contains($0.key) }
    showLivePeers(ServeStatus.listed(up), dialledAt: dialled.isEmpty ? nil : dialled)
  }

  /// The node locked, a consent was revoked, the daemon stops: every link says goodbye and
  /// closes, and afterwards every device is dialled again (its first sync sends what it
  /// missed meanwhile).
  func stopLiveLinks() {
    feed.reader = nil
    for link in liveLinks.values { link.close() }
    liveLinks = [:]
    live.dialledAt = [:]
    live.plan.reset()
    showLivePeers()
  }
}
