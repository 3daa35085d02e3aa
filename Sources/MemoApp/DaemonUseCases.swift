import Dispatch
import MemoCore
import MemoNode
import MemoVault

/// How `serve` runs: the port, where to advertise, the pseudonym's rotation, scheduled syncs.
public struct DaemonOptions: Sendable {
  /// The TCP port (0: any free port).
  public var port: UInt16
  /// Names of the interfaces to advertise on; empty: all.
  public var interfaces: [String]
  /// Seconds between pseudonym and tag rotations; nil: the configuration's, or 900.
  public var rotation: Int64?
  /// Seconds between syncs with every trusted device; nil: none (needs background-sync).
  public var syncEvery: Double?
  /// Seconds between storing a delivery and sending its receipt (0, except in lab tests).
  public var receiptDelay: Double

  public init(
    port: UInt16 = 0, interfaces: [String] = [], rotation: Int64? = nil, syncEvery: Double? = nil,
    receiptDelay: Double = 0
  ) {
    self.port = port
    self.interfaces = interfaces
    self.rotation = rotation
    self.syncEvery = syncEvery
    self.receiptDelay = receiptDelay
  }
}

/// What stops a daemon and what asks it to reload, made before it (so a signal handler can
/// be in place before anything starts) and set from any thread.
public final class DaemonControls: Sendable {
  let stopFlag = StopFlag()
  let reloadRequest = ReloadRequest()

  public init() {}

  /// Withdraw the advertisement and return from `Daemon.run` (SIGTERM, SIGINT).
  public func stop() { stopFlag.set() }
  /// Re-read the trust store now (SIGHUP, `systemctl reload`).
  public func reload() { reloadRequest.set() }
}

/// A daemon ready to run: the engine, built.
public struct Daemon: Sendable {
  let engine: ServeEngine
  let controls: DaemonControls

  /// Runs until `controls.stop()`; withdraws the advertisement before returning.
  public func run() throws {
    let (engine, stop) = (engine, controls.stopFlag)
    try runBlocking { try await engine.run(until: stop) }
  }
}

/// A check for desktop notices, once a second, until cancelled.
public final class DesktopAlerts {
  private let timer: any DispatchSourceTimer

  init(watcher: DesktopAlertWatcher) {
    timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "memo-peer.desktop-alerts"))
    timer.schedule(deadline: .now(), repeating: .seconds(1))
    timer.setEventHandler { watcher.check() }
    timer.resume()
  }

  public func cancel() { timer.cancel() }
}

/// `serve`: the daemon that advertises this node while consent allows, answers trusted
/// devices, delivers the outbox and (with `syncEvery`) syncs on a schedule.
public struct DaemonUseCases {
  let app: App

  /// Builds the engine (ServeEngine) for `options`: the identity loaded when the node can
  /// (a locked node waits for `unlock`), the configuration checked, the interfaces found.
  /// `report` gets the state changes a person reads; `notifier` (nil: systemd's, when the
  /// unit is Type=notify) every change of state.
  public func prepare(
    _ options: DaemonOptions, controls: DaemonControls, report: @escaping @Sendable (String) -> Void,
    notifier: (any ServiceNotifier)? = nil
  ) throws -> Daemon {
    let paths = app.paths
    let gate = try app.consent.gate()
    let rotation = options.rotation
    // Loaded by the daemon when it can: on a locked node it waits for `unlock` instead.
    let identity: @Sendable () throws -> NodeIdentity = {
      try NodeIdentity.load(paths: paths, rotationSeconds: rotation)
    }
    _ = try NodeConfig.load(paths: paths)
    let interfaces = try Self.interfaces(named: options.interfaces)
    let engine = try ServeEngine(
      paths: paths, gate: gate, identity: identity, port: options.port, interfaces: interfaces,
      logger: app.logger.scoped("serve"), report: report, syncEvery: options.syncEvery,
      notifier: notifier ?? (try SystemdNotifier()), reloadRequest: controls.reloadRequest,
      collaborators: ServeEngine.Collaborators(clock: app.clock, keys: app.keys, receiptDelay: options.receiptDelay))
    return Daemon(engine: engine, controls: controls)
  }

  /// Desktop notifications for the user daemon (a memo in the inbox, a conflict, held
  /// deletes), checked once a second; nil without a session bus (the system daemon).
  /// `open` runs a notice's command when its "Open" action is chosen.
  public func desktopAlerts(environment: [String: String], open: @escaping @Sendable ([String]) -> Void)
    -> DesktopAlerts?
  {
    guard let bus = SessionBusNotifications(environment: environment) else { return nil }
    return DesktopAlerts(watcher: DesktopAlertWatcher(paths: app.paths, notifier: bus, open: open))
  }

  /// The interfaces named (all when none is), or a usage error naming those there are.
  static func interfaces(named names: [String]) throws -> [NetworkInterface] {
    guard !names.isEmpty else { return [] }
    let available = NetworkInterfaces.all()
    return try names.map { name in
      guard let interface = available.first(where: { $0.name == name }) else {
        throw MemoPeerError(
          .usage, "there is no interface named \(TerminalText.echo(name))",
          hint: "interfaces here: " + available.map(\.name).joined(separator: ", "))
      }
      return interface
    }
  }
}
