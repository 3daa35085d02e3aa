import Dispatch
import FoundationEssentials
import MemoApp
import MemoCore
import MemoNode
import MemoProtocol
import MemoSystem
import MemoWeb
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Commands that use the local network, all behind the consent gate.
enum NetworkCommands {
  /// The options of `browse`.
  enum BrowseOptions {
    static let timeout = SharedOptions.timeout.withHelp("how long to watch (default 5)")
    static let allTypes = Flag(
      "all-types", "list every service type on the network (needs the all-service-types scope)")
    static let type = ValueOption(
      "type", value: "TYPE", "browse another declared service type (default _memo-peer._tcp)")
    static let json = SharedOptions.json.withHelp("one JSON object per line for each peer event")
  }

  static let browse = Command(
    name: "browse", summary: "Find memo-peer devices on the local network (asks for consent first).",
    details: """
      The first use asks on the terminal, showing why memo-peer wants local-network access,
      and records the answer. Without a terminal and without a decision it sends nothing and
      exits with status 11; a denied consent exits with status 12 (PolicyDenied). Peers are
      printed as they come (+) and go (-) until the timeout.
      """,
    options: [BrowseOptions.timeout, BrowseOptions.allTypes, BrowseOptions.type, BrowseOptions.json],
    positionals: []
  ) { context in
    let allTypes = context.arguments.has(BrowseOptions.allTypes)
    let timeout = try seconds(context.arguments[BrowseOptions.timeout], default: 5, option: BrowseOptions.timeout)
    let printer = LinePrinter()
    let json = context.wantsJSON
    let found = try context.app().network.browse(
      type: context.arguments[BrowseOptions.type], allTypes: allTypes, timeout: timeout, prompt: context.console,
      onLocked: {
        printer.error("memo-peer: locked: this node and trusted devices are not recognised (`memo-peer unlock`)")
      },
      onSighting: { sighting in
        printer.print(
          json
            ? String(decoding: OutputFormat.json(sighting).dropLast(), as: UTF8.self)
            : line(sighting, allTypes: allTypes))
      })
    if found == 0 && !json {
      printer.error("no memo-peer device answered within \(formatSeconds(timeout)) (`memo-peer doctor` checks why)")
    }
  }

