import MemoCore
import MemoPresentation
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The memo-peer command line. `main` parses, runs one command and returns the exit status;
/// it never lets an error escape as a crash, and never prints memo content in an error.
public enum MemoPeerCLI {
  public static let version = "0.1.0"

  static let commands: [Command] = [
    NodeCommands.initialize, MemoCommands.new, MemoCommands.list, MemoCommands.show, MemoCommands.edit,
    MemoCommands.delete, MemoCommands.search, NodeCommands.export, NodeCommands.import, NetworkCommands.consent,
    NetworksCommands.network,
    NetworkCommands.browse, NetworkCommands.serve, NetworkCommands.status, TrustCommands.id, TrustCommands.trust,
    PairingCommands.pair, PairingCommands.ping, DeliveryCommands.send, DeliveryCommands.outbox, DeliveryCommands.inbox,
    NotebookCommands.notebook, MemoCommands.move, DoctorCommand.doctor, ProtectionCommands.protect,
    ProtectionCommands.unlock, ProtectionCommands.lock,
    WidgetCommand.widget, SyncCommands.sync, SyncCommands.peers, SyncCommands.conflicts,
    HistoryCommands.history, HistoryCommands.diff, HistoryCommands.restore, HistoryCommands.trash,
    HistoryCommands.undo, WebCommands.web,
    MetaCommands.help,
    MetaCommands.completions,
  ]

  /// Knobs that only a test-only build turns (Tests/memo-peer-test-node): `memo-peer` itself
  /// always runs with the defaults, and no environment variable reaches them.
  public struct Tuning: Sendable {
    /// Seconds `serve` waits between storing a delivery and sending its receipt.
    public var receiptDelay: Double

    public init(receiptDelay: Double = 0) { self.receiptDelay = receiptDelay }
  }

  public static func main(arguments: [String], environment: [String: String], tuning: Tuning = Tuning()) -> Int32 {
    ProcessHardening.apply()
    umask(0o077)
    signal(SIGPIPE, SIG_IGN)
    let console = Console()
    defer { console.flush() }
    var rest = arguments
    var debug = false
    while let first = rest.first, first.hasPrefix("-") {
      rest.removeFirst()
      switch first {
      case CommonOptions.debug: debug = true
      case CommonOptions.help:
        console.print(overview)
        return 0
      case "--version":
        console.print("memo-peer \(version)")
        return 0
      default:
        return report(
          ArgumentParser.usage("unknown option \(ArgumentParser.echo(first))", suggestion: nil, command: nil), console,
          json: false)
      }
    }
    guard let name = rest.first else {
      console.error(overview)
      return 2
    }
    rest.removeFirst()
    if name == Clipboard.clearCommand {
      // The helper `show --copy` starts; not a command people type (see Clipboard).
      return Clipboard.runClearHelper(arguments: rest, environment: environment)
    }
    guard let command = commands.first(where: { $0.name == name }) else {
      return report(unknownCommand(name), console, json: false)
    }
    // Before parsing, so that a wrong command line is reported as JSON too.
    let wantsJSON = rest.contains { SharedOptions.json ~= $0 }
    do {
      let parsed = try ArgumentParser.parse(
        rest, options: command.options, positionals: command.positionals, command: command.name)
      if parsed.has(CommonOptions.help) {
        console.print(command.help)
        return 0
      }
      if !["init", "help", "completions"].contains(command.name) { try requireExistingHome(environment) }
      let logger = makeLogger(debug: debug || parsed.has(CommonOptions.debug))
      let context = CommandContext(
        arguments: parsed, environment: environment, console: console, logger: logger, tuning: tuning)
      do {
        try command.run(context)
        // Output that could not be written is a failure, not a success (`> /dev/full`).
        console.flush()
        if let failure = console.writeFailure { throw failure }
      } catch {
        logger.error(error, while: "running a command")
        if let error = error as? MemoPeerError, let diagnostics = error.diagnostics {
          logger.debug("diagnostics: \(diagnostics, privacy: .public)")
        }
        throw error
      }
      return 0
    } catch {
      return report(error, console, json: wantsJSON)
    }
  }

  static var overview: String {
    var lines = [
      "memo-peer \(version): private memos, shared only with your own devices on the local network.",
      "",
      "Usage: memo-peer [--debug] COMMAND [options]",
      "",
      "Commands:",
    ]
    lines += commands.map { "  " + $0.name.padding(to: 12) + $0.summary }
    lines += [
      "",
      "`memo-peer COMMAND --help` explains a command. Files live under the XDG directories,",
      "or under MEMO_PEER_HOME when it is set.",
    ]
    return lines.joined(separator: "\n")
  }

  /// A `MEMO_PEER_HOME` that does not exist is a typo far more often than a wish for a new
  /// node (which would get new keys and an empty store, silently): only `init` creates it.
  static func requireExistingHome(_ environment: [String: String]) throws {
    guard let home = environment["MEMO_PEER_HOME"], !home.isEmpty, access(home, F_OK) != 0 else { return }
    throw MemoPeerError(
      .usage,
      "MEMO_PEER_HOME is set to a directory that does not exist (\(TerminalText.render(home, limit: 256).text))",
      hint: "check its spelling; to make a new node there, run `memo-peer init` with this MEMO_PEER_HOME")
  }

  static func unknownCommand(_ name: String) -> MemoPeerError {
    let suggestion = ArgumentParser.closest(to: name, among: commands.map(\.name))
    // Echo only what looks like a command word: a mistaken argument might be memo text.
    let looksLikeCommand = name.count <= 20 && name.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "-") }
    return MemoPeerError(
      .usage, looksLikeCommand ? "unknown command \(name)" : "unknown command (not echoed: it is not a command word)",
      hint: (suggestion.map { "did you mean `memo-peer \($0)`? " } ?? "") + "see `memo-peer --help`")
  }

  /// Nothing is logged unless --debug is given, in every build.
  private static func makeLogger(debug: Bool) -> Logger {
    debug ? Logger(subsystem: "cli", minimumLevel: .debug, sink: StderrLogSink()) : .disabled
  }

  /// Prints an error for a person (or as JSON on stderr with --json) and returns its status.
  private static func report(_ error: any Error, _ console: Console, json: Bool) -> Int32 {
    if error is DoctorFound { return 1 }
    guard let error = error as? MemoPeerError else {
      console.error("memo-peer: internal error (\(Logger.describeType(of: error))); nothing was changed")
      return 1
    }
    if json {
      let detail = OutputFormat.ErrorJSON.Detail(error, wording: CLIRemedyText.words)
      console.error(
        String(decoding: OutputFormat.json(OutputFormat.ErrorJSON(error: detail)).dropLast(), as: UTF8.self))
    } else {
      // A message may name what a peer sent (a name, a device's text): each such value is
      // escaped where the message is made; this keeps anything else from reaching the
      // terminal raw.
      console.error("memo-peer: \(TerminalText.render(error.message, limit: 4096).text)")
      if let hint = CLIRemedyText.hint(error) { console.error("hint: \(TerminalText.render(hint, limit: 4096).text)") }
    }
    return error.exitStatus
  }
}
