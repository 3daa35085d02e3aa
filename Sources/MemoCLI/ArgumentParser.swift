import MemoCore

/// One option of a command: a flag (`value == nil`) or an option taking a value. The tables
/// (`--help`, the man page, the completions) are made of these; commands declare and read
/// their options through the typed keys below (`Flag`, `ValueOption`, `RepeatedOption`),
/// which are the only way to make one.
struct OptionSpec: Sendable {
  let name: String
  let short: Character?
  /// Placeholder shown in help (`TEXT`, `SECONDS`); nil for a flag.
  let value: String?
  let help: String
  let repeatable: Bool
  /// What a shell may offer for the value (generated completions).
  let completion: ValueCompletion

  /// How an option is given and read; reading it as another kind is a bug.
  enum Kind: Sendable, Equatable {
    /// `--name`: given or not (`Flag`).
    case flag
    /// `--name VALUE`, at most once (`ValueOption`).
    case value
    /// `--name VALUE`, any number of times (`RepeatedOption`).
    case repeated
  }

  var kind: Kind { value == nil ? .flag : repeatable ? .repeated : .value }

  /// The words that give it: `--name`, and `-x` when it has a short form.
  var words: [String] { ["--" + name] + (short.map { ["-" + String($0)] } ?? []) }

  /// `completion` defaults to what the placeholder says (`PEER`, `FILE`, `DIR`); see
  /// `ValueCompletion.inferred(from:)`.
  fileprivate init(
    _ name: String, short: Character? = nil, value: String? = nil, repeatable: Bool = false, _ help: String,
    completion: ValueCompletion? = nil
  ) {
    self.name = name
    self.short = short
    self.value = value
    self.help = help
    self.repeatable = repeatable
    self.completion = completion ?? value.map(ValueCompletion.inferred(from:)) ?? .none
  }

  /// The same option, explained for one command (a shared option's help names what it
  /// does there).
  fileprivate func withHelp(_ help: String) -> OptionSpec {
    OptionSpec(name, short: short, value: value, repeatable: repeatable, help, completion: completion)
  }
}

/// A declared option: the key a command reads it by. Each command declares its options once
/// (an enum of constants beside the command, shared ones in `SharedOptions`), lists the same
/// constants in its `Command`, and reads through them, so a misspelt option does not compile.
protocol OptionKey: Sendable {
  var spec: OptionSpec { get }
}

/// A flag (`--json`): given or not. Read with `ParsedArguments.has(_:)`.
struct Flag: OptionKey {
  let spec: OptionSpec

  init(_ name: String, short: Character? = nil, _ help: String) { spec = OptionSpec(name, short: short, help) }
  private init(spec: OptionSpec) { self.spec = spec }

  /// This flag with another command's help text (same name, same reading).
  func withHelp(_ help: String) -> Flag { Flag(spec: spec.withHelp(help)) }
}

/// An option with one value (`--title TEXT`), given at most once. Read with
/// `arguments[option]`, nil when absent.
struct ValueOption: OptionKey {
  let spec: OptionSpec

  /// `value` is the placeholder shown in help (`TEXT`, `SECONDS`).
  init(_ name: String, short: Character? = nil, value: String, _ help: String, completion: ValueCompletion? = nil) {
    spec = OptionSpec(name, short: short, value: value, help, completion: completion)
  }
  private init(spec: OptionSpec) { self.spec = spec }

  /// This option with another command's help text (same name, same reading).
  func withHelp(_ help: String) -> ValueOption { ValueOption(spec: spec.withHelp(help)) }
}

/// An option with a value that may be given several times (`--tag A --tag B`). Read with
/// `arguments[option]`, every value in order (empty when absent).
struct RepeatedOption: OptionKey {
  let spec: OptionSpec

  /// `value` is the placeholder shown in help (`TAG`).
  init(_ name: String, short: Character? = nil, value: String, _ help: String, completion: ValueCompletion? = nil) {
    spec = OptionSpec(name, short: short, value: value, repeatable: true, help, completion: completion)
  }
  private init(spec: OptionSpec) { self.spec = spec }

