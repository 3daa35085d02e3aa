import Foundation
import MemoCore
import MemoDiscovery
import MemoStore
import MemoTransport

#if canImport(Glibc)
  import Glibc
#endif

/// `memo-peer serve`: advertises the node, only while local-network consent is on record.
///
/// It never browses and never prompts, and it opens its TLS listener only while allowed:
/// without consent the node neither sends nor accepts anything on the network. Only
/// trusted devices get past the handshake; removing one from the trust store closes its
/// live connections at the next poll. Every 200 ms
/// it re-reads the consent log (a few hundred bytes), so a grant starts the advertisement
/// and a revoke withdraws it well within 2 s, without a restart. The advertisement rotates with the
/// period (new pseudonym, new tag). A missing mDNS daemon is a waiting state, retried.
public actor ServeEngine {
  let paths: NodePaths
  let gate: ConsentGate
  let identity: NodeIdentity
  let trusted: TrustedDevices
  let limits: ConnectionLimits
  /// The TCP port asked for (0: any free port).
  let requestedPort: UInt16
  /// Interfaces to advertise on; empty means all.
  let interfaces: [NetworkInterface]
  let logger: Logger
  /// Human-readable state changes (the CLI prints them on stderr).
  let report: @Sendable (String) -> Void
  let clock: @Sendable () -> Timestamp

  private var registrations: [DNSServiceRegistration] = []
  private var server: TLSServer?
  private var currentPlan: AdvertisementPlan?
  private var status: ServeStatus
  private var retryAfter: Timestamp = 0

  public static let pollInterval: Duration = .milliseconds(200)

  public init(
    paths: NodePaths, gate: ConsentGate, identity: NodeIdentity, port: UInt16,
    interfaces: [NetworkInterface], limits: ConnectionLimits = ConnectionLimits(),
    logger: Logger, clock: @escaping @Sendable () -> Timestamp, report: @escaping @Sendable (String) -> Void
  ) throws {
    self.paths = paths
    self.gate = gate
    self.identity = identity
    trusted = try TrustedDevices(store: TrustStore(paths: paths))
    self.limits = limits
    self.requestedPort = port
    self.interfaces = interfaces
    self.logger = logger
    self.clock = clock
    self.report = report
    status = ServeStatus(
      pid: getpid(), state: .stopped, waitingFor: nil, instance: nil, port: 0, interfaces: interfaces.map(\.name),
      updated: clock())
  }

  /// Runs until `stop` is set; withdraws the advertisement before returning.
  public func run(until stop: StopFlag) async throws {
    while !stop.isSet {
      await step()
      try? await Task.sleep(for: Self.pollInterval)
    }
    stopServing()
    try publish(.stopped, waitingFor: nil)
  }

  func step() async {
    followTrustStore()
    let verdict: LocalNetworkVerdict
    do {
      verdict = try gate.verdict(for: .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType))
    } catch {
      logger.error(error, while: "reading the consent log")
      stopServing()
      try? publish(.waiting, waitingFor: "a readable consent log")
      return
    }
    switch verdict {
    case .needsConsent:
      stopServing()
      try? publish(.waiting, waitingFor: "local-network consent")
    case .refused(let error):
      stopServing()
      let state = (try? gate.state(.localNetwork).name) ?? "denied"
      try? publish(
        .waiting, waitingFor: error.code == .policyDenied ? "local-network consent (\(state))" : error.message)
    case .allowed:
      await advertise()
    }
  }

  private func advertise() async {
    let now = clock()
    guard now >= retryAfter else { return }
    do {
      let plan = try identity.advertisement.plan(at: now)
      if plan == currentPlan && !registrations.isEmpty { return }
      withdrawAdvertisement()
      let listener = try self.server ?? makeServer()
      self.server = listener
      let discovery = gate.discovery
      var made: [DNSServiceRegistration] = []
      for index in interfaces.isEmpty ? [UInt32(0)] : interfaces.map(\.index) {
        made.append(
          try await discovery.register(
            name: plan.instanceName, type: LocalNetworkManifest.memoPeerServiceType, port: listener.port,
            txt: plan.txt,
            interfaceIndex: index))
      }
      registrations = made
      currentPlan = plan
      try publish(.advertising, waitingFor: nil, instance: made.first?.name, port: listener.port)
    } catch {
      stopServing()
      retryAfter = now + 2000
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
  private func stopServing() {
    server?.stop()
    server = nil
    withdrawAdvertisement()
  }

  private func makeServer() throws -> TLSServer {
    let (identity, trusted, logger) = (self.identity, self.trusted, self.logger)
    let store = trusted.store
    return try TLSServer(
      port: requestedPort, context: TLSContext(identity: identity.device, role: .server), limits: limits,
      accepts: { trusted.contains($0) },
      events: { event in
        switch event {
        case .accepted(let peer, _): logger.info("trusted connection from \(peer.short, privacy: .public)")
        case .refused(let error, _): logger.warning("connection refused: \(error.kind.rawValue, privacy: .public)")
        }
      },
      handler: { connection in
        do throws(TransportError) {
          try PeerSession.serve(connection, identity: identity, trust: store, logger: logger)
          connection.shutdown()
        } catch {
          logger.warning("connection closed: \(error.kind.rawValue, privacy: .public)")
        }
      })
  }

  /// Notices trust store changes; a removed device loses its live connections at once.
  private func followTrustStore() {
    do {
      let removed = try trusted.reloadIfChanged()
      guard !removed.isEmpty else { return }
      server?.closeConnections { peer in peer.map(removed.contains) ?? false }
      logger.info("closed the connections of \(removed.count, privacy: .public) removed peer(s)")
    } catch {
      logger.error(error, while: "reloading the trust store")
    }
  }

  private func withdrawAdvertisement() {
    guard !registrations.isEmpty else { return }
    for registration in registrations { registration.withdraw() }
    registrations = []
    currentPlan = nil
  }

  private func publish(_ state: ServeStatus.State, waitingFor: String?, instance: String? = nil, port: UInt16 = 0)
    throws
  {
    let changed =
      state != status.state || waitingFor != status.waitingFor || instance != status.instance || port != status.port
    guard changed else { return }
    status.state = state
    status.waitingFor = waitingFor
    status.instance = instance
    status.port = port
    status.updated = clock()
    try status.write(paths)
    report(status.summary)
  }
}
