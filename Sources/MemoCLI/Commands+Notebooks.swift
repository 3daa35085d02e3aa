import MemoCore
import MemoStore

/// Notebooks: which memos go to which devices (docs/CLI.md, "Notebooks").
enum NotebookCommands {
  static let actions = ["list", "new", "rename", "delete", "share", "unshare", "show", "default"]

  static let notebook = Command(
    name: "notebook", summary: "List, create, rename, delete and share notebooks.",
    details: """
      Every memo belongs to one notebook, and each notebook has its own key. A trusted
      device gets only the notebooks shared with it: as a member (it gets the key, reads
      and writes) or as a relay (it stores and forwards sealed revisions it cannot read:
      a home server between laptops that are rarely on together).
        notebook list                      notebooks, their memos and whom they are shared with
        notebook new NAME                  a new notebook (with a new key)
        notebook rename OLD NEW            names are this device's own
        notebook delete NAME [--move-to OTHER]   refuses a notebook with memos unless moved
        notebook share NAME --with PEER [--as member|relay]
        notebook unshare NAME --from PEER  rotates the key; PEER keeps what it already has
        notebook show NAME                 members, relays and counts
        notebook default NAME              where `new` puts memos without --notebook
      NAME is a name, or (for a relayed notebook) a prefix of its id.
      """,
    options: [
      OptionSpec("with", value: "PEER", "share: the trusted device to share with"),
      OptionSpec("from", value: "PEER", "unshare: the device to stop sharing with"),
      OptionSpec(
        "as", value: "ROLE", "share: member (gets the key; default) or relay (sealed revisions only)",
        completion: .choices(NotebookRole.allCases.map(\.rawValue))),
      OptionSpec(
        "move-to", value: "NAME", "delete: move the notebook's memos there first", completion: .dynamic(.notebooks)),
      OptionSpec("json", "print the result as JSON"),
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: actions.joined(separator: ", "), completion: .choices(actions)),
      PositionalSpec(name: "NAME", optional: true, help: "a notebook's name", completion: .dynamic(.notebooks)),
      PositionalSpec(name: "NEW-NAME", optional: true, help: "rename: the new name"),
    ]
  ) { context in
    let action = context.arguments.positional(0) ?? "list"
    let store = try context.store()
    func name() throws -> String {
      guard let name = context.arguments.positional(1) else {
        throw ArgumentParser.usage("notebook \(action) needs a notebook's name", suggestion: nil, command: "notebook")
      }
      return name
    }
    switch action {
    case "list":
      let summaries = try store.notebookSummaries()
      let names = try context.names()
      if context.wantsJSON {
        context.printJSON(ListJSON(notebooks: summaries.map { .init($0, names: names) }))
      } else {
        for summary in summaries { context.console.print(OutputFormat.notebookLine(summary, names: names)) }
      }
    case "show":
      try printNotebook(try store.findNotebook(try name()), context)
    case "new":
      let created = try store.createNotebook(named: try name(), now: context.now)
      try printNotebook(created, context, line: "created notebook \(created.displayName)")
    case "rename":
      guard let newName = context.arguments.positional(2) else {
        throw ArgumentParser.usage("notebook rename needs the new name", suggestion: nil, command: "notebook")
      }
      let renamed = try store.renameNotebook(try name(), to: newName)
      try printNotebook(renamed, context, line: "renamed to \(renamed.displayName)")
    case "delete":
      try MemoCommands.requireUnlocked(context)
      let (deleted, moved) = try store.deleteNotebook(
        try name(), moveTo: context.arguments.value("move-to"), now: context.now)
      if context.wantsJSON {
        context.printJSON(DeletedJSON(deleted: deleted.id.rawValue, moved: moved))
      } else {
        let movedText = moved > 0 ? " (\(moved) memo\(moved == 1 ? "" : "s") moved)" : ""
        context.console.print("deleted \(deleted.displayName)\(movedText)")
      }
    case "default":
      let chosen = try store.findNotebook(try name())
      try store.setDefaultNotebook(chosen.id)
      try printNotebook(
        try store.findNotebook(chosen.id.rawValue), context, line: "new memos go to \(chosen.displayName) from now on")
    case "share":
      try share(try store.findNotebook(try name()), context)
    case "unshare":
      try unshare(try store.findNotebook(try name()), context)
    default:
      throw ArgumentParser.usage(
        "unknown notebook action \(ArgumentParser.echo(action))",
        suggestion: ArgumentParser.closest(to: action, among: actions), command: "notebook")
    }
  }

  static func share(_ notebook: Notebook, _ context: CommandContext) throws {
    guard let reference = context.arguments.value("with") else {
      throw ArgumentParser.usage("notebook share needs --with PEER", suggestion: nil, command: "notebook")
    }
    let role = try roleArgument(context)
    let peer = try TrustStore(paths: try context.paths()).load().find(reference)
    try context.store().share(notebook.id, with: peer.deviceID, as: role, now: context.now)
    let what =
      role == .member
      ? "it gets the notebook's key and its memos at the next sync"
      : "it stores and forwards the notebook's sealed revisions from the next sync, without its key"
    try printNotebook(
      notebook, context, line: "shared \(notebook.displayName) with \(peer.displayName) as \(role.rawValue): \(what)")
  }

  static func unshare(_ notebook: Notebook, _ context: CommandContext) throws {
    guard let reference = context.arguments.value("from") else {
      throw ArgumentParser.usage("notebook unshare needs --from PEER", suggestion: nil, command: "notebook")
    }
    let store = try context.store()
    let members = try store.members(of: notebook.id)
    let trusted = try? TrustStore(paths: try context.paths()).load()
    let device =
      (try? trusted?.find(reference))?.deviceID
      ?? members.first { DeviceID($0.device)?.hasPrefix(reference) ?? false }?.device
    guard let device else {
      throw MemoPeerError(
        .notFound, "\(notebook.displayName) is not shared with a device named \(ArgumentParser.echo(reference))",
        hint: "`memo-peer notebook show \(notebook.name ?? notebook.id.rawValue)` lists whom it is shared with")
    }
    let result = try store.unshare(notebook.id, from: device, now: context.now)
    let names = try context.names()
    let who = names.device(device)
    var text = "\(who) no longer gets \(notebook.displayName) from this device."
    if result.rotated {
      text +=
        " Its key was rotated: what is written from now on is sealed with a key \(who) never gets."
    }
    text += " \(who) keeps the memos it already received (memo-peer cannot take them back)."
    if context.wantsJSON {
      struct UnsharedJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let notebook: OutputFormat.NotebookJSON
        let unshared: String
        let role: String
        let keyRotated: Bool
        enum CodingKeys: String, CodingKey {
          case schema, notebook, unshared, role
          case keyRotated = "key_rotated"
        }
      }
      context.printJSON(
        UnsharedJSON(
          notebook: try summaryJSON(notebook, context), unshared: DeviceID(device)?.description ?? device,
          role: result.role.rawValue, keyRotated: result.rotated))
    } else {
      context.console.print(text)
    }
  }

  static func roleArgument(_ context: CommandContext, command: String = "notebook") throws -> NotebookRole {
    let text = context.arguments.value("as") ?? NotebookRole.member.rawValue
    guard let role = NotebookRole(rawValue: text) else {
      throw ArgumentParser.usage(
        "--as takes member or relay", suggestion: ArgumentParser.closest(to: text, among: ["member", "relay"]),
        command: command)
    }
    return role
  }

  static func summaryJSON(_ notebook: Notebook, _ context: CommandContext) throws -> OutputFormat.NotebookJSON {
    let summary = try context.store().notebookSummaries().first { $0.notebook.id == notebook.id }.unwrapOrNotFound()
    return OutputFormat.NotebookJSON(summary, names: try context.names())
  }

  /// `{"schema", "notebook"}` with `--json`; else `line` (or the notebook's line and its
  /// devices, for `show`).
  static func printNotebook(_ notebook: Notebook, _ context: CommandContext, line: String? = nil) throws {
    if context.wantsJSON {
      struct NotebookOnlyJSON: Encodable {
        let schema = OutputFormat.jsonSchema
        let notebook: OutputFormat.NotebookJSON
      }
      context.printJSON(NotebookOnlyJSON(notebook: try summaryJSON(notebook, context)))
      return
    }
    if let line {
      context.console.print(line)
      return
    }
    let summary = try context.store().notebookSummaries().first { $0.notebook.id == notebook.id }.unwrapOrNotFound()
    let names = try context.names()
    context.console.print(OutputFormat.notebookLine(summary, names: names))
    context.console.print("  id \(notebook.id.rawValue)")
    for member in summary.members {
      let role = member.role == .member ? "member (has the key)" : "relay (sealed revisions only)"
      context.console.print("  \(names.device(member.device))  \(role)")
    }
  }

  struct ListJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let notebooks: [OutputFormat.NotebookJSON]
  }

  struct DeletedJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let deleted: String
    let moved: Int
  }
}

