import Foundation
import MemoCore
import MemoDiscovery
import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// `memo-peer serve`: advertises the node, only while local-network consent is on record.
///
/// It never browses and never prompts. Every 200 ms it re-reads the consent decision (a
/// cheap fingerprint check first), so a grant starts the advertisement and a revoke
/// withdraws it well within 2 s, without a restart. The advertisement rotates with the
/// period (new pseudonym, new tag). A missing mDNS daemon is a waiting state, retried.
public actor ServeEngine {
  let paths: NodePaths
  let gate: ConsentGate
  let identity: AdvertisementIdentity
  let port: UInt16
  /// Interfaces to advertise on; empty means all.
  let interfaces: [NetworkInterface]
  let logger: Logger
  /// Human-readable state changes (the CLI prints them on stderr).
  let report: @Sendable (String) -> Void
  let clock: @Sendable () -> Timestamp

  private var registrations: [DNSServiceRegistration] = []
  private var currentPlan: AdvertisementPlan?
  private var status: ServeStatus
  private var retryAfter: Timestamp = 0

  public static let pollInterval: Duration = .milliseconds(200)

  public init(
    paths: NodePaths, gate: ConsentGate, identity: AdvertisementIdentity, port: UInt16, interfaces: [NetworkInterface],
    logger: Logger, clock: @escaping @Sendable () -> Timestamp, report: @escaping @Sendable (String) -> Void
  ) {
    self.paths = paths
    self.gate = gate
    self.identity = identity
    self.port = port
    self.interfaces = interfaces
    self.logger = logger
    self.clock = clock
    self.report = report
    status = ServeStatus(
      pid: getpid(), state: .stopped, waitingFor: nil, instance: nil, port: port, interfaces: interfaces.map(\.name),
      updated: clock())
  }

  /// Runs until `stop` is set; withdraws the advertisement before returning.
  public func run(until stop: StopFlag) async throws {
    while !stop.isSet {
      await step()
      try? await Task.sleep(for: Self.pollInterval)
    }
    withdraw()
    try publish(.stopped, waitingFor: nil)
  }

  func step() async {
    let verdict: LocalNetworkVerdict
    do {
      verdict = try gate.verdict(for: .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType))
    } catch {
      logger.error(error, while: "reading the consent log")
      withdraw()
      try? publish(.waiting, waitingFor: "a readable consent log")
      return
    }
    switch verdict {
    case .needsConsent:
      withdraw()
      try? publish(.waiting, waitingFor: "local-network consent")
    case .refused(let error):
      withdraw()
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
      withdraw()
      let discovery = gate.discovery
      var made: [DNSServiceRegistration] = []
      for index in interfaces.isEmpty ? [UInt32(0)] : interfaces.map(\.index) {
        made.append(
          try await discovery.register(
            name: plan.instanceName, type: LocalNetworkManifest.memoPeerServiceType, port: port, txt: plan.txt,
            interfaceIndex: index))
      }
      registrations = made
      currentPlan = plan
      try publish(.advertising, waitingFor: nil, instance: made.first?.name)
    } catch {
      withdraw()
      retryAfter = now + 2000
      let reason =
        (error as? MemoPeerError)?.code == .daemonUnavailable
        ? "the mDNS daemon (avahi-daemon) to be reachable" : "DNS-SD registration to succeed"
      logger.error(error, while: "advertising")
      try? publish(.waiting, waitingFor: reason)
    }
  }

  private func withdraw() {
    guard !registrations.isEmpty else { return }
    for registration in registrations { registration.withdraw() }
    registrations = []
    currentPlan = nil
  }

  private func publish(_ state: ServeStatus.State, waitingFor: String?, instance: String? = nil) throws {
    let changed = state != status.state || waitingFor != status.waitingFor || instance != status.instance
    guard changed else { return }
    status.state = state
    status.waitingFor = waitingFor
    status.instance = instance
    status.updated = clock()
    try status.write(paths)
    report(status.summary)
  }
}
