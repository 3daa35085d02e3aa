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
///
/// The actor decides in values and acts itself (issue 40): each step reads the facts once
/// (`ServeFacts`: lock state, consent, discovery key; a file is read again only when its
/// stamp changed), and one value per concern decides from them and from the time what to
/// do (`AdvertisingSchedule`, `OutboxSchedule`, `SyncSchedule`, `LiveSyncState` with
/// `LiveLinkPlan`, `StatusBoard`); the actor carries it out, and all I/O stays here.
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
    /// The node's lock state; nil: read from `keys` (the key file and the kernel keyring,
    /// `LockStateCache`).
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

  /// What the daemon is made of (`ServeSetup`); everything else it holds is a value that
  /// decides, the actor only carrying out what they say.
  let setup: ServeSetup
  /// The facts each step decides from, read once per wake (`ServeFactsReader`).
  var factsReader: ServeFactsReader
  private(set) var held = HeldKeys()
  /// The listener and the registrations, and the rules of (re)registering them.
  private(set) var served = ServedNetwork()
  private var advertising = AdvertisingSchedule()
  /// `serve.json`, the summary line and systemd's notifications.
  private var board: StatusBoard
  /// The outbox: one delivery round at a time, per-peer backoff, checked at most once a second.
  private var outbox = OutboxSchedule()
  /// `--sync-every`: scheduled syncs with every trusted peer, while the background-sync
  /// consent scope is on record.
  private var syncs: SyncSchedule
  private var rounds = ServeRounds()
  var feed = FeedFollow()
  /// Live sync (ServeEngine+LiveSync.swift): the links being dialled or up, and their rules.
  var liveLinks: [DeviceID: LiveLink] = [:]
  /// Where this machine is on the network now, read at the start and after each change.
  var place = LocalPlace()
  var live = LiveSyncState()
  /// After a write in the store's folder, the feed is read again after these delays
  /// (`FeedFollow.settleChecks`).
  static let feedSettleDelays = [0.005, 0.02, 0.1]
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
    let keys = collaborators.keys
    let cache = LockStateCache(keys: keys)
    let lockState = collaborators.lockState ?? { cache.read() }
    let wakeup = try? FolderChangeWatch()
    wakeup?.watchNetwork()
    setup = ServeSetup(
      paths: paths, gate: gate, loadIdentity: identity,
      channels: collaborators.channels ?? TLSChannels(gate: gate, limits: limits, clock: collaborators.clock),
      advertiser: collaborators.advertiser ?? DNSSDAdvertiser(gate: gate),
      store: StoreAccess(paths: paths, keys: keys, use: .background, logger: logger), keys: keys,
      receiptDelay: collaborators.receiptDelay, requestedPort: port,
      previousPort: port == 0 ? ListenPortFile.read(paths) : nil,
      interfaces: interfaces, logger: logger,
      report: report, clock: collaborators.clock, notifier: notifier, reloadRequest: reloadRequest, wakeup: wakeup)
    factsReader = ServeFactsReader(gate: gate, discoveryKey: KeyFile.discovery(paths), lockState: lockState)
    syncs = SyncSchedule(every: syncEvery)
    board = StatusBoard(
      status: ServeStatus(
        pid: getpid(), state: .stopped, waitingFor: nil, instance: nil, port: 0, interfaces: interfaces.map(\.name),
        updated: collaborators.clock()))
  }

  /// The identity as this daemon's hellos give it, with where it listens and the network
  /// it is on (`place`); held only while unlocked (or unprotected), dropped when the node
  /// locks.
  var identity: NodeIdentity? {
    guard var identity = held.identity else { return nil }
    identity.listenPort = served.server?.port
    identity.listenAddresses = place.listenAddresses
    identity.network = place.network
    return identity
  }
  var trusted: TrustedDevices? { held.trusted }

  /// The links as `status` shows them.
  private var shownLinks: StatusBoard.Links {
    StatusBoard.Links(any: !liveLinks.isEmpty, up: ServeStatus.listed(live.plan.up))
  }

  /// What `status` shows of live sync and of its links up: nil when
  /// the daemon neither advertises nor has a link up (a link outlives an avahi-daemon
  /// restart, so the links, not the advertisement, decide).
  func showLiveSync(_ text: String?, peers: [DeviceID]? = nil) {
    guard board.showLiveSync(text, peers: peers, anyLink: !liveLinks.isEmpty) else { return }
    let status = board.status
    try? publish(status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
  }

  func showLivePeers(_ peers: [DeviceID], dialledAt: [DeviceID: String]? = nil) {
    board.status.liveAddresses = dialledAt
    showLiveSync(board.status.liveSync, peers: peers)
  }

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
    rounds.delivery?.cancel()
    rounds.sync?.cancel()
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
      try? await Clocks.shared.sleep(for: .seconds(Self.tick))
      return
    }
    for folder in [paths.dataDirectory, paths.stateDirectory, paths.keyDirectory] where !wakeup.isWatching(folder) {
      // SQLite's shared memory is written by readers too (the daemon's own feed reads).
      wakeup.watch(folder, ignoring: ["-shm", ".open-lock"])
    }
    let settle = feed.settleChecks.first
    let wake =
      (try? await BlockingIO.run("mp.wait") { wakeup.wait(upTo: settle ?? Self.tick) }) ?? FolderChangeWatch.Wake()
    if !feed.settleChecks.isEmpty { feed.settleChecks.removeFirst() }
    if !wake.folders.isEmpty, !wake.poked, !wake.network {
      let time = Clocks.shared
      if let later = feed.wakes.wake(at: time.monotonicNow) {
        // What is written meanwhile is read as one wake by the next step.
        try? await time.sleep(until: later)
      }
    }
    // inotify tells of the write before SQLite has published it (the WAL index is updated
    // after the WAL's fsync): while live sync runs, the feed is read again 5, 20 and 100 ms
    // after every write in the store's folder.
    if live.allowed && wake.folders.contains(paths.dataDirectory) { feed.settleChecks = Self.feedSettleDelays }
    if wake.network { networkChanged() }
  }

  /// Wakes the daemon's sleep: a task it started ended, so the next step may start another.
  nonisolated func wake() { wakeup?.poke() }

  /// One step: the facts are read once (`ServeFactsReader`: a file is read again only
  /// when it changed), each concern's value decides from them, and the actor carries out
  /// what they decide.
  func step() async {
    var facts = factsReader.read()
    if factsReader.takeArrival() {
      try? await Clocks.shared.sleep(for: ServeFactsReader.arrivalSettle)
      facts = factsReader.read()
    }
    if facts.access == .locked { await dropEverything() }
    if let (seen, fresh) = contacts.takeChanges(clock: clock) {
      heardFrom(fresh)
      board.status.trustedContacts = seen
      republish()
    }
    let lock = facts.lock?.name
    if lock != board.status.store {
      board.status.store = lock
      republish()
    }
    // Keys loaded in this step are as new as can be: the facts' discovery key fingerprint
    // was taken before the load (the first start writes the file), so it is not followed.
    let loadedNow = identity == nil
    guard !loadedNow || loadKeys(facts.lock) else { return }
    followTrustStore()
    if !loadedNow { await followDiscoveryKey(facts.discoveryKey) }
    let consent = facts.consent
    if let error = consent.error {
      logger.error(error, while: "reading the consent log")
      await stopServing()
      try? publish(.waiting, waitingFor: consent.waitingFor)
      return
    }
    let networkWait = consent.advertise == .needsConsent(.network) || consent.advertise?.isNetworkRefusal == true
    followOutboxConsent(
      allowed: consent.advertise == .allowed, waiting: networkWait ? .networkNotAllowed : .localNetworkConsent)
    // Without local-network consent nothing of this node stays on the network.
    if case .waiting(let waitingFor) = facts.access {
      if !liveLinks.isEmpty { stopLiveLinks() }
      // Off the networks a person allowed, no connection of this node stays open either.
      if consent.advertise != .allowed || consent.offNetwork { sessions.closeAll() }
      await stopServing()
      try? publish(.waiting, waitingFor: waitingFor)
      return
    }
    await advertise()
    scheduleDelivery()
    scheduleSync(granted: consent.backgroundSync)
    syncLive(granted: consent.backgroundSync)
  }

  /// Publishes the status as it is again (a field of it changed); before the first state
  /// is published, that publication carries it.
  private func republish() {
    guard let status = board.republish(links: shownLinks, now: clock()) else { return }
    try? write(status)
  }

  /// While the node is locked: nothing of it on the network and no key in memory. Called
  /// first in every step, so a lock closes everything within one poll.
  private func dropEverything() async {
    sessions.closeAll()
    guard identity != nil || served.server != nil || board.status.waitingFor != Self.waitingForUnlock else { return }
    rounds.delivery?.cancel()
    rounds.sync?.cancel()
    stopLiveLinks()
    await stopServing()
    held.identity = nil
    held.trusted = nil
    board.status.trustStore = nil
    logger.info("locked: advertisement withdrawn, sessions closed, keys dropped")
    try? publish(.waiting, waitingFor: Self.waitingForUnlock)
  }

  /// Loads the identity, discovery key and trust store; false (and waiting) while the node
  /// is locked or they cannot be read.
  private func loadKeys(_ lock: LockState?) -> Bool {
    if case .locked? = lock { return false }
    let now = clock()
    guard advertising.due(now: now) else { return false }
    do {
      let (loaded, fingerprint) = try identityWithFingerprint()
      let devices = try TrustedDevices(store: TrustStore(paths: paths, keys: setup.keys))
      held.trusted = devices
      board.status.trustStore = devices.loadedFingerprint
      held.identity = loaded
      held.discoveryKey = fingerprint
      return true
    } catch let error as MemoPeerError where error.code == .locked {
      try? publish(.waiting, waitingFor: Self.waitingForUnlock)
    } catch {
      logger.error(error, while: "loading the identity")
      advertising.keysFailed(now: now)
      try? publish(.waiting, waitingFor: "a readable identity and trust store (`memo-peer doctor`)")
    }
    return false
  }

  /// Starts a scheduled sync with every trusted peer when `SyncSchedule` says one is due
  /// (`granted`: the background-sync consent is on record).
  private func scheduleSync(granted: Bool) {
    let connector = self.connector
    let action = syncs.step(
      now: clock(), roundRunning: rounds.sync != nil, canDial: connector != nil, granted: granted)
    switch action {
    case .none: return
    case .noteWaitingForConsent:
      report("scheduled sync waits for the background-sync consent (`memo-peer consent grant --scope background-sync`)")
    case .start:
      guard let connector, let trusted else { return }
      let trust = trusted.store
      let runner = PeerSync(
        store: store, dialer: connector, stillTrusted: PeerTrustCheck(following: trusted), clock: clock)
      rounds.sync = Task.detached { [self] in
        let peers = (try? trust.load().peers) ?? []
        let results = await runner.syncAll(peers, timeout: Self.deliveryConnectTimeout, deleteGuard: MassDeleteGuard())
        await self.finishSync(results)
      }
    }
  }

  private func finishSync(_ results: [PeerSync.PeerResult]) {
    rounds.sync = nil
    wake()
    // Quiet when nothing moved: a daemon syncing every minute would otherwise fill its log.
    for result in results where result.movedAnything { report("scheduled sync: " + result.summary) }
  }

  /// On a change of consent: without it every pending entry waits for it (also those
  /// queued meanwhile, marked once a second); with it again, delivery resumes at once (the
  /// backoff is forgotten: `OutboxSchedule.consent`).
  private func followOutboxConsent(allowed: Bool, waiting reason: WaitReason) {
    guard outbox.consent(allowed: allowed, now: clock()), let delivery = makeOutboxDelivery() else { return }
    do {
      for recipient in try delivery.pendingRecipients() {
        try delivery.markWaiting(recipient, reason.description)
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

  /// Starts a delivery round for the recipients whose backoff has passed
  /// (`OutboxSchedule`).
  private func scheduleDelivery() {
    let now = clock()
    guard outbox.look(now: now, roundRunning: rounds.delivery != nil), let delivery = makeOutboxDelivery() else {
      return
    }
    let due: [DeviceID]
    do {
      due = outbox.due(try delivery.pendingRecipients(), now: now)
    } catch {
      logger.error(error, while: "reading the outbox")
      return
    }
    guard !due.isEmpty else { return }
    let logger = self.logger
    // Detached, so the actor stays free; the rounds' network waits run on threads of their own.
    rounds.delivery = Task.detached { [self] in
      var rounds: [DeviceID: OutboxDelivery.Round] = [:]
      for recipient in due {
        if Task.isCancelled { break }
        do {
          rounds[recipient] = try await delivery.deliver(to: recipient, timeout: Self.deliveryConnectTimeout)
        } catch {
          logger.error(error, while: "delivering the outbox")
          rounds[recipient] = OutboxDelivery.Round(pending: 1, waitingFor: "storage")
        }
      }
      await self.finishDelivery(rounds)
    }
  }

  private func finishDelivery(_ results: [DeviceID: OutboxDelivery.Round]) {
    rounds.delivery = nil
    wake()
    for round in results.values where round.delivered > 0 {
      report("delivered \(round.delivered) outbox entr\(round.delivered == 1 ? "y" : "ies")")
    }
    let pauses = outbox.finished(results, now: clock()) { Double.random(in: 0..<1) }
    for (recipient, pause) in pauses {
      logger.info(
        "outbox for \(recipient.short, privacy: .public) waits (\(results[recipient]?.waitingFor ?? "?", privacy: .public)); next try in \(Int(pause), privacy: .public) s"
      )
    }
  }

  /// Registers the advertisement when `AdvertisingSchedule` says it is due (none yet, a
  /// new period, lost by the mDNS daemon), opening the listener first; on a failure, does
  /// what the schedule says (close the listener, or keep it while avahi restarts).
  private func advertise() async {
    let now = clock()
    guard advertising.due(now: now), let identity else { return }
    do {
      let plan = try identity.advertisement.plan(at: now)
      let lost = served.registrations.contains { $0.isLost }
      guard advertising.needsRegistering(plan, standing: !served.registrations.isEmpty, lost: lost) else { return }
      if lost {
        // The mDNS daemon restarted and forgot us; the listener and live links stay.
        logger.info("the mDNS daemon dropped the advertisement: registering it again")
      }
      await withdrawAdvertisement()
      let listener = try served.server ?? makeServer()
      served.server = listener
      // Listening again, perhaps somewhere new (another address, another port): the hellos
      // say it, and links that started before start again so that their peers hear it.
      if lookWhereWeAre(), !liveLinks.isEmpty {
        logger.info("listening again where this device was not: every live link starts again")
        stopLiveLinks()
      }
      var made: [any StandingAdvertisement] = []
      for index in setup.interfaces.isEmpty ? [UInt32(0)] : setup.interfaces.map(\.index) {
        made.append(
          try await setup.advertiser.advertise(
            name: plan.instanceName, port: listener.port, txt: plan.txt, interfaceIndex: index))
      }
      served.registrations = made
      advertising.registered(plan)
      try publish(.advertising, waitingFor: nil, instance: made.first?.name, port: listener.port)
    } catch {
      let failure = advertising.failed((error as? MemoPeerError)?.code, now: now, port: setup.requestedPort)
      if failure.keepListening {
        // Still restarting: those already connected keep syncing; tried again in a second.
        await withdrawAdvertisement()
      } else {
        await stopServing()
      }
      logger.error(error, while: "advertising")
      try? publish(.waiting, waitingFor: failure.waitingFor)
    }
  }

  /// Takes the advertisement down and closes the listener and every connection: nothing
  /// on the network.
  private func stopServing() async {
    served.server?.stop()
    served.server = nil
    advertising.stopped()
    await withdrawAdvertisement()
  }

  private func makeServer() throws -> any ChannelListener {
    guard let identity, let trusted else { throw NodeSecrets.lockedError }
    let (logger, contacts, wakeup) = (self.logger, self.contacts, self.wakeup)
    let current = CurrentIdentity(identity)
    held.served = current
    let events: @Sendable (ServerEvent) -> Void = { event in
      switch event {
      case .accepted(let peer, _):
        contacts.record(peer)
        wakeup?.poke()
        logger.info("trusted connection from \(peer.short, privacy: .public)")
      case .refused(let error, _): logger.warning("connection refused: \(error.kind.rawValue, privacy: .public)")
      }
    }
    let responder = DaemonResponder(
      identity: identity, trust: trusted.store, store: store, receiptDelay: setup.receiptDelay, activity: activity,
      current: current, stillTrusted: PeerTrustCheck(following: trusted), clock: clock)
    func listen(on port: UInt16) throws -> any ChannelListener {
      try channels.listen(
        identity: identity, port: port, accepts: { trusted.accepts($0) }, events: events,
        handler: { responder.serve($0) })
    }
    // The port this process last listened on (it stopped while off the networks a person
    // allowed), else the last run's, when free: where trusted devices remember reaching us.
    let server =
      try (served.lastPort ?? setup.previousPort).flatMap { try? listen(on: $0) } ?? listen(on: setup.requestedPort)
    served.lastPort = server.port
    ListenPortFile.write(server.port, paths)
    return server
  }

  /// Notices a new discovery key (rotated after a revocation, by this process or another):
  /// the advertisement is registered again under it, and the hellos of channels accepted or
  /// dialled from now on give it, so the revoked device no longer recognises this node and
  /// trusted devices learn the new key. Channels open now go on (a sync in progress is not
  /// cut short).
  private func followDiscoveryKey(_ fingerprint: String) async {
    guard let known = held.discoveryKey, fingerprint != known else { return }
    do {
      let (loaded, current) = try identityWithFingerprint()
      held.identity = loaded
      if let identity { held.served?.replace(with: identity) }
      held.discoveryKey = current
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
      let loaded = try setup.loadIdentity()
      let after = file.fingerprint()
      if after == before { return (loaded, after) }
      before = after
    }
    return (try setup.loadIdentity(), file.fingerprint())
  }

  /// Notices trust store changes; a removed device loses its live connections at once:
  /// those it opened to us, and those this daemon opened to it (live links, deliveries,
  /// scheduled syncs). Then `serve.json` says which file the daemon has applied
  /// (`trust_store`), which `trust remove` waits for.
  func followTrustStore() {
    guard let trusted else { return }
    let requested = setup.reloadRequest?.take() ?? false
    guard requested || trusted.hasChanged else { return }
    notifier.notify(.reloading)
    defer { notifier.notify(.ready) }
    do {
      guard let removed = try trusted.reloadIfChanged(force: requested) else { return }
      logger.info("trust store changed: \(trusted.all.count, privacy: .public) trusted device(s)")
      if !removed.isEmpty {
        served.server?.closeChannels { peer in peer.map(removed.contains) ?? false }
        sessions.close(where: removed.contains)
        for device in removed { liveLinks.removeValue(forKey: device)?.close() }
        _ = live.plan.keep(only: trusted.all)
        showLivePeers()
        logger.info("closed the connections of \(removed.count, privacy: .public) removed peer(s)")
      }
    } catch {
      logger.error(error, while: "reloading the trust store")
    }
    board.status.trustStore = trusted.loadedFingerprint
    republish()
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
          try? await Clocks.shared.sleep(for: .seconds(Self.tick))
        }
        if stop.isSet { return }
        await followTrustStore()
      }
    }
  }

  private func withdrawAdvertisement() async {
    guard !served.registrations.isEmpty else { return }
    let withdrawn = served.registrations
    served.registrations = []
    advertising.withdrawn()
    for registration in withdrawn { await registration.withdraw() }
  }

  /// Publishes a state (`StatusBoard.publish`): writes `serve.json`, then says what
  /// changed (the summary, systemd's STATUS= and READY=).
  private func publish(
    _ state: ServeStatus.State, waitingFor: String?, instance: String? = nil, port: UInt16 = 0, force: Bool = false
  ) throws {
    guard
      let status = board.publish(
        state, waitingFor: waitingFor, instance: instance, port: port, force: force, links: shownLinks, now: clock())
    else { return }
    try write(status)
  }

  /// Writes `status` to `serve.json`; once it is written, says what changed.
  private func write(_ status: ServeStatus) throws {
    try status.write(paths)
    for saying in board.written() {
      switch saying {
      case .report(let summary): report(summary)
      case .notify(let event): notifier.notify(event)
      }
    }
  }
}