  /// This option with another command's help text (same name, same reading).
  func withHelp(_ help: String) -> RepeatedOption { RepeatedOption(spec: spec.withHelp(help)) }
}

/// A spec passes for itself, so a table can be rebuilt from `Command.options` (tests do);
/// only the typed keys above make one, and only they can be read.
extension OptionSpec: OptionKey {
  var spec: OptionSpec { self }
}

/// `case CommonOptions.help:` in a switch over a word of the command line: one of its words.
func ~= (key: some OptionKey, word: String) -> Bool { key.spec.words.contains(word) }

/// Options every command accepts (`ArgumentParser.common`).
enum CommonOptions {
  static let help = Flag("help", short: "h", "show this help")
  static let debug = Flag("debug", "log diagnostics to stderr (never memo content)")
}

/// A positional argument.
struct PositionalSpec: Sendable {
  let name: String
  let optional: Bool
  let help: String
  /// What a shell may offer here (generated completions).
  let completion: ValueCompletion
  /// The last positional only: it takes every remaining argument (`PATH…`).
  let variadic: Bool

  init(name: String, optional: Bool, help: String, completion: ValueCompletion? = nil, variadic: Bool = false) {
    self.name = name
    self.optional = optional
    self.help = help
    self.completion = completion ?? ValueCompletion.inferred(from: name)
    self.variadic = variadic
  }
}

/// What a shell can complete for a value. Dynamic values come from
/// `memo-peer completions --values SOURCE`, which prints ids and names, never memo content.
enum ValueCompletion: Sendable, Equatable {
  /// Free text (a title, a number): nothing is offered.
  case none
  /// One of these words.
  case choices([String])
  /// Values read from this node when the shell asks.
  case dynamic(CompletionSource)
  case file
  case directory
  /// A memo-peer command's name (`help COMMAND`).
  case command

  /// From a placeholder: `PEER` is a trusted peer's name, `FILE`/`PATH` a file, `DIR` a
  /// folder. Memo ids are never inferred (entries of the outbox and inbox are `ID`s too).
  static func inferred(from placeholder: String) -> ValueCompletion {
    switch placeholder {
    case "PEER": .dynamic(.peers)
    case "FILE", "PATH", "PATH…": .file
    case "DIR": .directory
    default: .none
    }
  }
}

/// Where dynamic completion values come from. A new source is one case here and one
/// branch in `CompletionValues.values(of:prefix:context:)`.
enum CompletionSource: String, Sendable, CaseIterable {
  /// Memo ids, by the short prefix `list` shows (longer when two share it).
  case memoIDs = "memo-ids"
  /// Names of trusted devices.
  case peers
  /// Names of notebooks (relayed ones, which have none, are left out).
  case notebooks
}

/// What the parser produced for one command line. Options are read only through the keys
/// the command declared (`has` takes a flag, the subscripts an option with a value); reading
/// one it did not declare, or as another kind, stops a debug build (every test runs one), so
/// such a read cannot pass for an option that was simply not given.
struct ParsedArguments: Sendable {
  fileprivate var values: [String: [String]] = [:]
  fileprivate var flags: Set<String> = []
  fileprivate(set) var positionals: [String] = []
  /// The command's options and the common ones, by name: what it may read.
  private let declared: [String: OptionSpec.Kind]
  private let command: String

  fileprivate init(declared: [OptionSpec], command: String) {
    self.declared = Dictionary(declared.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
    self.command = command
  }

  func has(_ flag: Flag) -> Bool { flags.contains(checked(flag)) }
  subscript(_ option: ValueOption) -> String? { values[checked(option)]?.last }
  subscript(_ option: RepeatedOption) -> [String] { values[checked(option)] ?? [] }
  func positional(_ index: Int) -> String? { index < positionals.count ? positionals[index] : nil }

  /// Whether the command declared this option, as this kind.
  func declares(_ key: some OptionKey) -> Bool { declared[key.spec.name] == key.spec.kind }

  private func checked(_ key: some OptionKey) -> String {
    assert(
      declares(key),
      "`memo-peer \(command)` reads --\(key.spec.name) as a \(key.spec.kind) option, which it does not declare")
    return key.spec.name
  }
}

/// A hand-written parser (no package can be fetched): `--name value`, `--name=value`,
/// `-x value`, flags, `--` to end options. Every error is a usage error (exit 2) that
/// suggests the closest spelling.
enum ArgumentParser {
  /// Options every command accepts.
  static let common: [OptionSpec] = [CommonOptions.help.spec, CommonOptions.debug.spec]

