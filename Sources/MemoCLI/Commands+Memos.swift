import MemoApp
import MemoCore
import MemoStore

/// The commands that work on memos of this node.
enum MemoCommands {
  /// The options of `new`.
  enum NewOptions {
    static let title = SharedOptions.title
    static let fromClipboard = Flag("from-clipboard", "take the body from the desktop clipboard")
    static let tag = SharedOptions.tag.withHelp("add a tag (repeatable)")
    static let `private` = SharedOptions.private.withHelp("mark the memo private (hidden from widgets while locked)")
    static let notebook = SharedOptions.notebook.withHelp("put it in this notebook (default: the default notebook)")
    static let allowEmpty = Flag("allow-empty", "accept an empty body on stdin (a memo of a --title alone)")
    static let json = SharedOptions.json.withHelp("print the new memo as JSON")
  }

  static let new = Command(
    name: "new", summary: "Create a memo.",
    details: """
      The body is read from stdin when stdin is not a terminal, otherwise your editor
      ($VISUAL or $EDITOR) opens on a file in a private memory-backed directory; with
      --from-clipboard it is the clipboard's text (wl-paste on Wayland, xclip on X11).
      Without --title, the first line of the body becomes the title.
      """,
    options: [
      NewOptions.title, NewOptions.fromClipboard, NewOptions.tag, NewOptions.private, NewOptions.allowEmpty,
      NewOptions.notebook, NewOptions.json,
    ],
    positionals: []
  ) { context in
    let app = try context.app()
    // Refused before the editor opens: text typed into a locked node could not be saved.
    let memo = try app.memos.create(in: context.arguments[NewOptions.notebook]) {
      let body =
        context.arguments.has(NewOptions.fromClipboard)
        ? try clipboardBody(context) : try readBody(context, initial: "")
      return MemoDraft(
        title: context.arguments[NewOptions.title] ?? "", body: body, tags: context.arguments[NewOptions.tag],
        isPrivate: context.arguments.has(NewOptions.private))
    }
    if context.wantsJSON {
      context.printJSON(MemoJSON(memo: .init(memo.summary, names: try app.names())))
    } else {
      context.console.print(memo.id.rawValue)
    }
  }

  /// The options of `list`.
  enum ListOptions {
    /// One tag to filter by (not `SharedOptions.tag`, which sets tags and repeats).
    static let tag = ValueOption("tag", value: "TAG", "only memos with this tag")
    static let notebook = SharedOptions.notebook
    static let json = SharedOptions.json.withHelp("print {schema, memos: [...]} as JSON")
  }

  static let list = Command(
    name: "list", summary: "List memos, newest first.",
    details: """
      Shows the short id, the time of the last change, the title and the tags. ● marks private
      memos. While the node is locked, only the titles of memos not marked private are shown
      (no tags, and --tag needs the node unlocked).
      """,
    options: [ListOptions.tag, ListOptions.notebook, ListOptions.json],
    positionals: []
  ) { context in
    let app = try context.app()
    let list = try app.memos.listStream(
      tag: context.arguments[ListOptions.tag], notebook: context.arguments[ListOptions.notebook])
    let names = try app.names()
    let console = context.console
    // Each memo is printed as it is read; once stdout is gone (`| head`) reading stops.
    if context.wantsJSON {
      var writer = MemoListJSONWriter(locked: list.locked, names: names) { console.write($0) }
      try whileStdoutIsOpen(console) { next in
        try list.forEachMemo { memo in
          writer.add(memo)
          try next()
        }
      }
      writer.finish(relayed: list.relayed.isEmpty ? nil : list.relayed.map { .init($0, names: names) })
      return
    }
    var listed = 0
    var lines = ListingLines(names: names)
    try whileStdoutIsOpen(console) { next in
      try list.forEachMemo { memo in
        console.printLine { lines.append(memo, to: &$0) }
        listed += 1
        try next()
      }
    }
    for summary in list.relayed { console.print(OutputFormat.relayedLine(summary, names: names)) }
    if listed == 0 && list.relayed.isEmpty && console.stdoutIsTerminal {
      // On a pipe, nothing: scripts count lines. A person is told.
      context.console.print(
        context.arguments[ListOptions.tag] != nil
          ? "No memo has that tag."
          : context.arguments[ListOptions.notebook] != nil
            ? "No memos in that notebook." : "No memos yet: `memo-peer new` adds one.")
    }
    if list.locked {
      context.console.error("memo-peer: locked: titles of private memos and all tags are hidden (`memo-peer unlock`)")
    }
  }

