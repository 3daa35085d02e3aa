import FoundationEssentials
import MemoApp
import MemoCore
import MemoSystem

/// A command: its help and its action. The action gets parsed arguments and a context; it
/// reads its declared options, calls a use case (`context.app()`, MemoApp) and prints the
/// result.
struct Command: Sendable {
  let name: String
  let summary: String
  /// Text after the summary in `--help`: what it does in more detail.
  let details: String
  /// The command's own options (the common ones come on top), in the order `--help` lists them.
  let options: [OptionSpec]
  let positionals: [PositionalSpec]
  let run: @Sendable (CommandContext) throws -> Void

  /// `options` are the keys the command reads its options by (see `OptionKey`).
  init(
    name: String, summary: String, details: String, options: [any OptionKey], positionals: [PositionalSpec],
    run: @escaping @Sendable (CommandContext) throws -> Void
  ) {
    self.name = name
    self.summary = summary
    self.details = details
    self.options = options.map(\.spec)
    self.positionals = positionals
    self.run = run
  }

  var usageLine: String {
    var parts = ["memo-peer", name]
    parts += positionals.map { ($0.optional ? "[\($0.name)]" : $0.name) + ($0.variadic ? "…" : "") }
    if !options.isEmpty { parts.append("[options]") }
    return parts.joined(separator: " ")
  }

  var help: String {
    var lines = ["Usage: \(usageLine)", "", summary]
    if !details.isEmpty { lines += ["", details] }
    if !positionals.isEmpty {
      lines += ["", "Arguments:"]
      lines += positionals.map { "  " + $0.name.padding(to: 22) + $0.help }
    }
    lines += ["", "Options:"]
    for option in options + ArgumentParser.common {
      var flag = (option.short.map { "-\($0), " } ?? "    ") + "--" + option.name
      if let value = option.value { flag += " " + value }
      lines.append("  " + flag.padding(to: 22) + option.help)
    }
    return lines.joined(separator: "\n")
  }
}

/// Everything a command may use. Built once per process.
final class CommandContext {
  let arguments: ParsedArguments
  let environment: [String: String]
  let console: Console
  let logger: Logger
  let tuning: MemoPeerCLI.Tuning
  private var openedApp: App?

  init(
    arguments: ParsedArguments, environment: [String: String], console: Console, logger: Logger,
    tuning: MemoPeerCLI.Tuning = MemoPeerCLI.Tuning()
  ) {
    self.arguments = arguments
    self.environment = environment
    self.console = console
    self.logger = logger
    self.tuning = tuning
  }

  /// `--json` (`SharedOptions.json`), for the commands that declare it.
  var wantsJSON: Bool { arguments.has(SharedOptions.json) }

  func paths() throws -> NodePaths { try NodePaths.resolve(environment: environment) }

  /// This command's use of the node, made on first use: its paths (from the environment),
  /// the wall clock and the command's logger. The use cases hang off it.
  func app() throws -> App {
    if let openedApp { return openedApp }
    let app = App(paths: try paths(), logger: logger, clock: App.wallClock)
    openedApp = app
    return app
  }

  func printJSON(_ value: some Encodable) { console.write(OutputFormat.json(value)) }
}

extension String {
  func padding(to width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
