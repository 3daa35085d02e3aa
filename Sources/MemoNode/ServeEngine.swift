import Foundation
import MemoCore
import MemoDiscovery
import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// `memo-peer serve`: advertises the node, only while local-network consent is on record.
///
/// It never browses and never prompts, and it opens its TCP listener only while allowed:
/// without consent the node neither sends nor accepts anything on the network. Every 200 ms
/// it re-reads the consent log (a few hundred bytes), so a grant starts the advertisement
/// and a revoke withdraws it well within 2 s, without a restart. The advertisement rotates with the
/// period (new pseudonym, new tag). A missing mDNS daemon is a waiting state, retried.
public actor ServeEngine {
  let paths: NodePaths
  let gate: ConsentGate
  let identity: AdvertisementIdentity
  /// The TCP port asked for (0: any free port).
  let requestedPort: UInt16
  /// Interfaces to advertise on; empty means all.
  let interfaces: [NetworkInterface]
  let logger: Logger
  /// Human-readable state changes (the CLI prints them on stderr).
  let report: @Sendable (String) -> Void
  let clock: @Sendable () -> Timestamp
  /// Whether the memos can be read now (from the key file and the kernel keyring); nil when
  /// that cannot be told. The daemon never holds the device key itself: it reports the
  /// state, so a locked node keeps advertising and says `locked`.
  let lockState: @Sendable () -> LockState?

  private var registrations: [DNSServiceRegistration] = []
  private var listener: TCPListener?
  private var currentPlan: AdvertisementPlan?
  private var status: ServeStatus
  private var retryAfter: Timestamp = 0

  public static let pollInterval: Duration = .milliseconds(200)

  public init(
    paths: NodePaths, gate: ConsentGate, identity: AdvertisementIdentity, port: UInt16,
    interfaces: [NetworkInterface],
    logger: Logger, clock: @escaping @Sendable () -> Timestamp, report: @escaping @Sendable (String) -> Void,
    lockState: @escaping @Sendable () -> LockState? = { nil }
  ) {
    self.lockState = lockState
    self.paths = paths
    self.gate = gate
    self.identity = identity
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
    let store = lockState()?.name
    if store != status.store {
      status.store = store
      // Before the first state is published, that publication carries it.
      if status.state != .stopped {
        try? publish(
          status.state, waitingFor: status.waitingFor, instance: status.instance, port: status.port, force: true)
      }
    }
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
      let plan = try identity.plan(at: now)
      if plan == currentPlan && !registrations.isEmpty { return }
      withdrawAdvertisement()
      let listener = try self.listener ?? TCPListener(port: requestedPort)
      self.listener = listener
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

  /// Takes the advertisement down and closes the listener: nothing on the network.
  private func stopServing() {
    listener = nil
    withdrawAdvertisement()
  }

  private func withdrawAdvertisement() {
    guard !registrations.isEmpty else { return }
    for registration in registrations { registration.withdraw() }
    registrations = []
    currentPlan = nil
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
    status.updated = clock()
    try status.write(paths)
    report(status.summary)
  }
}