  /// The options of `show`.
  enum ShowOptions {
    static let plain = Flag("plain", "print as text even on a terminal (it stays in the scrollback)")
    static let copy = Flag("copy", "put the body on the clipboard; cleared after 45 s unless changed")
    static let clearAfter = ValueOption(
      "clear-after", value: "SECONDS", "with --copy: clear the clipboard after SECONDS (default 45)")
    static let revision = ValueOption(
      "revision", value: "N", "show revision N as this device kept it (`memo-peer history ID` lists them)")
    static let json = SharedOptions.json.withHelp("print {schema, memo: {..., body}} as JSON")
  }

  static let show = Command(
    name: "show", summary: "Show one memo.",
    details: """
      ID may be any unique prefix of the memo's id. On a terminal the memo is shown on the
      alternate screen: it is hidden when the terminal loses focus or the job is suspended
      (Ctrl-Z), comes back on return, and leaves nothing in the scrollback when you quit
      (q). On a pipe, or with --plain, it is printed as text (with --plain on a terminal,
      control characters are shown escaped, as \\x1b; a pipe gets the exact text). --copy
      puts the body on the desktop clipboard instead (wl-copy on Wayland, xclip on X11),
      printing nothing of it, and clears the clipboard after 45 s (--clear-after) unless it
      changed meanwhile. The second line says which device made the revision and when
      ("edited on laptop-b · 2026-12-01 20:08"). --revision N shows an earlier revision (a
      deleted memo's too).
      """,
    options: [ShowOptions.plain, ShowOptions.copy, ShowOptions.clearAfter, ShowOptions.revision, ShowOptions.json],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let app = try context.app()
    let number = try HistoryCommands.revisionNumber(
      context.arguments[ShowOptions.revision], option: "--revision", command: "show")
    let memo: Memo
    let author: DeviceID?
    if let number {
      let entry = try app.history.revision(context.arguments.positional(0) ?? "", number)
      if context.wantsJSON {
        context.printJSON(RevisionShownJSON(entry, names: try app.names()))
        return
      }
      (memo, author) = (entry.memo, entry.author)
    } else {
      memo = try app.memos.show(context.arguments.positional(0) ?? "")
      author = memo.record?.author
    }
    if context.arguments.has(ShowOptions.copy) {
      try copyToClipboard(memo, context)
      return
    }
    if context.wantsJSON {
      context.printJSON(
        MemoJSON(memo: .init(memo.summary, body: memo.body, conflictOf: memo.conflictOf, names: try app.names())))
      return
    }
    let document = OutputFormat.document(memo, names: try app.names(), author: author)
    if !context.arguments.has(ShowOptions.plain), let viewer = TerminalViewer(environment: context.environment) {
      context.console.flush()
      try viewer.show(document)
      return
    }
    // --plain on a terminal: a body from a peer may hold escape sequences, and the terminal
    // would act on them. A pipe gets the exact text.
    let onTerminal = context.console.stdoutIsTerminal
    for line in document { context.console.print(onTerminal ? OutputFormat.terminalLine(line) : line) }
  }

  /// The options of `edit`.
  enum EditOptions {
    static let stdin = SharedOptions.stdin.withHelp("read the new body from stdin")
    static let title = SharedOptions.title.withHelp("set the title (empty: derive from the body)")
    static let tag = SharedOptions.tag.withHelp("replace the tags (repeatable)")
    static let noTags = Flag("no-tags", "remove all tags")
    static let `private` = SharedOptions.private.withHelp("mark private")
    static let `public` = Flag("public", "remove the private mark")
    static let pin = Flag("pin", "pin it: the widget shows the pinned memo (works while locked)")
    static let unpin = Flag("unpin", "unpin it")
    static let allowEmpty = Flag("allow-empty", "with --stdin: accept an empty body")
    static let json = SharedOptions.json.withHelp("print the changed memo as JSON")
  }

