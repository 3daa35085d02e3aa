import MemoCore

/// The options more than one command declares, each declared once here. A command lists the
/// constant among its own (`withHelp` says what it does there; the name, the kind and the
/// completion stay), and helpers that several commands call read these: `wantsJSON`,
/// `roleArgument`, the passphrase descriptors.
enum SharedOptions {
  /// `--json`: output for scripts (docs/CLI.md); read through `CommandContext.wantsJSON`.
  static let json = Flag("json", "print as JSON")
  /// `--yes`: do what a person would be asked to confirm.
  static let yes = Flag("yes", short: "y", "do not ask")
  /// `--stdin`: text that must not be a process argument comes from stdin.
  static let stdin = Flag("stdin", "read from stdin")
  /// `--timeout SECONDS`: how long a network command waits (`NetworkCommands.seconds`).
  static let timeout = ValueOption("timeout", value: "SECONDS", "how long to wait")
  /// `--notebook NAME`: the use cases take the name and find the notebook.
  static let notebook = ValueOption(
    "notebook", value: "NAME", "only memos of this notebook", completion: .dynamic(.notebooks))
  /// `--passphrase-fd N`: a passphrase as one line from a descriptor, for scripts.
  static let passphraseFD = ValueOption("passphrase-fd", value: "N", "read the passphrase from this file descriptor")
  /// `--as ROLE`: how a notebook is shared; read through `NotebookCommands.roleArgument`.
  static let role = ValueOption(
    "as", value: "ROLE", "member (gets the key; default) or relay (sealed revisions only)",
    completion: .choices(NotebookRole.allCases.map(\.rawValue)))
  /// `--share NOTEBOOK`: notebooks to share with a newly trusted device (`pair`, `trust add`).
  static let share = RepeatedOption(
    "share", value: "NOTEBOOK", "share this notebook with the device (repeatable)", completion: .dynamic(.notebooks))
  /// `--title TITLE` of `new` and `edit`.
  static let title = ValueOption("title", short: "t", value: "TITLE", "the memo's title")
  /// `--tag TAG` of `new` and `edit` (`list --tag` filters, and takes one: its own option).
  static let tag = RepeatedOption("tag", value: "TAG", "a tag (repeatable)")
  /// `--private` of `new` and `edit`.
  static let `private` = Flag("private", "mark the memo private")
}
