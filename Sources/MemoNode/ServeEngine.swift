import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTransport
import MemoVault

#if canImport(Glibc)
  import Glibc
#endif

/// `memo-peer serve`: advertises the node, only while local-network consent is on record
/// and the node is not locked.
///
/// On a node with a passphrase the identity and discovery keys are sealed under the device
/// key, so while it is locked the daemon cannot prove who it is or derive its advertisement:
/// it waits (`waiting (locked …)`), advertising nothing and listening nowhere, and goes on by
/// itself once `memo-peer unlock` runs. When the node is locked again (`lock`, the idle
/// timeout of `complete`), it drops the keys it held, withdraws the advertisement and closes
/// every live session — served or started by it — at once (`lock` wakes it) or within a
/// second (the idle timeout).
///
/// It never browses and never prompts, and it opens its listener only while allowed:
/// without consent the node neither sends nor accepts anything on the network. Only
/// trusted devices get past the handshake; removing one from the trust store closes its
/// live connections at once. Between steps it sleeps on an inotify watch of the node's
/// folders (`FolderChangeWatch`), waking at most once a second when nothing happens: a
/// grant starts the advertisement and a revoke withdraws it at once, without a restart, and
/// an idle daemon costs next to nothing. The advertisement rotates with the period (new
/// pseudonym, new tag). A missing mDNS daemon is a waiting state, retried.
///
/// The actor only decides; nothing it runs waits on the network. Incoming channels are
/// served on the listener's threads, outgoing deliveries and scheduled syncs in detached
/// tasks whose network waits run on threads of their own (`BlockingIO`), and withdrawing an
/// advertisement is awaited, not waited for. Everything the daemon opens is opened for the
/// daemon (`KeyUse.background`): answering peers never restarts a `complete` node's idle
/// timeout.
public actor ServeEngine {
  /// What the engine works with, injected: the clock, the device keys (the lock state it
  /// follows, the store and trust store it opens), the channels (listener and dialler), and
  /// the pause before a delivery's receipt.
  public struct Collaborators: Sendable {
    public var clock: @Sendable () -> Timestamp
    public var keys: DeviceKeys
    /// nil: TLS under the node's consent gate.
    public var channels: (any ChannelFactory)?
    /// Seconds between storing a delivery and sending its receipt: 0, except for the lab
    /// test that kills daemons where receipts get lost (it runs a test-only build).
    public var receiptDelay: Double
    /// The node's lock state; nil: read from `keys` (the key file and the kernel keyring).
    public var lockState: (@Sendable () -> LockState?)?
    /// nil: DNS-SD under the node's consent gate.
    public var advertiser: (any ServiceAdvertiser)?

    public init(
      clock: @escaping @Sendable () -> Timestamp, keys: DeviceKeys, channels: (any ChannelFactory)? = nil,
      receiptDelay: Double = 0, lockState: (@Sendable () -> LockState?)? = nil,
      advertiser: (any ServiceAdvertiser)? = nil
    ) {
      self.clock = clock
      self.keys = keys
      self.channels = channels
      self.receiptDelay = receiptDelay
      self.lockState = lockState
      self.advertiser = advertiser
    }
  }

  let paths: NodePaths
  let gate: ConsentGate
  /// Loads the identity (and discovery key); fails with `locked` while the node is locked.
  let loadIdentity: @Sendable () throws -> NodeIdentity
  /// Held only while unlocked (or unprotected), dropped when the node locks.
  private(set) var identity: NodeIdentity?
  /// The discovery key file as `identity` was loaded from it (`followDiscoveryKey`), and the
  /// identity the listener's hellos give.
  private var discoveryFingerprint: String?
  private var servedIdentity: CurrentIdentity?
  private(set) var trusted: TrustedDevices?
  /// The connections this daemon's deliveries, scheduled syncs and live links hold, closed
  /// on lock.
  let sessions = LiveSessions()
  /// Trusted devices that completed a handshake, for `status` and the widget.
  let contacts = TrustedContacts()
  /// When each device was last heard from, on any channel, and whose links to us are open:
  /// the live links' keepalives.
  let activity = PeerActivity()
  let channels: any ChannelFactory
  let advertiser: any ServiceAdvertiser
  /// The daemon's store: never a person's use.
  let store: StoreAccess
  /// The device keys: the store and the trust store are opened with them.
  let keys: DeviceKeys
  /// Whether the node is unlocked now; nil when that cannot be told. Asked every poll:
  /// `.locked` makes the daemon drop its keys and everything on the network, and wait.
  let readLockState: @Sendable () -> LockState?
  let receiptDelay: Double
  /// The TCP port asked for (0: any free port).
  let requestedPort: UInt16
  /// Interfaces to advertise on; empty means all.
  let interfaces: [NetworkInterface]
  let logger: Logger
  /// Human-readable state changes (the CLI prints them on stderr).
  let report: @Sendable (String) -> Void
  let clock: @Sendable () -> Timestamp
  /// Told about every state change (systemd's READY, STATUS, RELOADING, STOPPING, WATCHDOG).
  let notifier: any ServiceNotifier
  /// Set by SIGHUP (`systemctl reload`): re-read the trust store now.
  let reloadRequest: ReloadRequest?
  private var announcedReady = false
  /// The last STATUS= sent, so systemd hears each text once.
  private var lastServiceText: String?
  /// The last summary reported (the CLI prints each on stderr), for the same reason.
  private var lastSummary: String?

  private var registrations: [any StandingAdvertisement] = []
  /// The mDNS daemon dropped the advertisement while the node served (it restarted): until
  /// it is registered again, the listener stays open for the devices already connected.
  private var readvertising = false
  private var server: (any ChannelListener)?
  private var currentPlan: AdvertisementPlan?
  private var status: ServeStatus
  private var retryAfter: Timestamp = 0
  /// The outbox: one delivery round at a time, per-peer backoff, checked at most once a second.
  private var deliveryRound: Task<Void, Never>?
  private var nextOutboxCheck: Timestamp = 0
  private var nextAttempt: [DeviceID: Timestamp] = [:]
  private var failures: [DeviceID: Int] = [:]
  private var consentAllowed: Bool?
  let backoff = DeliveryBackoff()
  /// `--sync-every`: seconds between scheduled syncs with every trusted peer (nil: none).
  /// They run only while the background-sync consent scope is on record.
  let syncEvery: Double?
  private var syncRound: Task<Void, Never>?
  private var nextSync: Timestamp = 0
  private var syncConsentNoted = false
  /// What the daemon sleeps on between steps: writes in the store's, state and key folders
  /// (another process saved a memo, granted a consent, edited the trust store, locked the
  /// node) and pokes from the daemon's own tasks when they end. nil when inotify is refused:
  /// the daemon then wakes every `tick` and reads the store's feed each time.
  let wakeup: FolderChangeWatch?
  /// The store live sync reads the feed position from, kept open between reads: opening it
  /// at every wake would cost a key unwrap each time, and the last connection's close makes
  /// SQLite checkpoint (a write, which would wake the daemon again). Dropped when the node
  /// locks or live sync stops.
  var feedReader: MemoStore?
  /// When the feed is read again after a wake by the store's folder (seconds after each
  /// look): SQLite publishes a commit after the write inotify told of, once the WAL is
  /// synced to disk, which on a busy disk takes milliseconds or more.
  var feedSettleChecks: [Double] = []
  static let feedSettleDelays = [0.005, 0.02, 0.1]
  /// At most a few steps per 50 ms for a burst of folder writes (`FolderWakeThrottle`).
  var folderWakes = FolderWakeThrottle()
  /// Live sync (ServeEngine+LiveSync.swift): the links being dialled or up, and their rules.
  var liveLinks: [DeviceID: LiveLink] = [:]
  var liveLinkPlan = LiveLinkPlan()
  var livePushConsentCheck: Timestamp = 0
  var livePushConsentNoted = false
  var livePushAllowed = false
  /// How long one delivery attempt waits for the peer to appear and answer.
  static let deliveryConnectTimeout = 10.0

  /// The longest the daemon sleeps between two steps when nothing wakes it: what it cannot
  /// be woken by (the keyring's idle timeout of a `complete` node, a peer's rotation period,
  /// a backoff that ended) is seen within this.
  public static let tick = 1.0

  /// What `status` shows while the node is locked.
  public static let waitingForUnlock = "locked: `memo-peer unlock`"

  public init(
    paths: NodePaths, gate: ConsentGate, identity: @escaping @Sendable () throws -> NodeIdentity, port: UInt16,
    interfaces: [NetworkInterface], limits: ConnectionLimits = ConnectionLimits(),
    logger: Logger, report: @escaping @Sendable (String) -> Void, syncEvery: Double? = nil,
    notifier: any ServiceNotifier = SilentServiceNotifier(), reloadRequest: ReloadRequest? = nil,
    collaborators: Collaborators
  ) throws {
    self.notifier = notifier
    self.reloadRequest = reloadRequest
    self.syncEvery = syncEvery
    self.paths = paths
    self.gate = gate
    self.loadIdentity = identity
    clock = collaborators.clock
    keys = collaborators.keys
    let keys = collaborators.keys
    readLockState = collaborators.lockState ?? { try? keys.status().lockState }
    receiptDelay = collaborators.receiptDelay
    channels = collaborators.channels ?? TLSChannels(gate: gate, limits: limits, clock: collaborators.clock)
    advertiser = collaborators.advertiser ?? DNSSDAdvertiser(gate: gate)
    store = StoreAccess(paths: paths, keys: collaborators.keys, use: .background, logger: logger)
    wakeup = try? FolderChangeWatch()
    wakeup?.watchNetwork()
    self.requestedPort = port
    self.interfaces = interfaces
    self.logger = logger
    self.report = report
    status = ServeStatus(
      pid: getpid(), state: .stopped, waitingFor: nil, instance: nil, port: 0, interfaces: interfaces.map(\.name),
      updated: collaborators.clock())
  }

  /// What `status` shows of live sync and of its links up (compact device IDs): nil when
  /// the daemon neither advertises nor has a link up (a link outlives an avahi-daemon
  /// restart, so the links, not the advertisement, decide).
  func showLiveSync(_ text: String?, peers: [String]? = nil) {
    let shown = status.state == .advertising || !liveLinks.isEmpty
    let text = shown ? text : nil
    let peers = shown ? (peers ?? status.livePeers ?? []) : nil
    guard text != status.liveSync || peers != status.livePeers else { return }
    status.liveSync = text
    status.livePeers = peers
    try? publish(status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
  }

  func showLivePeers(_ peers: [String]) { showLiveSync(status.liveSync, peers: peers) }

  /// The node's lock state now; nil when it cannot be told.
  private func lockState() -> LockState? { readLockState() }

  /// Runs until `stop` is set; withdraws the advertisement before returning.
  public func run(until stop: StopFlag) async throws {
    stop.whenSet { [wakeup] in wakeup?.poke() }
    let trustWatch = watchTrustStore(until: stop)
    defer { trustWatch.cancel() }
    while !stop.isSet {
      await step()
      notifier.notify(.watchdog)
      await sleepUntilWoken()
    }
    notifier.notify(.stopping)
    deliveryRound?.cancel()
    syncRound?.cancel()
    stopLiveLinks()
    await stopServing()
    try publish(.stopped, waitingFor: nil)
  }

  /// Sleeps until one of the node's folders is written in, a task of the daemon pokes it,
  /// or `tick` passes: no busy poll. A folder made since the last sleep (the store's, at the
  /// first save) is watched from now on. Every step reads the store's feed (one small read
  /// on a kept-open connection), so a commit whose publication outlasted every look soon
  /// after its write is still seen within a tick.
  private func sleepUntilWoken() async {
    guard let wakeup else {
      try? await Task.sleep(for: .seconds(Self.tick))
      return
    }
    for folder in [paths.dataDirectory, paths.stateDirectory, paths.keyDirectory] where !wakeup.isWatching(folder) {
      // SQLite's shared memory is written by readers too (the daemon's own feed reads).
      wakeup.watch(folder, ignoring: ["-shm", ".open-lock"])
    }
    let settle = feedSettleChecks.first
    let wake =
      (try? await BlockingIO.run("mp.wait") { wakeup.wait(upTo: settle ?? Self.tick) }) ?? FolderChangeWatch.Wake()
    if !feedSettleChecks.isEmpty { feedSettleChecks.removeFirst() }
    if !wake.folders.isEmpty, !wake.poked, !wake.network {
      if let later = folderWakes.wake(at: ContinuousClock.now) {
        // What is written meanwhile is read as one wake by the next step.
        try? await Task.sleep(until: later, clock: .continuous)
      }
    }
    // inotify tells of the write before SQLite has published it (the WAL index is updated
    // after the WAL's fsync): while live sync runs, the feed is read again 5, 20 and 100 ms
    // after every write in the store's folder.
    if livePushAllowed && wake.folders.contains(paths.dataDirectory) { feedSettleChecks = Self.feedSettleDelays }
    if wake.network { networkChanged() }
  }

  /// Wakes the daemon's sleep: a task it started ended, so the next step may start another.
  nonisolated func wake() { wakeup?.poke() }

  func step() async {
    await followLockState()
    if let (seen, fresh) = contacts.takeChanges(clock: clock) {
      heardFrom(fresh)
      status.trustedContacts = seen
      if status.state != .stopped {
        try? publish(
          status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
      }
    }
    let lock = lockState()?.name
    if lock != status.store {
      status.store = lock
      // Before the first state is published, that publication carries it.
      if status.state != .stopped {
        try? publish(
          status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
      }
    }
    guard identity != nil || loadKeys() else { return }
    followTrustStore()
    await followDiscoveryKey()
    let verdict: LocalNetworkVerdict
    do {
      verdict = try gate.verdict(for: .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType))
    } catch {
      logger.error(error, while: "reading the consent log")
      await stopServing()
      try? publish(.waiting, waitingFor: "a readable consent log")
      return
    }
    outboxConsent(allowed: verdict == .allowed)
    // Without local-network consent nothing of this node stays on the network.
    if verdict != .allowed && !liveLinks.isEmpty { stopLiveLinks() }
    switch verdict {
    case .needsConsent:
      await stopServing()
      try? publish(.waiting, waitingFor: "local-network consent")
    case .refused(let error):
      await stopServing()
      let state = (try? gate.state(.localNetwork).name) ?? "denied"
      try? publish(
        .waiting, waitingFor: error.code == .policyDenied ? "local-network consent (\(state))" : error.message)
    case .allowed:
      await advertise()
      scheduleDelivery()
      scheduleSync()
      syncLive()
    }
  }

  /// While the node is locked: nothing of it on the network and no key in memory. Called
  /// first in every step, so a lock closes everything within one poll.
  private func followLockState() async {
    guard case .locked? = lockState() else { return }
    sessions.closeAll()
    guard identity != nil || server != nil || status.waitingFor != Self.waitingForUnlock else { return }
    deliveryRound?.cancel()
    syncRound?.cancel()
    stopLiveLinks()
    await stopServing()
    identity = nil
    trusted = nil
    status.trustStore = nil
    logger.info("locked: advertisement withdrawn, sessions closed, keys dropped")
    try? publish(.waiting, waitingFor: Self.waitingForUnlock)
  }

  /// Loads the identity, discovery key and trust store; false (and waiting) while the node
  /// is locked or they cannot be read.
  private func loadKeys() -> Bool {
    if case .locked? = lockState() { return false }
    let now = clock()
    guard now >= retryAfter else { return false }
    do {
      let (loaded, fingerprint) = try identityWithFingerprint()
      let devices = try TrustedDevices(store: TrustStore(paths: paths, keys: keys))
      trusted = devices
      status.trustStore = devices.loadedFingerprint
      identity = loaded
      discoveryFingerprint = fingerprint
      return true
    } catch let error as MemoPeerError where error.code == .locked {
      try? publish(.waiting, waitingFor: Self.waitingForUnlock)
    } catch {
      logger.error(error, while: "loading the identity")
      retryAfter = now + 2000
      try? publish(.waiting, waitingFor: "a readable identity and trust store (`memo-peer doctor`)")
    }
    return false
  }

  /// Starts a scheduled sync with every trusted peer when one is due, and only while the
  /// background-sync scope is granted: nobody is at the keyboard, so the person must have
  /// said yes to this in advance. Without it the daemon says so once and waits.
  private func scheduleSync() {
    guard let every = syncEvery, syncRound == nil, let connector else { return }
    let now = clock()
    guard now >= nextSync else { return }
    guard (try? gate.state(.backgroundSync))?.isGranted == true else {
      if !syncConsentNoted {
        syncConsentNoted = true
        report(
          "scheduled sync waits for the background-sync consent (`memo-peer consent grant --scope background-sync`)")
      }
      return
    }
    syncConsentNoted = false
    nextSync = now + Timestamp(every * 1000)
    guard let trusted else { return }
    let trust = trusted.store
    let runner = PeerSync(
      store: store, dialer: connector, stillTrusted: PeerTrustCheck(following: trusted), clock: clock)
    syncRound = Task.detached { [self] in
      let peers = (try? trust.load().peers) ?? []
      let results = await runner.syncAll(peers, timeout: Self.deliveryConnectTimeout, deleteGuard: MassDeleteGuard())
      await self.finishSync(results)
    }
  }

  private func finishSync(_ results: [PeerSync.PeerResult]) {
    syncRound = nil
    wake()
    // Quiet when nothing moved: a daemon syncing every minute would otherwise fill its log.
    for result in results where result.movedAnything { report("scheduled sync: " + result.summary) }
  }

  /// On a change of consent: without it every pending entry waits for it; with it again,
  /// delivery resumes at once (the backoff is forgotten).
  private func outboxConsent(allowed: Bool) {
    if consentAllowed != allowed {
      consentAllowed = allowed
      nextAttempt = [:]
      failures = [:]
      nextOutboxCheck = 0
    }
    // Without consent, entries (also those queued meanwhile) wait for it; checked once a second.
    let now = clock()
    guard !allowed, now >= nextOutboxCheck else { return }
    nextOutboxCheck = now + 1000
    guard let outbox = makeOutboxDelivery() else { return }
    do {
      for recipient in try outbox.pendingRecipients() {
        try outbox.markWaiting(recipient, WaitReason.localNetworkConsent.description)
      }
    } catch {
      logger.error(error, while: "recording the outbox's wait for consent")
    }
  }

  /// How the daemon reaches its peers (deliveries, scheduled syncs, live links): its
  /// channels, as its identity, under its trust store; every ready channel is closed when
  /// the node locks.
  var connector: (any PeerDialer)? {
    guard let identity, let trusted else { return nil }
    return channels.dialer(identity: identity, trust: trusted.store, sessions: sessions)
  }

  /// The outbox as the daemon delivers it: through its dialler, opened for the daemon.
  private func makeOutboxDelivery() -> OutboxDelivery? {
    guard let connector, let trusted else { return nil }
    return OutboxDelivery(store: store, dialer: connector, trust: trusted.store, clock: clock)
  }

  /// Starts a delivery round for the recipients whose backoff has passed.
  private func scheduleDelivery() {
    let now = clock()
    guard deliveryRound == nil, now >= nextOutboxCheck else { return }
    nextOutboxCheck = now + 1000
    guard let outbox = makeOutboxDelivery() else { return }
    let due: [DeviceID]
    do {
      due = try outbox.pendingRecipients().filter { nextAttempt[$0].map { now >= $0 } ?? true }
    } catch {
      logger.error(error, while: "reading the outbox")
      return
    }
    guard !due.isEmpty else { return }
    let logger = self.logger
    // Detached, so the actor stays free; the rounds' network waits run on threads of their own.
    deliveryRound = Task.detached { [self] in
      var rounds: [DeviceID: OutboxDelivery.Round] = [:]
      for recipient in due {
        if Task.isCancelled { break }
        do {
          rounds[recipient] = try await outbox.deliver(to: recipient, timeout: Self.deliveryConnectTimeout)
        } catch {
          logger.error(error, while: "delivering the outbox")
          rounds[recipient] = OutboxDelivery.Round(pending: 1, waitingFor: "storage")
        }
      }
      await self.finishDelivery(rounds)
    }
  }

  private func finishDelivery(_ rounds: [DeviceID: OutboxDelivery.Round]) {
    deliveryRound = nil
    wake()
    let now = clock()
    for (recipient, round) in rounds {
      if round.delivered > 0 { report("delivered \(round.delivered) outbox entr\(round.delivered == 1 ? "y" : "ies")") }
      guard round.pending > 0 else {
        failures[recipient] = nil
        nextAttempt[recipient] = nil
        continue
      }
      let count = round.delivered > 0 ? 1 : (failures[recipient] ?? 0) + 1
      failures[recipient] = count
      let pause = backoff.delay(afterFailures: count, random: Double.random(in: 0..<1))
      nextAttempt[recipient] = now + Timestamp(pause * 1000)
      logger.info(
        "outbox for \(recipient.short, privacy: .public) waits (\(round.waitingFor ?? "?", privacy: .public)); next try in \(Int(pause), privacy: .public) s"
      )
    }
  }

  private func advertise() async {
    let now = clock()
    guard now >= retryAfter, let identity else { return }
    do {
      let plan = try identity.advertisement.plan(at: now)
      let lost = registrations.contains { $0.isLost }
      if plan == currentPlan && !registrations.isEmpty && !lost { return }
      if lost {
        // The mDNS daemon restarted and forgot us; the listener and live links stay.
        readvertising = true
        logger.info("the mDNS daemon dropped the advertisement: registering it again")
      }
      await withdrawAdvertisement()
      let listener = try self.server ?? makeServer()
      self.server = listener
      var made: [any StandingAdvertisement] = []
      for index in interfaces.isEmpty ? [UInt32(0)] : interfaces.map(\.index) {
        made.append(
          try await advertiser.advertise(
            name: plan.instanceName, port: listener.port, txt: plan.txt, interfaceIndex: index))
      }
      registrations = made
      currentPlan = plan
      readvertising = false
      try publish(.advertising, waitingFor: nil, instance: made.first?.name, port: listener.port)
    } catch {
      let daemonAway = (error as? MemoPeerError)?.code == .daemonUnavailable
      if daemonAway && readvertising {
        // Still restarting: those already connected keep syncing; tried again in a second.
        await withdrawAdvertisement()
        retryAfter = now + 1000
      } else {
        await stopServing()
        retryAfter = now + 2000
      }
      let reason: String
      switch (error as? MemoPeerError)?.code {
      case .daemonUnavailable: reason = "the mDNS daemon (avahi-daemon) to be reachable"
      case .io: reason = "TCP port \(requestedPort) to be free"
      default: reason = "DNS-SD registration to succeed"
      }
      logger.error(error, while: "advertising")
      try? publish(.waiting, waitingFor: reason)
    }
  }

  /// Takes the advertisement down and closes the listener and every connection: nothing
  /// on the network.
  private func stopServing() async {
    server?.stop()
    server = nil
    readvertising = false
    await withdrawAdvertisement()
  }

  private func makeServer() throws -> any ChannelListener {
    guard let identity, let trusted else { throw NodeSecrets.lockedError }
    let (logger, contacts, wakeup) = (self.logger, self.contacts, self.wakeup)
    let current = CurrentIdentity(identity)
    servedIdentity = current
    let responder = DaemonResponder(
      identity: identity, trust: trusted.store, store: store, receiptDelay: receiptDelay, activity: activity,
      current: current, stillTrusted: PeerTrustCheck(following: trusted), clock: clock)
    return try channels.listen(
      identity: identity, port: requestedPort,
      accepts: { trusted.accepts($0) },
      events: { event in
        switch event {
        case .accepted(let peer, _):
          contacts.record(peer)
          wakeup?.poke()
          logger.info("trusted connection from \(peer.short, privacy: .public)")
        case .refused(let error, _): logger.warning("connection refused: \(error.kind.rawValue, privacy: .public)")
        }
      },
      handler: { responder.serve($0) })
  }

  /// Notices a new discovery key (rotated after a revocation, by this process or another):
  /// the advertisement is registered again under it, and the hellos of channels accepted or
  /// dialled from now on give it, so the revoked device no longer recognises this node and
  /// trusted devices learn the new key. Channels open now go on (a sync in progress is not
  /// cut short).
  private func followDiscoveryKey() async {
    let fingerprint = KeyFile.discovery(paths).fingerprint()
    guard let known = discoveryFingerprint, fingerprint != known else { return }
    do {
      let (loaded, current) = try identityWithFingerprint()
      identity = loaded
      servedIdentity?.replace(with: loaded)
      discoveryFingerprint = current
    } catch {
      logger.error(error, while: "loading the rotated discovery key")
      return
    }
    await withdrawAdvertisement()
    logger.info("discovery key rotated: advertising under the new one")
  }

  /// The identity and the discovery key file's fingerprint that goes with it: taken after
  /// the load (the first start writes the file), and the load made again if the file was
  /// replaced meanwhile (a revocation rotating the key), so the two always agree.
  private func identityWithFingerprint() throws -> (NodeIdentity, String) {
    let file = KeyFile.discovery(paths)
    var before = file.fingerprint()
    for _ in 0..<3 {
      let loaded = try loadIdentity()
      let after = file.fingerprint()
      if after == before { return (loaded, after) }
      before = after
    }
    return (try loadIdentity(), file.fingerprint())
  }

  /// Notices trust store changes; a removed device loses its live connections at once:
  /// those it opened to us, and those this daemon opened to it (live links, deliveries,
  /// scheduled syncs). Then `serve.json` says which file the daemon has applied
  /// (`trust_store`), which `trust remove` waits for.
  func followTrustStore() {
    guard let trusted else { return }
    let requested = reloadRequest?.take() ?? false
    guard requested || trusted.hasChanged else { return }
    notifier.notify(.reloading)
    defer { notifier.notify(.ready) }
    do {
      guard let removed = try trusted.reloadIfChanged(force: requested) else { return }
      logger.info("trust store changed: \(trusted.all.count, privacy: .public) trusted device(s)")
      if !removed.isEmpty {
        server?.closeChannels { peer in peer.map(removed.contains) ?? false }
        sessions.close(where: removed.contains)
        for device in removed { liveLinks.removeValue(forKey: device)?.close() }
        _ = liveLinkPlan.keep(only: trusted.all)
        showLivePeers()
        logger.info("closed the connections of \(removed.count, privacy: .public) removed peer(s)")
      }
    } catch {
      logger.error(error, while: "reloading the trust store")
    }
    status.trustStore = trusted.loadedFingerprint
    // Before the first state is published, that publication carries it.
    guard status.state != .stopped else { return }
    try? publish(status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
  }

  /// Follows the trust store apart from the daemon's steps, on an inotify watch of the key
  /// folder of its own: a step may wait (a registration with the mDNS daemon, a withdrawal),
  /// and while it waits the actor is free, so a removed device is disconnected within
  /// milliseconds of `trust remove` whatever the step is doing. Ends when `stop` is set.
  private func watchTrustStore(until stop: StopFlag) -> Task<Void, Never> {
    let watch = try? FolderChangeWatch()
    stop.whenSet { watch?.poke() }
    let folder = paths.keyDirectory
    return Task.detached { [self] in
      while !stop.isSet && !Task.isCancelled {
        if let watch {
          if !watch.isWatching(folder) { _ = watch.watch(folder, ignoring: [".lock"]) }
          _ = try? await BlockingIO.run("mp.trust-watch") { watch.wait(upTo: Self.tick) }
        } else {
          try? await Task.sleep(for: .seconds(Self.tick))
        }
        if stop.isSet { return }
        await followTrustStore()
      }
    }
  }

  private func withdrawAdvertisement() async {
    guard !registrations.isEmpty else { return }
    let withdrawn = registrations
    registrations = []
    currentPlan = nil
    for registration in withdrawn { await registration.withdraw() }
  }

  private func publish(
    _ state: ServeStatus.State, waitingFor: String?, instance: String? = nil, port: UInt16 = 0, force: Bool = false
  ) throws {
    let changed =
      state != status.state || waitingFor != status.waitingFor || instance != status.instance || port != status.port
    guard changed || force else { return }
    status.state = state
    status.waitingFor = waitingFor
    status.instance = instance
    status.port = port
    // What status says of live sync follows the links themselves, not the advertisement:
    // a link outlives an avahi-daemon restart (the daemon waits for avahi, its links go
    // on), so only a daemon with no link up and not advertising shows none.
    if state == .stopped || (state != .advertising && liveLinks.isEmpty) {
      status.liveSync = nil
      status.livePeers = nil
    } else if state != .advertising {
      status.livePeers = liveLinkPlan.up.map(\.compact).sorted()
    }
    status.updated = clock()
    try status.write(paths)
    // A forced publication (a new contact) often leaves the summary as it was: said once.
    let summary = status.summary
    if summary != lastSummary {
      lastSummary = summary
      report(summary)
    }
    guard state != .stopped else { return }
    // A forced publication (new contacts, the store's state) may leave the text as it was.
    let text = status.serviceText
    if text != lastServiceText {
      lastServiceText = text
      notifier.notify(.status(text))
    }
    if !announcedReady {
      // Once it listens or waits: a daemon waiting for consent is up, not failing.
      announcedReady = true
      notifier.notify(.ready)
    }
  }
}