  static let edit = Command(
    name: "edit", summary: "Change a memo.",
    details: """
      Without options, runs $VISUAL or $EDITOR on the body (also when not on a terminal, so
      scripts can set EDITOR). --stdin takes the new body from stdin instead. Title, tags
      and the private mark change with their options, without an editor.
      """,
    options: [
      EditOptions.stdin, EditOptions.allowEmpty, EditOptions.title, EditOptions.tag, EditOptions.noTags,
      EditOptions.private, EditOptions.public, EditOptions.pin, EditOptions.unpin, EditOptions.json,
    ],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let arguments = context.arguments
    let app = try context.app()
    if arguments.has(EditOptions.pin) && arguments.has(EditOptions.unpin) {
      throw ArgumentParser.usage("--pin and --unpin exclude each other", suggestion: nil, command: "edit")
    }
    if arguments.has(EditOptions.private) && arguments.has(EditOptions.public) {
      throw ArgumentParser.usage("--private and --public exclude each other", suggestion: nil, command: "edit")
    }
    let pin: Bool? =
      arguments.has(EditOptions.pin) ? true : arguments.has(EditOptions.unpin) ? false : nil
    var change = MemoChange()
    change.title = arguments[EditOptions.title]
    if arguments.has(EditOptions.noTags) { change.tags = [] }
    if !arguments[EditOptions.tag].isEmpty { change.tags = arguments[EditOptions.tag] }
    if arguments.has(EditOptions.private) { change.isPrivate = true }
    if arguments.has(EditOptions.public) { change.isPrivate = false }
    // Without options, the editor; with --pin or --unpin alone, only the pin changes.
    let newBody: NewBody?
    if arguments.has(EditOptions.stdin) {
      newBody = .read { try stdinBody(context, for: .edit, allowEmpty: arguments.has(EditOptions.allowEmpty)) }
    } else if change.isEmpty && pin == nil {
      newBody = .edit {
        try EditorSession.edit($0, environment: context.environment, privacy: TerminalViewer.editorPrivacy())
      }
    } else {
      newBody = nil
    }
    switch try app.memos.edit(arguments.positional(0) ?? "", pin: pin, change: change, newBody: newBody) {
    case .pinned(let id, let pinned, _):
      context.console.print("\(id.short)  \(pinned ? "pinned" : "unpinned")")
    case .saved(let memo):
      if context.wantsJSON {
        context.printJSON(MemoJSON(memo: .init(memo.summary, names: try app.names())))
      } else {
        context.console.print("\(memo.id.short)  revision \(memo.revision)")
      }
    }
  }

  /// The options of `delete`.
  enum DeleteOptions {
    static let yes = SharedOptions.yes
    static let purge = Flag("purge", "drop it and its history here and on every member and relay of its notebook")
    static let json = SharedOptions.json.withHelp(
      "print {schema, deleted} (with --purge {schema, purged, notebook}) as JSON")
  }

  static let delete = Command(
    name: "delete", summary: "Delete a memo.",
    details: """
      Asks for confirmation on a terminal; scripts pass --yes. The text is wiped; a tombstone
      keeps the id, and the memo stays in the trash for 30 days (`memo-peer trash`). --purge
      drops the memo, its history and its trash entry for good, and signs a purge that every
      member and relay of its notebook applies at its next sync (docs/PRIVACY.md says what it
      cannot reach: copies already made, backups, exports, memos sent with `send`).
      """,
    options: [DeleteOptions.yes, DeleteOptions.purge, DeleteOptions.json],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let console = context.console
    if context.arguments.has(DeleteOptions.purge) {
      try purge(context)
      return
    }
    let confirm: ((MemoID, () throws -> String) throws -> Bool)? =
      context.arguments.has(DeleteOptions.yes)
      ? nil
      : { id, title in
        guard console.stdinIsTerminal else {
          throw MemoPeerError(
            .usage, "refusing to delete without confirmation (stdin is not a terminal)",
            hint: "pass --yes to delete from a script")
        }
        return try console.confirm("Delete memo \(id.short) “\(try title())”?")
      }
    let id = try context.app().memos.delete(context.arguments.positional(0) ?? "", confirm: confirm)
    if context.wantsJSON {
      context.printJSON(DeletedMemoJSON(deleted: id))
    } else {
      context.console.print("deleted \(id.short)")
    }
  }

