/// Shell completion scripts, generated from the command table (the same source as
/// `--help` and the man page). Commands, options and fixed choices are written into the
/// script; memo ids and peer names are asked of `memo-peer completions --values SOURCE`
/// when the shell needs them, which prints ids and names only, never memo content.
enum Completions {
  enum Shell: String, CaseIterable, Sendable {
    case bash, zsh, fish
  }

  static func script(for shell: Shell, commands: [Command]) -> String {
    switch shell {
    case .bash: BashCompletion.script(commands)
    case .zsh: ZshCompletion.script(commands)
    case .fish: FishCompletion.script(commands)
    }
  }

  /// An option's words: `--name`, and `-x` when it has a short form.
  static func words(_ option: OptionSpec) -> [String] { option.words }

  /// The words of every option of a command, long and short, with the common ones; with
  /// `takingValues`, only of the options that take a value (whose next word is not a
  /// positional argument).
  static func optionWords(_ command: Command, takingValues: Bool = false) -> [String] {
    (command.options + ArgumentParser.common).filter { !takingValues || $0.value != nil }.flatMap(words)
  }

  /// Words safe to put in a shell script unquoted: the table's names and choices are
  /// letters, digits and `-_.|`. Anything else is dropped rather than quoted wrongly.
  static func safe(_ word: String) -> Bool {
    !word.isEmpty
      && word.unicodeScalars.allSatisfy {
        $0.isASCII && ($0.properties.isAlphabetic || "0123456789-_.".unicodeScalars.contains($0))
      }
  }

  /// Text for a description inside single quotes: quotes and backslashes removed.
  static func describe(_ text: String) -> String {
    String(text.filter { $0 != "'" && $0 != "\\" && $0 != "\n" && $0 != "`" && $0 != "$" }.prefix(80))
  }
}
