import MemoApp
import MemoCore
import MemoPresentation

/// `network`: the networks memo-peer may use. It advertises, browses and dials only on a
/// network a person allowed; anywhere else it waits, as it does without consent.
enum NetworksCommands {
  enum Options {
    static let note = ValueOption("note", value: "TEXT", "a note stored with the decision")
    static let provisioning = Flag("provisioning", "record the decision as made by provisioning")
    static let json = SharedOptions.json.withHelp("print the networks (or the decision) as JSON")
  }

  static let actions = ["list", "allow", "deny"]

  static let network = Command(
    name: "network", summary: "List, allow or deny the networks memo-peer may use.",
    details: """
      memo-peer advertises, browses and dials only on networks a person allowed. A network
      is told apart by a keyed hash of its default gateway's hardware address and the
      interface's prefix (docs/PRIVACY.md): its id means nothing off this device. ACTION is
      list (default), allow or deny; allow and deny decide the network this device is on
      now, or the one ID names (an id the list shows). Each decision is appended to the
      consent log with the usage text. On a network nobody decided, `memo-peer browse` asks;
      `serve` waits, and `status` says why. --provisioning marks a decision made while
      setting up a trusted host (a system unit's setup step).
      """,
    options: [Options.note, Options.provisioning, Options.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list (default), allow or deny", completion: .choices(actions)),
      PositionalSpec(name: "ID", optional: true, help: "a network id the list shows (default: this network)"),
    ]
  ) { context in
    let action = context.arguments.positional(0) ?? "list"
    let networks = try context.app().networks
    let decision: ConsentDecision
    switch action {
    case "list":
      guard context.arguments.positional(1) == nil else {
        throw ArgumentParser.usage("network list takes no ID", suggestion: nil, command: "network")
      }
      let overview = try networks.overview()
      if context.wantsJSON { return context.printJSON(overview) }
      printOverview(overview, context: context)
      return
    case "allow": decision = .granted
    case "deny": decision = .denied
    default:
      throw ArgumentParser.usage(
        "unknown network action \(ArgumentParser.echo(action))",
        suggestion: ArgumentParser.closest(to: action, among: actions), command: "network")
    }
    let record = try networks.decide(
      decision, network: context.arguments.positional(1),
      method: context.arguments.has(Options.provisioning) ? .provisioning : .command,
      note: context.arguments[Options.note])
    if context.wantsJSON { return context.printJSON(record) }
    let name = (record.networkName ?? "?").terminalSafe
    context.console.print("network \(record.network ?? "?") (\(name)): \(decision == .granted ? "allowed" : "denied")")
    context.console.print("usage description: \(record.usageText.terminalSafe)")
  }

  static func printOverview(_ overview: NetworkConsentUseCases.Overview, context: CommandContext) {
    if let current = overview.current {
      context.console.print(
        "this network: \(current.id) (\(current.name.terminalSafe)): \(overview.currentState ?? "undetermined")")
    } else {
      context.console.print("this network: none (no interface but loopback has an address)")
    }
    for network in overview.networks {
      context.console.print(
        "\(network.current ? "*" : " ") \(network.id)  \(network.state)  \(network.name)  (\(network.method), \(network.at))"
      )
    }
    if overview.networks.isEmpty { context.console.print("no network decided yet") }
  }
}