  /// The options of `search`.
  enum SearchOptions {
    static let stdin = SharedOptions.stdin.withHelp("read TEXT from stdin instead of the command line")
    static let notebook = SharedOptions.notebook
    static let json = SharedOptions.json.withHelp("print {schema, memos: [...]} as JSON")
  }

  static let search = Command(
    name: "search", summary: "Find memos whose title, tags or body contain TEXT (case-insensitive).",
    details: """
      Memos are decrypted in memory only. A process's arguments are visible to other users
      of this machine (ps); to keep the search text private, pass --stdin and type it there.
      """,
    options: [SearchOptions.stdin, SearchOptions.notebook, SearchOptions.json],
    positionals: [PositionalSpec(name: "TEXT", optional: true, help: "what to look for")]
  ) { context in
    var query = context.arguments.positional(0) ?? ""
    if context.arguments.has(SearchOptions.stdin) {
      query = try MemoRules.decodeUTF8(try context.console.readStdin(.searchText), source: "stdin").trimmingWhitespace
    }
    guard !query.isEmpty else {
      throw ArgumentParser.usage("nothing to search for", suggestion: nil, command: "search")
    }
    let app = try context.app()
    let names = try app.names()
    let console = context.console
    let notebook = context.arguments[SearchOptions.notebook]
    // Each memo found is printed as it is read, as for `list`.
    if context.wantsJSON {
      var writer = MemoListJSONWriter(locked: nil, names: names) { console.write($0) }
      var relayed: [NotebookSummary] = []
      try whileStdoutIsOpen(console) { next in
        relayed = try app.memos.search(query, notebook: notebook) { memo in
          writer.add(memo)
          try next()
        }
      }
      writer.finish(relayed: relayed.isEmpty ? nil : relayed.map { .init($0, names: names) })
      return
    }
    var relayed: [NotebookSummary]?
    var lines = ListingLines(names: names)
    try whileStdoutIsOpen(console) { next in
      relayed = try app.memos.search(query, notebook: notebook) { memo in
        console.printLine { lines.append(memo, to: &$0) }
        try next()
      }
    }
    try noteRelayed(context, verb: "searched", relayed)
  }

  /// The options of `move`.
  enum MoveOptions {
    static let to = ValueOption("to", value: "NAME", "the notebook to move it to", completion: .dynamic(.notebooks))
    static let json = SharedOptions.json.withHelp("print the moved memo as JSON")
  }

  static let move = Command(
    name: "move", summary: "Move a memo to another notebook.",
    details: """
      The move is a new revision of the memo in the other notebook: it reaches that
      notebook's devices at their next sync. A device that gets only the old notebook keeps
      the version it had (as when a notebook is unshared).
      """,
    options: [MoveOptions.to, MoveOptions.json],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    guard let notebook = context.arguments[MoveOptions.to] else {
      throw ArgumentParser.usage("move needs --to NAME", suggestion: nil, command: "move")
    }
    let app = try context.app()
    let moved = try app.memos.move(context.arguments.positional(0) ?? "", to: notebook)
    let memo = moved.memo
    if context.wantsJSON {
      context.printJSON(MemoJSON(memo: .init(memo.summary, names: try app.names())))
    } else {
      context.console.print("\(memo.id.short)  moved to \(moved.notebook.displayName) (revision \(memo.revision))")
    }
  }

  /// `relayed` of `export --json`: nil when this device relays nothing.
  static func relayedJSON(_ context: CommandContext) throws -> [RelayedJSON]? {
    let app = try context.app()
    let relayed = try app.memos.relayedSummaries()
    let names = try app.names()
    return relayed.isEmpty ? nil : relayed.map { .init($0, names: names) }
  }

  /// Tells a person, on stderr, which relayed notebooks a command left out (`export`,
  /// `search`): it cannot read them.
  static func noteRelayed(_ context: CommandContext, verb: String, _ relayed: [NotebookSummary]? = nil) throws {
    let app = try context.app()
    let names = try app.names()
    for summary in try relayed ?? app.memos.relayedSummaries() {
      context.console.error("not \(verb) (sealed, relayed here): \(OutputFormat.relayedLine(summary, names: names))")
    }
  }

  // MARK: - Helpers

  /// Thrown by `whileStdoutIsOpen`'s check to stop reading memos nobody will see.
  private struct StdoutGone: Error {}

