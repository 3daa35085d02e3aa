import Foundation
import MemoCore
import MemoDiscovery
import MemoNode
import MemoStore
import MemoWeb
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Commands that use the local network, all behind the consent gate.
enum NetworkCommands {
  static let browse = Command(
    name: "browse", summary: "Find memo-peer devices on the local network (asks for consent first).",
    details: """
      The first use asks on the terminal, showing why memo-peer wants local-network access,
      and records the answer. Without a terminal and without a decision it sends nothing and
      exits with status 11; a denied consent exits with status 12 (PolicyDenied). Peers are
      printed as they come (+) and go (-) until the timeout.
      """,
    options: [
      OptionSpec("timeout", value: "SECONDS", "how long to watch (default 5)"),
      OptionSpec("all-types", "list every service type on the network (needs the all-service-types scope)"),
      OptionSpec("type", value: "TYPE", "browse another declared service type (default _memo-peer._tcp)"),
      OptionSpec("json", "one JSON object per line for each peer event"),
    ],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let gate = try ConsentGate(paths: paths)
    let allTypes = context.arguments.has("all-types")
    let type =
      allTypes
      ? LocalNetworkManifest.allTypesQuery : context.arguments.value("type") ?? LocalNetworkManifest.memoPeerServiceType
    let timeout = try seconds(context.arguments.value("timeout"), default: 5, option: "timeout")
    let use: LocalNetworkUse = allTypes ? .browseAllTypes : .browse(serviceType: type)
    try obtainConsent(for: use, gate: gate, context: context)

    let printer = LinePrinter()
    // Recognising this node and trusted devices needs keys that are sealed while the node is
    // locked; browsing itself needs none, so a locked node browses without names.
    var identity: AdvertisementIdentity?
    var trust = TrustList()
    do {
      identity = try AdvertisementIdentity.load(paths: paths, rotationSeconds: Advertisement.defaultRotationSeconds)
      trust = try TrustStore(paths: paths).load()
    } catch let error as MemoPeerError where error.code == .locked {
      printer.error("memo-peer: locked: this node and trusted devices are not recognised (`memo-peer unlock`)")
      identity = nil
    }
    let recognizer = PeerRecognizer(trust: trust)
    let json = context.wantsJSON
    let found = Counter()
    // Started here, so the first calls to avahi-daemon overlap the start of the task below.
    let sightings = try PeerBrowser.sightings(
      discovery: gate.discovery, type: type, resolve: !allTypes, ownIdentity: identity, clock: { wallClock() })
    try runBlocking {
      // Until the timeout, or until the browse fails.
      _ = try await untilDeadline(.after(seconds: timeout)) {
        for try await raw in sightings {
          let sighting = recognizer.annotate(raw, at: wallClock())
          found.increment()
          let text =
            json
            ? String(decoding: OutputFormat.json(sighting).dropLast(), as: UTF8.self)
            : line(sighting, allTypes: allTypes)
          printer.print(text)
        }
      }
    }
    if found.value == 0 && !json {
      printer.error("no memo-peer device answered within \(formatSeconds(timeout)) (`memo-peer doctor` checks why)")
    }
  }