extension Optional {
  func unwrapOrNotFound() throws -> Wrapped {
    guard let self else { throw MemoPeerError(.notFound, "that notebook is not on this device") }
    return self
  }
}

extension CommandContext {
  /// Notebook and device names for this command's output.
  func names() throws -> OutputFormat.Names { OutputFormat.Names(store: try store(), paths: try paths()) }

  /// The first positional argument as a memo id; when it names a memo of a notebook this
  /// device only relays, the `sealed` error that says so (and who can read it).
  func memoIDOrSealed() throws -> MemoID {
    do { return try memoID() } catch let error as MemoPeerError where error.code == .notFound {
      guard let relayed = try store().relayedMemo(matching: arguments.positional(0) ?? "") else { throw error }
      let names = try self.names()
      let members = try store().members(of: relayed.notebook).map { names.device($0.device) }
      throw MemoPeerError(
        .sealed,
        "memo \(relayed.memo.short) is sealed for the members of notebook \(relayed.notebook.short): this device "
          + "relays its \(relayed.revisions) sealed revision\(relayed.revisions == 1 ? "" : "s") and has no key to open \(relayed.revisions == 1 ? "it" : "them")",
        hint: members.isEmpty
          ? "read it on a device that is a member of the notebook"
          : "read it on a member of the notebook: " + members.sorted().joined(separator: ", "))
    }
  }

  /// `--notebook NAME` (or another option naming a notebook), resolved; nil when absent.
  func notebookOption(_ option: String = "notebook") throws -> Notebook? {
    try arguments.value(option).map { try store().findNotebook($0) }
  }
}