  /// Runs a streamed listing; `body` calls the check it is given after each memo, which
  /// stops the listing once stdout is closed (`| head`) or failed (`> /dev/full`: the
  /// command still exits with the write's error).
  static func whileStdoutIsOpen(_ console: Console, _ body: (_ next: () throws -> Void) throws -> Void) throws {
    do {
      try body { if console.stdoutClosed { throw StdoutGone() } }
    } catch is StdoutGone {}
  }

  /// `delete --purge`: the memo, its history and its trash entry, here and then on every
  /// member and relay of its notebook.
  static func purge(_ context: CommandContext) throws {
    let console = context.console
    let confirm: ((MemoID) throws -> Bool)? =
      context.arguments.has(DeleteOptions.yes)
      ? nil
      : { id in
        guard console.stdinIsTerminal else {
          throw MemoPeerError(
            .usage, "refusing to purge without confirmation (stdin is not a terminal)",
            hint: "pass --yes to purge from a script")
        }
        return try console.confirm(
          "Delete memo \(id.short) and its history for good, here and on every device it is shared with?"
            + " It cannot be restored.")
      }
    let (id, notebook) = try context.app().history.purge(context.arguments.positional(0) ?? "", confirm: confirm)
    if context.wantsJSON {
      context.printJSON(PurgedMemoJSON(purged: id, notebook: notebook))
    } else if notebook == nil {
      context.console.print("purged \(id.short) on this device")
    } else {
      context.console.print(
        "purged \(id.short) on this device; every member and relay of its notebook drops it at its next sync")
    }
  }

  /// `show --copy`: the body to the clipboard, a helper to clear it later, and a line that
  /// says so without any of the memo.
  static func copyToClipboard(_ memo: Memo, _ context: CommandContext) throws {
    if context.wantsJSON || context.arguments.has(ShowOptions.plain) {
      throw ArgumentParser.usage(
        "--copy prints nothing of the memo: leave out --json and --plain", suggestion: nil, command: "show")
    }
    let seconds =
      try context.arguments[ShowOptions.clearAfter].map { text -> Int in
        guard let value = Int(text), (1...86400).contains(value) else {
          throw ArgumentParser.usage(
            "--clear-after needs a number of seconds from 1 to 86400", suggestion: nil, command: "show")
        }
        return value
      } ?? Clipboard.defaultClearSeconds
    let clipboard = try Clipboard.find(context.environment)
    let text = Array(memo.body.utf8)
    try clipboard.copy(text)
    try clipboard.clearLater(text, after: seconds)
    context.console.print(
      "memo \(memo.id.short) is on the clipboard (\(clipboard.tool.name)); it will be cleared in \(seconds) s unless it changes"
    )
  }

  /// `new --from-clipboard`: the clipboard's text, checked like any body.
  static func clipboardBody(_ context: CommandContext) throws -> String {
    guard let bytes = try Clipboard.find(context.environment).paste(limit: MemoRules.maxBodyBytes) else {
      throw MemoPeerError(
        .tooLarge, "the clipboard holds more than \(MemoRules.maxBodyBytes) bytes", hint: "split it into several memos")
    }
    guard !bytes.isEmpty else {
      throw MemoPeerError(.invalidInput, "the clipboard holds no text", hint: "copy some text first")
    }
    return try MemoRules.decodeUTF8(bytes, source: "the clipboard")
  }

  /// The body of a new memo: stdin when piped, the editor on a terminal.
  static func readBody(_ context: CommandContext, initial: String) throws -> String {
    if context.console.stdinIsTerminal {
      return try EditorSession.edit(initial, environment: context.environment, privacy: TerminalViewer.editorPrivacy())
    }
    return try stdinBody(context, for: .new, allowEmpty: context.arguments.has(NewOptions.allowEmpty))
  }

  /// A memo's body from stdin for `command`: empty (or only white space) is refused, with
  /// that command's hint, unless `allowEmpty`.
  static func stdinBody(_ context: CommandContext, for command: Console.MemoBodyCommand, allowEmpty: Bool) throws
    -> String
  {
    let body = try MemoRules.decodeUTF8(try context.console.readStdin(.memoBody(command)), source: "stdin")
    guard allowEmpty || !body.trimmingWhitespace.isEmpty else { throw command.emptyInput }
    return body
  }
}
