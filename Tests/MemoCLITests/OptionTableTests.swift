import XCTest

@testable import MemoCLI

/// Every option and positional argument a command declares reaches every place a person
/// finds it: the command's `--help`, the bash, zsh and fish completions and the man page,
/// all generated in-process from the command table. A new option cannot be forgotten in
/// one of them, and a table that would confuse the parser (two options of one name) fails.
final class OptionTableTests: XCTestCase {
  /// What the table is turned into, each from the same commands.
  struct Outputs {
    let help: [String: String]
    let bash: String
    let zsh: String
    let fish: String
    let man: String

    init(_ commands: [Command]) {
      help = Dictionary(uniqueKeysWithValues: commands.map { ($0.name, $0.help) })
      bash = Completions.script(for: .bash, commands: commands)
      zsh = Completions.script(for: .zsh, commands: commands)
      fish = Completions.script(for: .fish, commands: commands)
      // What `memo-peer help --man` writes.
      man = ManPage.render(commands: commands, version: MemoPeerCLI.version, date: "2025-12-01")
    }
  }

  func testEveryDeclaredOptionAndArgumentIsInHelpCompletionsAndManPage() {
    let commands = MemoPeerCLI.commands
    XCTAssertEqual(Self.missing(commands, in: Outputs(commands)), [])
  }

  /// The check above can fail: outputs made from a table without `show --plain` and
  /// `show`'s ID miss both in each of the five places.
  func testTheCheckCatchesAnOptionAndAnArgumentMissingEverywhere() {
    let table = MemoPeerCLI.commands.map { command -> Command in
      guard command.name == "show" else { return command }
      return Command(
        name: command.name, summary: command.summary, details: command.details,
        options: command.options.filter { $0.name != "plain" }, positionals: [], run: command.run)
    }
    let missing = Self.missing(MemoPeerCLI.commands, in: Outputs(table))
    let expected = ["help", "bash", "zsh", "fish", "man"].flatMap { ["\($0): show --plain", "\($0): show ID"] }
    XCTAssertEqual(missing.sorted(), expected.sorted())
  }

  /// Names the parser tells apart: no two options of a command share a name or a short
  /// form, none shadows a common option, no two positionals share a name.
  func testEveryCommandDeclaresEachOptionOnce() {
    for command in MemoPeerCLI.commands {
      let options = command.options + ArgumentParser.common
      let names = options.map(\.name)
      XCTAssertEqual(Set(names).count, names.count, "\(command.name): an option name twice in \(names)")
      let shorts = options.compactMap(\.short)
      XCTAssertEqual(Set(shorts).count, shorts.count, "\(command.name): a short option twice in \(shorts)")
      let positionals = command.positionals.map(\.name)
      XCTAssertEqual(Set(positionals).count, positionals.count, "\(command.name): \(positionals)")
      for (index, positional) in command.positionals.enumerated() where positional.variadic {
        XCTAssertEqual(index, command.positionals.count - 1, "\(command.name): only the last one takes the rest")
      }
      for option in options {
        XCTAssertTrue(Completions.safe(option.name), "\(command.name) --\(option.name): letters, digits and -")
      }
    }
  }

  // MARK: - The check

  /// `"place: command --option"` (or `"place: command ARGUMENT"`) for each declared option and
  /// positional of `commands` that an output lacks.
  static func missing(_ commands: [Command], in outputs: Outputs) -> [String] {
    var missing: [String] = []
    for command in commands {
      let options = command.options + ArgumentParser.common
      func check(_ place: String, _ found: (OptionSpec) -> Bool, _ foundArgument: (Int, PositionalSpec) -> Bool) {
        for option in options where !found(option) { missing.append("\(place): \(command.name) --\(option.name)") }
        for (index, positional) in command.positionals.enumerated() where !foundArgument(index, positional) {
          missing.append("\(place): \(command.name) \(positional.name)")
        }
      }
      let help = Help(outputs.help[command.name] ?? "")
      check("help", help.has, help.has)
      let bash = Bash(outputs.bash, command: command.name)
      check("bash", bash.has, bash.has)
      let zsh = Zsh(outputs.zsh, command: command.name)
      check("zsh", zsh.has, zsh.has)
      let fish = Fish(outputs.fish, command: command.name)
      check("fish", fish.has, fish.has)
      let man = Man(outputs.man, command: command.name)
      check("man", man.has, man.has)
    }
    return missing
  }

