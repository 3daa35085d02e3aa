import MemoApp
import MemoCore

/// Notebooks: which memos go to which devices (docs/CLI.md, "Notebooks").
enum NotebookCommands {
  static let actions = [
    "list", "new", "rename", "delete", "share", "unshare", "show", "default", "invitations", "accept", "decline",
  ]

  /// The options of `notebook`.
  enum NotebookOptions {
    static let with = ValueOption("with", value: "PEER", "share: the trusted device to share with")
    static let from = ValueOption("from", value: "PEER", "unshare: the device to stop sharing with")
    static let role = SharedOptions.role.withHelp(
      "share: member (gets the key; default) or relay (sealed revisions only)")
    static let moveTo = ValueOption(
      "move-to", value: "NAME", "delete: move the notebook's memos there first", completion: .dynamic(.notebooks))
    static let json = SharedOptions.json.withHelp("print the result as JSON")
    static let all = Flag("all", "invitations: the declined ones too")
  }

  static let notebook = Command(
    name: "notebook", summary: "List, create, rename, delete and share notebooks.",
    details: """
      Every memo belongs to one notebook, and each notebook has its own key. A trusted
      device gets only the notebooks shared with it: as a member (it gets the key, reads
      and writes) or as a relay (it stores and forwards sealed revisions it cannot read:
      a home server between laptops that are rarely on together). Every change of who is
      in a notebook is signed by the member that made it and checked by every device;
      a device shared a notebook gets an invitation, which a person there accepts.
        notebook list                      notebooks, their memos and whom they are shared with
        notebook new NAME                  a new notebook (with a new key)
        notebook rename OLD NEW            every member takes a member's new name
        notebook delete NAME [--move-to OTHER]   refuses a notebook with memos unless moved
        notebook share NAME --with PEER [--as member|relay]
        notebook unshare NAME --from PEER  rotates the key; PEER keeps what it already has
        notebook show NAME                 members, relays and counts
        notebook default NAME              where `new` puts memos without --notebook
        notebook invitations [--all]       notebooks shared with this device, not taken yet
        notebook accept NAME               take one: it syncs from the next sync on
        notebook decline NAME              refuse one (until a member shares it again)
      NAME is a name, or (for a relayed or invited notebook) a prefix of its id.
      """,
    options: [
      NotebookOptions.with, NotebookOptions.from, NotebookOptions.role, NotebookOptions.moveTo, NotebookOptions.all,
      NotebookOptions.json,
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: actions.joined(separator: ", "), completion: .choices(actions)),
      PositionalSpec(name: "NAME", optional: true, help: "a notebook's name", completion: .dynamic(.notebooks)),
      PositionalSpec(name: "NEW-NAME", optional: true, help: "rename: the new name"),
    ]
  ) { context in
    let action = context.arguments.positional(0) ?? "list"
    let app = try context.app()
    let notebooks = app.notebooks
    func name() throws -> String {
      guard let name = context.arguments.positional(1) else {
        throw ArgumentParser.usage("notebook \(action) needs a notebook's name", suggestion: nil, command: "notebook")
      }
      return name
    }
    switch action {
    case "list":
      let summaries = try notebooks.list()
      let names = try app.names()
      if context.wantsJSON {
        context.printJSON(NotebookListJSON(summaries, names: names))
      } else {
        for summary in summaries { context.console.print(OutputFormat.notebookLine(summary, names: names)) }
      }
    case "show":
      try printNotebook(try notebooks.find(try name()), context)
    case "new":
      let created = try notebooks.create(try name())
      try printNotebook(created, context, line: "created notebook \(created.displayName)")
    case "rename":
      guard let newName = context.arguments.positional(2) else {
        throw ArgumentParser.usage("notebook rename needs the new name", suggestion: nil, command: "notebook")
      }
      let renamed = try notebooks.rename(try name(), to: newName)
      try printNotebook(renamed, context, line: "renamed to \(renamed.displayName)")
    case "delete":
      let deleted = try notebooks.delete(try name(), moveTo: context.arguments[NotebookOptions.moveTo])
      if context.wantsJSON {
        context.printJSON(DeletedNotebookJSON(deleted))
      } else {
        let moved = deleted.moved
        let movedText = moved > 0 ? " (\(moved) memo\(moved == 1 ? "" : "s") moved)" : ""
        context.console.print("deleted \(deleted.notebook.displayName)\(movedText)")
      }
    case "default":
      let chosen = try notebooks.makeDefault(try name())
      try printNotebook(chosen, context, line: "new memos go to \(chosen.displayName) from now on")
    case "share":
      let notebook = try name()
      guard let reference = context.arguments[NotebookOptions.with] else {
        throw ArgumentParser.usage("notebook share needs --with PEER", suggestion: nil, command: "notebook")
      }
      let shared = try notebooks.share(notebook, with: reference, as: try roleArgument(context))
      let what =
        shared.role == .member
        ? "it is invited at its next sync (directly or through a relay) and, once a person there accepts, "
          + "gets the notebook's key and its memos"
        : "it is invited at its next sync and, once a person there accepts, stores and forwards the notebook's "
          + "sealed revisions, without its key"
      try printNotebook(
        shared.notebook, context,
        line:
          "shared \(shared.notebook.displayName) with \(shared.peer.displayName) as \(shared.role.rawValue): \(what)")
    case "unshare":
      let notebook = try name()
      guard let reference = context.arguments[NotebookOptions.from] else {
        throw ArgumentParser.usage("notebook unshare needs --from PEER", suggestion: nil, command: "notebook")
      }
      try printUnshared(try notebooks.unshare(notebook, from: reference), context)
    case "invitations":
      let invitations = try notebooks.invitations(includingDeclined: context.arguments.has(NotebookOptions.all))
      let names = try app.names()
      if context.wantsJSON {
        context.printJSON(InvitationListJSON(invitations, names: names))
      } else if invitations.isEmpty {
        context.console.print("no invitations waiting")
      } else {
        for invitation in invitations {
          context.console.print(OutputFormat.invitationLine(invitation, names: names))
        }
      }
    case "accept":
      let accepted = try notebooks.accept(try name())
      try printNotebook(
        accepted, context,
        line:
          "accepted \(accepted.displayName) as \(accepted.role.rawValue): it syncs from the next sync on "
          + "(at once while `serve` runs live sync)")
    case "decline":
      let declined = try notebooks.decline(try name())
      if context.wantsJSON {
        context.printJSON(DeclinedJSON(declined, names: try app.names()))
      } else {
        context.console.print(
          "declined \(declined.displayName): nothing of it moves here, and it is not offered again "
            + "unless a member shares it with this device anew")
      }
    default:
      throw ArgumentParser.usage(
        "unknown notebook action \(ArgumentParser.echo(action))",
        suggestion: ArgumentParser.closest(to: action, among: actions), command: "notebook")
    }
  }

  static func printUnshared(_ unshared: UnsharedNotebook, _ context: CommandContext) throws {
    let app = try context.app()
    let names = try app.names()
    if context.wantsJSON {
      context.printJSON(
        UnsharedJSON(unshared, summary: try app.notebooks.summary(of: unshared.notebook), names: names))
      return
    }
    let who = names.device(unshared.device)
    var text = "\(who) no longer gets \(unshared.notebook.displayName) from this device."
    if unshared.result.rotated {
      text +=
        " Its key was rotated: what is written from now on is sealed with a key \(who) never gets."
    }
    text += " \(who) keeps the memos it already received (memo-peer cannot take them back)."
    context.console.print(text)
  }

  /// `--as ROLE` (`SharedOptions.role`) of `notebook share`, `pair` and `trust add`.
  static func roleArgument(_ context: CommandContext, command: String = "notebook") throws -> NotebookRole {
    let text = context.arguments[SharedOptions.role] ?? NotebookRole.member.rawValue
    guard let role = NotebookRole(rawValue: text) else {
      throw ArgumentParser.usage(
        "--as takes member or relay", suggestion: ArgumentParser.closest(to: text, among: ["member", "relay"]),
        command: command)
    }
    return role
  }

  /// `{"schema", "notebook"}` with `--json`; else `line` (or the notebook's line and its
  /// devices, for `show`).
  static func printNotebook(_ notebook: Notebook, _ context: CommandContext, line: String? = nil) throws {
    let app = try context.app()
    if context.wantsJSON {
      context.printJSON(NotebookOnlyJSON(try app.notebooks.summary(of: notebook), names: try app.names()))
      return
    }
    if let line {
      context.console.print(line)
      return
    }
    let summary = try app.notebooks.summary(of: notebook)
    let names = try app.names()
    context.console.print(OutputFormat.notebookLine(summary, names: names))
    context.console.print("  id \(notebook.id.rawValue)")
    for member in summary.members {
      let role = member.role == .member ? "member (has the key)" : "relay (sealed revisions only)"
      context.console.print("  \(names.device(member.device))  \(role)")
    }
  }
}

extension CommandContext {
  /// Notebook and device names for this command's output.
  func names() throws -> Names { try app().names() }
}