  static func parse(
    _ arguments: [String], options declared: [OptionSpec], positionals: [PositionalSpec], command: String
  )
    throws -> ParsedArguments
  {
    let options = declared + common
    var result = ParsedArguments(declared: options, command: command)
    var index = 0
    var onlyPositionals = false
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
        result.positionals.append(argument)
        continue
      }
      if argument == "--" {
        onlyPositionals = true
        continue
      }
      var name: String
      var inlineValue: String?
      if argument.hasPrefix("--") {
        name = String(argument.dropFirst(2))
        if let equals = name.firstIndex(of: "=") {
          inlineValue = String(name[name.index(after: equals)...])
          name = String(name[..<equals])
        }
      } else {
        guard argument.count == 2, let spec = options.first(where: { $0.short == argument.last }) else {
          throw usage("unknown option \(echo(argument)) for `memo-peer \(command)`", suggestion: nil, command: command)
        }
        name = spec.name
      }
      guard let spec = options.first(where: { $0.name == name }) else {
        let suggestion = closest(to: name, among: options.map(\.name)).map { "--\($0)" }
        throw usage(
          "unknown option \(echo("--" + name)) for `memo-peer \(command)`", suggestion: suggestion, command: command)
      }
      if spec.value == nil {
        guard inlineValue == nil else { throw usage("--\(name) takes no value", suggestion: nil, command: command) }
        result.flags.insert(name)
        continue
      }
      let value: String
      if let inlineValue {
        value = inlineValue
      } else {
        guard index < arguments.count else {
          throw usage("--\(name) needs a value (\(spec.value!))", suggestion: nil, command: command)
        }
        value = arguments[index]
        index += 1
      }
      if !spec.repeatable && result.values[name] != nil {
        throw usage("--\(name) was given more than once", suggestion: nil, command: command)
      }
      result.values[name, default: []].append(value)
    }
    if result.has(CommonOptions.help) { return result }
    let required = positionals.filter { !$0.optional }.count
    if result.positionals.count < required {
      let missing = positionals[result.positionals.count].name
      throw usage("missing \(missing)", suggestion: nil, command: command)
    }
    if result.positionals.count > positionals.count && !(positionals.last?.variadic ?? false) {
      throw usage("too many arguments", suggestion: nil, command: command)
    }
    return result
  }

  /// A word from the command line, repeated in an error only when it looks like a word of
  /// the command line (short, ASCII letters, digits, `-_.`): anything else may be memo text
  /// typed in the wrong place, and errors never repeat memo text.
  static func echo(_ word: String) -> String { TerminalText.echo(word) }

  static func usage(_ message: String, suggestion: String?, command: String?) -> MemoPeerError {
    var hint = command.map { "see `memo-peer \($0) --help`" } ?? "see `memo-peer --help`"
    if let suggestion { hint = "did you mean \(suggestion)? " + hint }
    return MemoPeerError(.usage, message, hint: hint)
  }

  /// The candidate within edit distance 2 (or that starts with `word`), if there is one.
  static func closest(to word: String, among candidates: [String]) -> String? {
    let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= 2 || $0.0.hasPrefix(word) }
    return scored.min { $0.1 < $1.1 }?.0
  }

  /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
  /// neighbours each cost 1, so `lsit` is one step from `list`.
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in stride(from: 1, through: a.count, by: 1) {
      for j in stride(from: 1, through: b.count, by: 1) {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
        if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
          d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
        }
      }
    }
    return d[a.count][b.count]
  }
}