  /// `--help`: a line of its own under "Options:" and "Arguments:", with the help text.
  struct Help {
    let lines: [String]

    init(_ text: String) { lines = text.split(separator: "\n").map(String.init) }

    func has(_ option: OptionSpec) -> Bool {
      var flag = (option.short.map { "-\($0), " } ?? "    ") + "--" + option.name
      if let value = option.value { flag += " " + value }
      return lines.contains { $0.hasPrefix("  " + flag + " ") && $0.hasSuffix(option.help) }
    }

    func has(_ index: Int, _ positional: PositionalSpec) -> Bool {
      lines.contains { $0.hasPrefix("  " + positional.name + " ") && $0.hasSuffix(positional.help) }
        && (lines.first?.contains(positional.name) ?? false)
    }
  }

  /// bash: the command's arm of `case $cmd` lists the option's words, knows which take a
  /// value (and completes it after `$prev`), and has one entry per positional.
  struct Bash {
    let arm: [String]

    init(_ script: String, command: String) { arm = Self.block(script, from: "    \(command))", to: "      ;;") }

    func quoted(_ variable: String) -> [String] {
      guard let line = arm.first(where: { $0.hasPrefix("      \(variable)='") }) else { return [] }
      return line.dropFirst(variable.count + 8).dropLast().split(separator: " ").map(String.init)
    }

    func has(_ option: OptionSpec) -> Bool {
      let words = option.words
      let listed = Set(words).isSubset(of: quoted("options"))
      let takesValue = Set(words).isSubset(of: quoted("takes_value"))
      let completesValue = arm.contains { $0.hasPrefix("        \(words.joined(separator: "|"))) _memo_peer_values ") }
      return listed && (option.value == nil ? !takesValue && !completesValue : takesValue && completesValue)
    }

