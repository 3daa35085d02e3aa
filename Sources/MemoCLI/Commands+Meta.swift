import FoundationEssentials
import MemoApp
import MemoCore
import MemoMarkdown

/// Commands about the command line itself: help, the man page, shell completions.
enum MetaCommands {
  /// The options of `help`.
  enum HelpOptions {
    static let man = Flag("man", "write the manual page memo-peer(1) in roff")
  }

  static let help = Command(
    name: "help", summary: "Explain a command, or write the manual page (--man).",
    details: """
      Without COMMAND, lists the commands. `memo-peer help --man` writes memo-peer(1) in roff
      to stdout, from the same table as every --help (`memo-peer help --man | man -l -`).
      """,
    options: [HelpOptions.man],
    positionals: [PositionalSpec(name: "COMMAND", optional: true, help: "the command to explain", completion: .command)]
  ) { context in
    if context.arguments.has(HelpOptions.man) {
      context.console.write(
        Array(
          ManPage.render(
            commands: MemoPeerCLI.commands, version: MemoPeerCLI.version, date: manDate(context.environment)
          ).utf8))
      return
    }
    guard let topic = context.arguments.positional(0) else {
      context.console.print(MemoPeerCLI.overview)
      return
    }
    guard let command = MemoPeerCLI.commands.first(where: { $0.name == topic }) else {
      throw MemoPeerCLI.unknownCommand(topic)
    }
    context.console.print(command.help)
  }

  /// The options of `completions`.
  enum CompletionsOptions {
    static let values = ValueOption(
      "values", value: "SOURCE", "print the values a shell completes: memo-ids, peers or notebooks",
      completion: .choices(CompletionSource.allCases.map(\.rawValue)))
    static let prefix = ValueOption("prefix", value: "TEXT", "with --values: only values starting with TEXT")
  }

  static let completions = Command(
    name: "completions", summary: "Print shell completions for bash, zsh or fish.",
    details: """
      bash: `memo-peer completions bash > ~/.local/share/bash-completion/completions/memo-peer`
      (the Debian package installs all three). Memo ids, peer names and notebook names are
      completed by asking `memo-peer completions --values memo-ids|peers|notebooks`, which
      prints ids and names only, never memo content, works while the node is locked, and
      never creates a node.
      """,
    options: [CompletionsOptions.values, CompletionsOptions.prefix],
    positionals: [
      PositionalSpec(
        name: "SHELL", optional: true, help: "bash, zsh or fish",
        completion: .choices(Completions.Shell.allCases.map(\.rawValue)))
    ]
  ) { context in
    if let name = context.arguments[CompletionsOptions.values] {
      guard let source = CompletionSource(rawValue: name) else {
        throw ArgumentParser.usage(
          "unknown value source \(ArgumentParser.echo(name))",
          suggestion: ArgumentParser.closest(to: name, among: CompletionSource.allCases.map(\.rawValue)),
          command: "completions")
      }
      for value in try CompletionValues.values(
        of: source, prefix: context.arguments[CompletionsOptions.prefix] ?? "", context)
      {
        context.console.print(value)
      }
      return
    }
    guard let name = context.arguments.positional(0) else {
      throw ArgumentParser.usage("missing SHELL (bash, zsh or fish)", suggestion: nil, command: "completions")
    }
    guard let shell = Completions.Shell(rawValue: name) else {
      throw ArgumentParser.usage(
        "unknown shell \(ArgumentParser.echo(name))",
        suggestion: ArgumentParser.closest(to: name, among: Completions.Shell.allCases.map(\.rawValue)),
        command: "completions")
    }
    context.console.write(Array(Completions.script(for: shell, commands: MemoPeerCLI.commands).utf8))
  }

  /// The man page's date: SOURCE_DATE_EPOCH's (reproducible builds), else today's, in UTC.
  static func manDate(_ environment: [String: String]) -> String {
    let seconds = environment["SOURCE_DATE_EPOCH"].flatMap(TimeInterval.init) ?? Date().timeIntervalSince1970
    return String(MarkdownMemo.isoTime(Timestamp((seconds * 1000).rounded(.down))).prefix(10))
  }
}

/// The values `completions --values` prints. Ids and names only: a shell shows them to
/// whoever is at the keyboard, and may keep them in its history.
enum CompletionValues {
  /// More would not help a person choosing at a prompt, and would make TAB slow.
  static let limit = 1000

  static func values(of source: CompletionSource, prefix: String, _ context: CommandContext) throws -> [String] {
    // Never creates a node, never counts as use for the idle timeout.
    let info = try context.app().info
    switch source {
    case .memoIDs: return shortestUnique(try info.memoIDs(prefix: prefix, limit: limit).map(\.rawValue))
    case .peers: return try info.peerNames().filter { completable($0, prefix: prefix) }
    // Names only (never a memo).
    case .notebooks: return try info.notebookNames().filter { completable($0, prefix: prefix) }
    }
  }

  /// A name a shell may offer: it starts with what was typed, and holds no control
  /// character and no whitespace but plain spaces.
  static func completable(_ name: String, prefix: String) -> Bool {
    name.hasPrefix(prefix) && name.unicodeScalars.allSatisfy { !$0.properties.isWhitespace || $0 == " " }
      && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
  }

  /// Each id cut to the short form `list` shows (8), longer where two ids share it.
  static func shortestUnique(_ ids: [String]) -> [String] {
    // In sorted order an id shares its longest prefix with a neighbour.
    let sorted = ids.sorted()
    var length: [String: Int] = [:]
    for (index, id) in sorted.enumerated() {
      var needed = 8
      for neighbour in [index - 1, index + 1] where sorted.indices.contains(neighbour) {
        needed = max(needed, zip(id, sorted[neighbour]).prefix { $0 == $1 }.count + 1)
      }
      length[id] = needed
    }
    return ids.map { String($0.prefix(length[$0] ?? 8)) }
  }
}