  static let consent = Command(
    name: "consent", summary: "Show, grant, deny or revoke local-network consent.",
    details: """
      ACTION is status, grant, deny or revoke. Scopes: local-network (find and connect to
      devices), all-service-types (browse --all-types), background-sync (sync on a schedule).
      Every decision is appended to the node's consent log with the usage text that applied,
      who decided, when and how. --provisioning marks a decision made while setting up a
      trusted host (for example from a systemd unit's setup step).
      """,
    options: [
      OptionSpec(
        "scope", value: "SCOPE", "local-network (default), all-service-types or background-sync",
        completion: .choices(ConsentScope.allCases.map(\.rawValue))),
      OptionSpec("note", value: "TEXT", "a note stored with the decision"),
      OptionSpec("provisioning", "record the decision as made by provisioning"),
      OptionSpec("json", "print the consent state as JSON"),
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "status (default), grant, deny or revoke",
        completion: .choices(["status", "grant", "deny", "revoke"]))
    ]
  ) { context in
    let gate = try ConsentGate(paths: try context.paths())
    let action = context.arguments.positional(0) ?? "status"
    let scopeName = context.arguments.value("scope") ?? ConsentScope.localNetwork.rawValue
    guard let scope = ConsentScope(rawValue: scopeName) else {
      throw ArgumentParser.usage(
        "unknown consent scope \(ArgumentParser.echo(scopeName))",
        suggestion: ArgumentParser.closest(to: scopeName, among: ConsentScope.allCases.map(\.rawValue)),
        command: "consent")
    }
    let decision: ConsentDecision
    switch action {
    case "status":
      printConsentStatus(gate: gate, context: context)
      return
    case "grant": decision = .granted
    case "deny": decision = .denied
    case "revoke":
      guard try gate.state(scope).isGranted else {
        context.console.print("\(scope.rawValue) is not granted; nothing to revoke")
        return
      }
      decision = .revoked
    default:
      throw ArgumentParser.usage(
        "unknown consent action \(ArgumentParser.echo(action))",
        suggestion: ArgumentParser.closest(to: action, among: ["status", "grant", "deny", "revoke"]), command: "consent"
      )
    }
    let record = try gate.record(
      decision, scope: scope, method: context.arguments.has("provisioning") ? .provisioning : .command,
      note: context.arguments.value("note"), now: context.now)
    if context.wantsJSON {
      context.printJSON(record)
    } else {
      context.console.print("\(scope.rawValue): \(decision.rawValue)")
      context.console.print("usage description: \(record.usageText)")
    }
  }

  static let serve = Command(
    name: "serve", summary: "Advertise this node on the local network, while consent allows (a daemon).",
    details: """
      Never browses and never asks. While the node is locked (a passphrase class, before
      `memo-peer unlock`) it cannot prove who it is: it advertises nothing, listens nowhere
      and waits, and goes on by itself after `unlock`; `memo-peer lock` withdraws it again
      and closes its sessions. Without local-network consent it waits, says so once,
      and starts advertising within 2 s of a grant; a revoke withdraws the advertisement
      within 2 s. The TCP port is open only while advertising. The advertisement is a
      pseudonym and a tag that change every rotation period. It answers syncs from trusted
      devices; with --sync-every it also starts them, only while the background-sync
      consent scope is granted (it waits, and says so, until then). With --web it also
      serves the page of `memo-peer web` on 127.0.0.1 and ::1 (sign in with `memo-peer web
      --open`; the link is never written to the log). SIGTERM or SIGINT withdraws the
      advertisement and exits 0.
      """,
    options: [
      OptionSpec("port", value: "PORT", "TCP port to listen on (default: any free port)"),
      OptionSpec("interface", value: "NAME", repeatable: true, "advertise only on this interface (repeatable)"),
      OptionSpec("rotation", value: "SECONDS", "rotation period of the pseudonym and tag (default: config, or 900)"),
      OptionSpec(
        "sync-every", value: "DURATION",
        "also sync with every trusted device this often (90s, 10m, 1h); needs the background-sync consent"),
      OptionSpec("web", "also serve the web page on this computer (see `memo-peer web`)"),
      OptionSpec("web-port", value: "PORT", "the web page's port (default 8426 or the next free one)"),
    ],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let gate = try ConsentGate(paths: paths)
    let rotation = try context.arguments.value("rotation").map {
      Int64(try seconds($0, default: 900, option: "rotation"))
    }
    guard rotation.map({ $0 >= 1 }) ?? true else {
      throw ArgumentParser.usage("--rotation must be at least 1 second", suggestion: nil, command: "serve")
    }
    // Loaded by the daemon when it can: on a locked node it waits for `unlock` instead.
    let identity: @Sendable () throws -> NodeIdentity = {
      try NodeIdentity.load(paths: paths, rotationSeconds: rotation)
    }
    _ = try NodeConfig.load(paths: paths)
    let interfaces = try selectedInterfaces(context.arguments.all("interface"))
    guard let port = UInt16(context.arguments.value("port") ?? "0") else {
      throw ArgumentParser.usage("--port needs a number from 0 to 65535", suggestion: nil, command: "serve")
    }
    let syncEvery = try context.arguments.value("sync-every").map { text -> Double in
      guard let seconds = DurationText.seconds(text), seconds >= 1 else {
        throw ArgumentParser.usage(
          "--sync-every needs a duration from 1 s to 366 days, such as 90s, 10m or 1h", suggestion: nil,
          command: "serve")
      }
      return seconds
    }
    let stop = StopFlag()
    let reload = ReloadRequest()
    let signals = [SIGTERM, SIGINT, SIGHUP].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { number == SIGHUP ? reload.set() : stop.set() }
      source.resume()
      return source
    }
    let printer = LinePrinter()
    let keys = DeviceKeys(paths: paths)
    let engine = try ServeEngine(
      paths: paths, gate: gate, identity: identity, port: port, interfaces: interfaces,
      logger: context.logger.scoped("serve"),
      report: { printer.error("memo-peer serve: \($0)", priority: servePriority($0)) },
      syncEvery: syncEvery, notifier: SystemdNotifier(), reloadRequest: reload,
      collaborators: ServeEngine.Collaborators(
        clock: { wallClock() }, keys: keys, receiptDelay: context.tuning.receiptDelay))
    let alerts = desktopAlerts(paths: paths, environment: context.environment)
    let web = try startWeb(context, paths: paths, printer: printer)
    defer { web?.stop() }
    try runBlocking { try await engine.run(until: stop) }
    alerts?.cancel()
    withExtendedLifetime(signals) {}
  }

  static let status = Command(
    name: "status", summary: "Show this node's protection, consent and what its daemon is doing.",
    details: """
      Protection: the class and whether memo content is locked. The daemon state comes from
      `serve`: waiting (and for what), advertising (as what, where), or not running, and
      whether it finds the memos locked.
      """,
    options: [OptionSpec("json", "print the status as JSON")],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let status = try StatusJSON(paths: paths)
    if context.wantsJSON {
      context.printJSON(status)
      return
    }
    context.console.print(ProtectionCommands.describe(try DeviceKeys(paths: paths).status()))
    for scope in ConsentScope.allCases {
      context.console.print("consent \(scope.rawValue): \(status.consent[scope.rawValue]!)")
    }
    context.console.print(
      "daemon: " + (status.serve?.summary ?? "not running (start it with `memo-peer serve`)"))
  }

  /// `status --json`: consent per scope, the daemon, the protection.
  struct StatusJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let consent: [String: String]
    let running: Bool
    let serve: ServeStatus?
    let protection: ProtectionCommands.ProtectionJSON

    init(paths: NodePaths) throws {
      let gate = try ConsentGate(paths: paths)
      var consent: [String: String] = [:]
      for scope in ConsentScope.allCases { consent[scope.rawValue] = try gate.state(scope).name }
      self.consent = consent
      let serve = ServeStatus.read(paths)
      running = serve?.isRunning ?? false
      self.serve = running ? serve : nil
      protection = .init(try DeviceKeys(paths: paths).status(), changed: nil)
    }
  }

  // MARK: - Helpers

  /// Desktop notifications for the user daemon, checked once a second; nil without a
  /// session bus (the system daemon). The "Open" action runs the notice's command in the
  /// desktop's terminal (x-terminal-emulator), when there is one.
  static func desktopAlerts(paths: NodePaths, environment: [String: String]) -> (any DispatchSourceTimer)? {
    guard let bus = SessionBusNotifications(environment: environment) else { return nil }
    let executable = (try? Clipboard.ownExecutable()) ?? "memo-peer"
    let search = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    let terminal = search.map { $0 + "/x-terminal-emulator" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    let watcher = DesktopAlertWatcher(paths: paths, notifier: bus) { command in
      guard let terminal, let first = command.first else { return }
      let program = first == "memo-peer" ? executable : first
      _ = try? ToolProcess.run(terminal, ["-e", program] + command.dropFirst(), input: nil, detach: true)
    }
    let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "memo-peer.desktop-alerts"))
    timer.schedule(deadline: .now(), repeating: .seconds(1))
    timer.setEventHandler { watcher.check() }
    timer.resume()
    return timer
  }

  /// The journal priority of a line from `serve`: waiting on something that is broken (the
  /// mDNS daemon, the port, a registration, an unreadable log) is a warning; waiting for a
  /// person's consent, and every other state change, is a notice.
  static func servePriority(_ line: String) -> JournalStream.Priority {
    guard line.hasPrefix("waiting (") else { return .notice }
    return line.hasPrefix("waiting (local-network consent") ? .notice : .warning
  }

  /// `serve --web`: the page, beside the daemon. Its link goes only to the runtime file
  /// (`memo-peer web` prints it, `--open` opens it), never to the daemon's log.
  static func startWeb(_ context: CommandContext, paths: NodePaths, printer: LinePrinter) throws -> LocalWebServer? {
    let port = try WebCommands.webPort(context.arguments.value("web-port"), option: "web-port", command: "serve")
    guard context.arguments.has("web") else {
      if port != nil {
        throw ArgumentParser.usage("--web-port needs --web", suggestion: nil, command: "serve")
      }
      return nil
    }
    let files = try WebRuntimeFiles(paths: paths, environment: context.environment)
    if let running = files.running() {
      throw MemoPeerError(
        .io, "a web server of this node already runs (pid \(running.pid), port \(running.port))",
        hint: "stop it, or run serve without --web")
    }
    let server = try LocalWebServer(
      paths: paths, files: files, addresses: LoopbackAddress.allCases, port: port,
      logger: context.logger.scoped("web"),
      report: { printer.error("memo-peer serve: \($0)", priority: servePriority($0)) },
      onSignIn: { _ in printer.error("memo-peer serve: a browser signed in to the web page") })
    printer.error(
      "memo-peer serve: web page on \(server.server.baseURLs.joined(separator: " and ")); sign in with `memo-peer web --open`"
    )
    return server
  }

  /// Asks for consent on a terminal when none is recorded; refuses otherwise.
  static func obtainConsent(for use: LocalNetworkUse, gate: ConsentGate, context: CommandContext) throws {
    switch try gate.verdict(for: use) {
    case .allowed: return
    case .refused(let error): throw error
    case .needsConsent(let scope):
      guard context.console.stdinIsTerminal else { throw ConsentGate.consentRequired(scope, manifest: gate.manifest) }
      let answer = try context.console.ask("\(gate.manifest.promptText)\nAllow / Don't Allow? ")
      let normalized = answer.trimmingWhitespace.lowercased()
      let allowed = ["allow", "a", "y", "yes"].contains(normalized)
      try gate.record(allowed ? .granted : .denied, scope: scope, method: .prompt, note: nil, now: context.now)
      if !allowed {
        if case .refused(let error) = try gate.verdict(for: use) { throw error }
      }
    }
  }

  /// `consent status --json`: each scope's state and last record, and the usage text the
  /// prompts show (on the terminal and on the web page).
  struct ConsentJSON: Encodable {
    struct Scope: Encodable {
      let state: String
      let last: ConsentRecord?
    }
    let schema = OutputFormat.jsonSchema
    let scopes: [String: Scope]
    let usageText: String
    let serviceTypes: [String]
    enum CodingKeys: String, CodingKey {
      case schema, scopes
      case usageText = "usage_text"
      case serviceTypes = "service_types"
    }

    init(gate: ConsentGate, records: [ConsentRecord]) {
      var scopes: [String: Scope] = [:]
      for scope in ConsentScope.allCases {
        scopes[scope.rawValue] = Scope(
          state: ConsentState.of(scope, in: records).name, last: records.last { $0.scope == scope })
      }
      self.scopes = scopes
      usageText = gate.manifest.promptText
      serviceTypes = gate.manifest.serviceTypes
    }
  }

  static func printConsentStatus(gate: ConsentGate, context: CommandContext) {
    let records = (try? gate.log.records()) ?? []
    if context.wantsJSON {
      context.printJSON(ConsentJSON(gate: gate, records: records))
      return
    }
    for scope in ConsentScope.allCases {
      var line = "\(scope.rawValue): \(ConsentState.of(scope, in: records).name)"
      if let last = records.last(where: { $0.scope == scope }) {
        line += " (\(OutputFormat.localTime(last.time)), by \(last.user), via \(last.method.rawValue))"
      }
      context.console.print(line)
    }
    context.console.print("usage description: \(gate.manifest.usageDescription)")
    context.console.print("declared service types: \(gate.manifest.serviceTypes.joined(separator: ", "))")
  }

  static func line(_ sighting: PeerSighting, allTypes: Bool) -> String {
    // Every value here but the interface came from the network (or the trust store).
    let instance = sighting.instance.terminalSafe
    if allTypes { return "\(sighting.event == .added ? "+" : "-") \(instance).\(sighting.type.terminalSafe)" }
    guard sighting.event == .added else { return "- \(instance)  left (\(sighting.interface))" }
    var text = "+ \(instance)"
    if let port = sighting.port {
      text += "  " + (sighting.addresses.first.map { "\($0.terminalSafe) port \(port)" } ?? "port \(port)")
    }
    text += "  \(sighting.interface)"
    if let tag = sighting.tag { text += "  tag=\(tag.terminalSafe)" }
    if sighting.own { text += "  (this node)" }
    if let name = sighting.trustedName { text += "  trusted: \(name.terminalSafe)" }
    if let name = sighting.pairingName {
      text += "  pairing window open: “\(name.terminalSafe)”"
      if !DeviceName.isValidPairingName(name) { text += " (not a valid name: `pair` ignores it)" }
    }
    return text
  }

  static func seconds(_ text: String?, default value: Double, option: String) throws -> Double {
    guard let text else { return value }
    guard let number = Double(text), number > 0, number <= 86400 else {
      throw ArgumentParser.usage("--\(option) needs a number of seconds", suggestion: nil, command: nil)
    }
    return number
  }

  static func formatSeconds(_ value: Double) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
  }

  static func selectedInterfaces(_ names: [String]) throws -> [NetworkInterface] {
    guard !names.isEmpty else { return [] }
    let available = NetworkInterfaces.all()
    return try names.map { name in
      guard let interface = available.first(where: { $0.name == name }) else {
        throw MemoPeerError(
          .usage, "there is no interface named \(ArgumentParser.echo(name))",
          hint: "interfaces here: " + available.map(\.name).joined(separator: ", "))
      }
      return interface
    }
  }
}

/// A count shared between tasks.
final class Counter: Sendable {
  private let count = Mutex(0)
  var value: Int { count.withLock { $0 } }
  func increment() { count.withLock { $0 += 1 } }
}

/// Milliseconds since the epoch, now.
func wallClock() -> Timestamp { Timestamp((Date().timeIntervalSince1970 * 1000).rounded()) }