    /// `positions=(KIND …)`: the positional's kind of value at its place.
    func has(_ index: Int, _ positional: PositionalSpec) -> Bool {
      guard let line = arm.first(where: { $0.hasPrefix("      positions=(") }) else { return false }
      let kinds = Array(line.dropFirst(17).matches(of: /'[^']*'|[^ ()']+/).map { String($0.0) })
      return index < kinds.count && Self.kind(positional.completion, matches: kinds[index])
    }

    static func kind(_ completion: ValueCompletion, matches word: String) -> Bool {
      switch completion {
      case .none: word == "none"
      case .file: word == "file"
      case .directory: word == "directory"
      case .command: word == "command"
      case .dynamic(let source): word == source.rawValue
      case .choices(let choices): word == "'choices:\(choices.joined(separator: " "))'"
      }
    }

    /// The lines after `start` up to the first `end`.
    static func block(_ text: String, from start: String, to end: String) -> [String] {
      let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      guard let first = lines.firstIndex(of: start) else { return [] }
      return Array(lines[(first + 1)...].prefix { $0 != end })
    }
  }

  /// zsh: the command's `_arguments` has a spec for the option (with its value) and for each
  /// positional, by number.
  struct Zsh {
    let specs: [String]

    init(_ script: String, command: String) {
      specs = Bash.block(script, from: "        \(command))", to: "          ;;")
    }

    func has(_ option: OptionSpec) -> Bool {
      let repeats = option.repeatable ? "*" : ""
      let start =
        option.short.map { "'\(repeats)(-\($0) --\(option.name))'{-\($0),--\(option.name)}'[" }
        ?? "'\(repeats)--\(option.name)["
      return specs.contains { line in
        let spec = line.trimmingCharacters(in: .whitespaces)
        guard spec.hasPrefix(start) else { return false }
        return option.value.map { spec.contains("]:\($0):") } ?? spec.hasSuffix("]' \\") || spec.hasSuffix("]'")
      }
    }

    func has(_ index: Int, _ positional: PositionalSpec) -> Bool {
      let spec = "'\(positional.optional ? ":" : "")\(index + 1):\(positional.name):"
      return specs.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(spec) }
    }
  }

  /// fish: a `complete` line for the option under the command (requiring a value when it
  /// takes one), every value option in the positional counter's skip list, and a line for
  /// each positional there is something to offer for (fish needs none for free text).
  struct Fish {
    let lines: [String]
    let command: String

    init(_ script: String, command: String) {
      self.command = command
      lines = script.split(separator: "\n").map(String.init)
    }

    func has(_ option: OptionSpec) -> Bool {
      var start = "complete -c memo-peer -n '__fish_seen_subcommand_from \(command)' -l \(option.name)"
      if let short = option.short { start += " -s \(short)" }
      let takesValue = { (line: String) in line.hasPrefix(start + " -x") || line.hasPrefix(start + " -r") }
      guard let line = lines.first(where: { $0.hasPrefix(start + " ") }) else { return false }
      guard option.value != nil else { return !takesValue(line) }
      // Each positional's condition skips the option's value when counting.
      let skipped = positionConditions.allSatisfy { Set(option.words).isSubset(of: $0) }
      return takesValue(line) && skipped
    }

    /// The words of each `-n '__memo_peer_position COMMAND N WORD…'`.
    var positionConditions: [[String]] {
      lines.filter { $0.hasPrefix("complete -c memo-peer -n '__memo_peer_position \(command) ") }.map {
        $0.split(separator: "'")[1].split(separator: " ").map(String.init)
      }
    }

    func has(_ index: Int, _ positional: PositionalSpec) -> Bool {
      if positional.completion == .none { return true }
      return positionConditions.contains { $0.count >= 3 && $0[2] == String(index) }
    }
  }

  /// The man page: the command's subsection has an item (`.TP`) for the option, with its
  /// value and help, and one for each positional; common options are in COMMON OPTIONS.
  struct Man {
    let section: [String]
    let common: [String]

    init(_ roff: String, command: String) {
      let lines = roff.split(separator: "\n").map(String.init)
      func part(after start: (String) -> Bool) -> [String] {
        guard let first = lines.firstIndex(where: start) else { return [] }
        return Array(lines[(first + 1)...].prefix { !$0.hasPrefix(".SS") && !$0.hasPrefix(".SH") })
      }
      let heading = ".SS \"memo\\-peer \(ManPage.escape(command))"
      section = part { $0.hasPrefix(heading + " ") || $0 == heading + "\"" }
      common = part { $0 == ".SH COMMON OPTIONS" }
    }

    func has(_ option: OptionSpec) -> Bool {
      var flag = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
      flag += "\\fB\\-\\-" + ManPage.escape(option.name) + "\\fR"
      if let value = option.value { flag += " \\fI" + ManPage.escape(value) + "\\fR" }
      let isCommon = ArgumentParser.common.contains { $0.name == option.name }
      return Self.item(in: isCommon ? common : section, [flag, ManPage.escape(option.help)])
    }

    func has(_ index: Int, _ positional: PositionalSpec) -> Bool {
      let name = "\\fI" + ManPage.escape(positional.name) + "\\fR" + (positional.optional ? " (optional)" : "")
      return Self.item(in: section, [name, ManPage.escape(positional.help)])
    }

    /// `.TP` followed by exactly these lines.
    static func item(in lines: [String], _ expected: [String]) -> Bool {
      lines.indices.contains { index in
        lines[index] == ".TP" && Array(lines[(index + 1)...].prefix(expected.count)) == expected
      }
    }
  }
}