  /// The options of `consent`.
  enum ConsentOptions {
    static let scope = ValueOption(
      "scope", value: "SCOPE", "local-network (default), all-service-types or background-sync",
      completion: .choices(ConsentScope.allCases.map(\.rawValue)))
    static let note = ValueOption("note", value: "TEXT", "a note stored with the decision")
    static let provisioning = Flag("provisioning", "record the decision as made by provisioning")
    static let json = SharedOptions.json.withHelp("print the consent state as JSON")
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
    options: [ConsentOptions.scope, ConsentOptions.note, ConsentOptions.provisioning, ConsentOptions.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "status (default), grant, deny or revoke",
        completion: .choices(["status", "grant", "deny", "revoke"]))
    ]
  ) { context in
    let action = context.arguments.positional(0) ?? "status"
    let scopeName = context.arguments[ConsentOptions.scope] ?? ConsentScope.localNetwork.rawValue
    guard let scope = ConsentScope(named: scopeName) else {
      throw ArgumentParser.usage(
        "unknown consent scope \(ArgumentParser.echo(scopeName))",
        suggestion: ArgumentParser.closest(to: scopeName, among: ConsentScope.allCases.map(\.rawValue)),
        command: "consent")
    }
    let decision: ConsentDecision
    switch action {
    case "status":
      let app = try context.app()
      // A log that cannot be read shows as empty, and no network's state is told from it.
      printConsentStatus(
        try app.consent.overview(ignoringUnreadableLog: true), network: try? app.networks.current(), context: context)
      return
    case "grant": decision = .granted
    case "deny": decision = .denied
    case "revoke": decision = .revoked
    default:
      throw ArgumentParser.usage(
        "unknown consent action \(ArgumentParser.echo(action))",
        suggestion: ArgumentParser.closest(to: action, among: ["status", "grant", "deny", "revoke"]), command: "consent"
      )
    }
    let change = try context.app().consent.decide(
      decision, scope: scope, method: context.arguments.has(ConsentOptions.provisioning) ? .provisioning : .command,
      note: context.arguments[ConsentOptions.note])
    switch change {
    case .notGranted(let scope):
      context.console.print("\(scope.rawValue) is not granted; nothing to revoke")
    case .recorded(let record):
      if context.wantsJSON {
        context.printJSON(record)
      } else {
        context.console.print("\(scope.rawValue): \(decision.rawValue)")
        context.console.print("usage description: \(record.usageText)")
      }
    }
  }

  /// The options of `serve`.
  enum ServeOptions {
    static let port = ValueOption(
      "port", value: "PORT", "TCP port to listen on (default: the last run's when free, else any free one)")
    static let interface = RepeatedOption(
      "interface", value: "NAME", "advertise only on this interface (repeatable)")
    static let rotation = ValueOption(
      "rotation", value: "SECONDS", "rotation period of the pseudonym and tag (default: config, or 900)")
    static let syncEvery = ValueOption(
      "sync-every", value: "DURATION",
      "also sync with every trusted device this often (90s, 10m, 1h); needs the background-sync consent")
    static let web = Flag("web", "also serve the web page on this computer (see `memo-peer web`)")
    static let webPort = ValueOption(
      "web-port", value: "PORT", "the web page's port (default 8426 or the next free one)")
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
      devices. While the background-sync consent scope is granted it also keeps a
      connection open with every trusted device it can reach (live sync: at most 16, a
      keepalive after 30 s of quiet) and syncs on it every change stored here (by the
      CLI, the page, a delivery or a sync) as soon as it commits; `status` and `peers` say
      which devices are connected live. With --sync-every it also syncs on that schedule
      (without the grant it waits, and says so). With --web it also
      serves the page of `memo-peer web` on 127.0.0.1 and ::1 (sign in with `memo-peer web
      --open`; the link is never written to the log). SIGTERM or SIGINT withdraws the
      advertisement and exits 0.
      """,
    options: [
      ServeOptions.port, ServeOptions.interface, ServeOptions.rotation, ServeOptions.syncEvery, ServeOptions.web,
      ServeOptions.webPort,
    ],
    positionals: []
  ) { context in
    let rotation = try context.arguments[ServeOptions.rotation].map {
      Int64(try seconds($0, default: 900, option: ServeOptions.rotation))
    }
    guard rotation.map({ $0 >= 1 }) ?? true else {
      throw ArgumentParser.usage("--rotation must be at least 1 second", suggestion: nil, command: "serve")
    }
    guard let port = UInt16(context.arguments[ServeOptions.port] ?? "0") else {
      throw ArgumentParser.usage("--port needs a number from 0 to 65535", suggestion: nil, command: "serve")
    }
    let syncEvery = try context.arguments[ServeOptions.syncEvery].map { text -> Double in
      guard let seconds = DurationText.seconds(text), seconds >= 1 else {
        throw ArgumentParser.usage(
          "--sync-every needs a duration from 1 s to 366 days, such as 90s, 10m or 1h", suggestion: nil,
          command: "serve")
      }
      return seconds
    }
    let webPort = try WebCommands.webPort(
      context.arguments[ServeOptions.webPort], option: ServeOptions.webPort, command: "serve")
    if webPort != nil && !context.arguments.has(ServeOptions.web) {
      throw ArgumentParser.usage("--web-port needs --web", suggestion: nil, command: "serve")
    }
    let controls = DaemonControls()
    let signals = [SIGTERM, SIGINT, SIGHUP].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { number == SIGHUP ? controls.reload() : controls.stop() }
      source.resume()
      return source
    }
    let printer = LinePrinter(timestamps: true)
    let app = try context.app()
    let daemon = try app.daemon.prepare(
      DaemonOptions(
        port: port, interfaces: context.arguments[ServeOptions.interface], rotation: rotation, syncEvery: syncEvery,
        receiptDelay: context.tuning.receiptDelay),
      controls: controls, report: { printer.error("memo-peer serve: \($0)", priority: servePriority($0)) })
    let alerts = app.daemon.desktopAlerts(
      environment: context.environment, open: openInTerminal(environment: context.environment))
    let web =
      context.arguments.has(ServeOptions.web)
      ? try startWeb(context, paths: app.paths, port: webPort, printer: printer) : nil
    defer { web?.stop() }
    try daemon.run()
    alerts?.cancel()
    withExtendedLifetime(signals) {}
  }

  /// The options of `status`.
  enum StatusOptions {
    static let json = SharedOptions.json.withHelp("print the status as JSON")
  }

  static let status = Command(
    name: "status", summary: "Show this node's protection, consent and what its daemon is doing.",
    details: """
      Protection: the class and whether memo content is locked. The daemon state comes from
      `serve`: waiting (and for what), advertising (as what, where), or not running, and
      whether it finds the memos locked.
      """,
    options: [StatusOptions.json],
    positionals: []
  ) { context in
    let status = try context.app().status.current()
    if context.wantsJSON {
      context.printJSON(StatusJSON(status))
      return
    }
    context.console.print(ProtectionCommands.describe(status.protection))
    for scope in ConsentScope.allCases {
      context.console.print("consent \(scope.rawValue): \(status.consent[scope]?.name ?? "undetermined")")
    }
    if let network = status.network {
      let hint = network.state == "allowed" ? "" : " (memo-peer waits here; `memo-peer network allow` if it is yours)"
      context.console.print("network: \(network.name) (\(network.id)): \(network.state)\(hint)")
    } else {
      context.console.print("network: none")
    }
    context.console.print(
      "daemon: " + (status.serve?.summary ?? "not running (start it with `memo-peer serve`)"))
    TrustCommands.printRevocations(status.revocations, context: context)
    if !status.invitations.isEmpty {
      let count = status.invitations.count
      context.console.print(
        "invitations: \(count) notebook\(count == 1 ? "" : "s") shared with this device wait for you "
          + "(`memo-peer notebook invitations`)")
    }
    // Names need the trust store, sealed while locked: a device ID's start then.
    let names = try? context.names()
    for kept in status.keptAside {
      // The reason is this build's own text; a peer's name is escaped as every name is.
      let peer = names?.device(kept.peer) ?? kept.peer.short + "…"
      context.console.print("kept aside from \(peer): \(kept.count) × \(kept.reason)")
    }
  }

  // MARK: - Helpers

  /// What a desktop notice's "Open" action does: its command (memo-peer itself for
  /// `memo-peer …`) in the desktop's terminal (x-terminal-emulator), when there is one.
  static func openInTerminal(environment: [String: String]) -> @Sendable ([String]) -> Void {
    let executable = (try? Clipboard.ownExecutable()) ?? "memo-peer"
    let search = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    let terminal = search.map { $0 + "/x-terminal-emulator" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    return { command in
      guard let terminal, let first = command.first else { return }
      let program = first == "memo-peer" ? executable : first
      _ = try? ToolProcess.run(terminal, ["-e", program] + command.dropFirst(), input: nil, detach: true)
    }
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
  static func startWeb(_ context: CommandContext, paths: NodePaths, port: UInt16?, printer: LinePrinter) throws
    -> LocalWebServer
  {
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

  static func printConsentStatus(
    _ overview: ConsentOverview, network: NetworkConsentUseCases.Current?, context: CommandContext
  ) {
    if context.wantsJSON {
      context.printJSON(ConsentJSON(overview, network: network))
      return
    }
    for scope in ConsentScope.allCases {
      var line = "\(scope.rawValue): \(overview.state(scope).name)"
      if let last = overview.last(scope) {
        line += " (\(OutputFormat.localTime(last.time)), by \(last.user), via \(last.method.rawValue))"
      }
      context.console.print(line)
    }
    context.console.print("usage description: \(overview.manifest.usageDescription)")
    context.console.print("declared service types: \(overview.manifest.serviceTypes.joined(separator: ", "))")
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

  /// `text` (the value of `option`, or an argument that goes with it) as seconds.
  static func seconds(_ text: String?, default value: Double, option: some OptionKey) throws -> Double {
    guard let text else { return value }
    guard let number = Double(text), number > 0, number <= 86400 else {
      throw ArgumentParser.usage("--\(option.spec.name) needs a number of seconds", suggestion: nil, command: nil)
    }
    return number
  }

  static func formatSeconds(_ value: Double) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
  }
}
