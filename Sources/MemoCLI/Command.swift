import Foundation
import MemoCore
import MemoStore

/// A command: its help and its action. The action gets parsed arguments and a context; it
/// only calls the libraries and prints.
struct Command: Sendable {
  let name: String
  let summary: String
  /// Text after the summary in `--help`: what it does in more detail.
  let details: String
  let options: [OptionSpec]
  let positionals: [PositionalSpec]
  let run: @Sendable (CommandContext) throws -> Void

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
  private var openedStore: MemoStore?

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

  var wantsJSON: Bool { arguments.has("json") }

  var now: Timestamp { Timestamp((Date().timeIntervalSince1970 * 1000).rounded()) }

  func paths() throws -> NodePaths { try NodePaths.resolve(environment: environment) }

  /// Opens (on first use, creates) this node's store.
  func store() throws -> MemoStore {
    if let openedStore { return openedStore }
    let store = try MemoStore.open(paths: try paths(), logger: logger.scoped("store"))
    openedStore = store
    return store
  }

  /// Resolves the command's first positional argument as a memo id or unique prefix.
  func memoID(at index: Int = 0) throws -> MemoID {
    try store().resolve(arguments.positional(index) ?? "")
  }

  func printJSON(_ value: some Encodable) { console.write(OutputFormat.json(value)) }
}

extension String {
  func padding(to width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
