import MemoCore
import MemoStore

/// The commands that work on memos of this node.
enum MemoCommands {
  static let new = Command(
    name: "new", summary: "Create a memo.",
    details: """
      The body is read from stdin when stdin is not a terminal, otherwise your editor
      ($VISUAL or $EDITOR) opens on a file in a private memory-backed directory; with
      --from-clipboard it is the clipboard's text (wl-paste on Wayland, xclip on X11).
      Without --title, the first line of the body becomes the title.
      """,
    options: [
      OptionSpec("title", short: "t", value: "TITLE", "the memo's title"),
      OptionSpec("from-clipboard", "take the body from the desktop clipboard"),
      OptionSpec("tag", value: "TAG", repeatable: true, "add a tag (repeatable)"),
      OptionSpec("private", "mark the memo private (hidden from widgets while locked)"),
      OptionSpec(
        "notebook", value: "NAME", "put it in this notebook (default: the default notebook)",
        completion: .dynamic(.notebooks)),
      OptionSpec("json", "print the new memo as JSON"),
    ],
    positionals: []
  ) { context in
    // Refuse before the editor opens: text typed into a locked node could not be saved.
    try requireUnlocked(context)
    let notebook = try context.notebookOption()
    let body =
      context.arguments.has("from-clipboard") ? try clipboardBody(context) : try readBody(context, initial: "")
    let draft = MemoDraft(
      title: context.arguments.value("title") ?? "", body: body, tags: context.arguments.all("tag"),
      isPrivate: context.arguments.has("private"))
    let memo = try context.store().create(draft, now: context.now, in: notebook?.id)
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary, names: try context.names())))
    } else {
      context.console.print(memo.id.rawValue)
    }
  }

  static let list = Command(
    name: "list", summary: "List memos, newest first.",
    details: """
      Shows the short id, the time of the last change, the title and the tags. ● marks private
      memos. While the node is locked, only the titles of memos not marked private are shown
      (no tags, and --tag needs the node unlocked).
      """,
    options: [
      OptionSpec("tag", value: "TAG", "only memos with this tag"),
      OptionSpec("notebook", value: "NAME", "only memos of this notebook", completion: .dynamic(.notebooks)),
      OptionSpec("json", "print {schema, memos: [...]} as JSON"),
    ],
    positionals: []
  ) { context in
    let store = try context.store()
    let notebook = try context.notebookOption()
    let memos = try store.listing(tag: context.arguments.value("tag"), notebook: notebook?.id)
    let names = try context.names()
    let relayed = try relayedSummaries(context, only: notebook)
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.MemoListJSON(
          memos: memos.map { .init($0, names: names) }, locked: !store.lockState.canReadContent,
          relayed: relayed.isEmpty ? nil : relayed.map { .init($0, names: names) }))
      return
    }
    for memo in memos { context.console.print(OutputFormat.line(memo, names: names)) }
    for summary in relayed { context.console.print(OutputFormat.relayedLine(summary, names: names)) }
    if !store.lockState.canReadContent {
      context.console.error("memo-peer: locked: titles of private memos and all tags are hidden (`memo-peer unlock`)")
    }
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
      changed meanwhile.
      """,
    options: [
      OptionSpec("plain", "print as text even on a terminal (it stays in the scrollback)"),
      OptionSpec("copy", "put the body on the clipboard; cleared after 45 s unless changed"),
      OptionSpec("clear-after", value: "SECONDS", "with --copy: clear the clipboard after SECONDS (default 45)"),
      OptionSpec("json", "print {schema, memo: {..., body}} as JSON"),
    ],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let memo = try context.store().memo(try context.memoIDOrSealed())
    if context.arguments.has("copy") {
      try copyToClipboard(memo, context)
      return
    }
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.MemoJSON(
          memo: .init(memo.summary, body: memo.body, conflictOf: memo.conflictOf, names: try context.names())))
      return
    }
    let document = OutputFormat.document(memo, names: try context.names())
    if !context.arguments.has("plain"), let viewer = TerminalViewer(environment: context.environment) {
      context.console.flush()
      try viewer.show(document)
      return
    }
    // --plain on a terminal: a body from a peer may hold escape sequences, and the terminal
    // would act on them. A pipe gets the exact text.
    let onTerminal = context.console.stdoutIsTerminal
    for line in document { context.console.print(onTerminal ? OutputFormat.terminalLine(line) : line) }
  }

  static let edit = Command(
    name: "edit", summary: "Change a memo.",
    details: """
      Without options, runs $VISUAL or $EDITOR on the body (also when not on a terminal, so
      scripts can set EDITOR). --stdin takes the new body from stdin instead. Title, tags
      and the private mark change with their options, without an editor.
      """,
    options: [
      OptionSpec("stdin", "read the new body from stdin"),
      OptionSpec("title", short: "t", value: "TITLE", "set the title (empty: derive from the body)"),
      OptionSpec("tag", value: "TAG", repeatable: true, "replace the tags (repeatable)"),
      OptionSpec("no-tags", "remove all tags"),
      OptionSpec("private", "mark private"),
      OptionSpec("public", "remove the private mark"),
      OptionSpec("pin", "pin it: the widget shows the pinned memo (works while locked)"),
      OptionSpec("unpin", "unpin it"),
      OptionSpec("json", "print the changed memo as JSON"),
    ],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let arguments = context.arguments
    let store = try context.store()
    let id = try context.memoID()
    if arguments.has("pin") && arguments.has("unpin") {
      throw ArgumentParser.usage("--pin and --unpin exclude each other", suggestion: nil, command: "edit")
    }
    if arguments.has("pin") || arguments.has("unpin") {
      try store.setPinned(id, arguments.has("pin"))
      let others = ["stdin", "title", "tag", "no-tags", "private", "public"]
      if !others.contains(where: { arguments.has($0) || arguments.value($0) != nil }) {
        context.console.print("\(id.short)  \(arguments.has("pin") ? "pinned" : "unpinned")")
        return
      }
    }
    try requireUnlocked(context)
    try store.checkChangeable(id)
    var change = MemoChange()
    change.title = arguments.value("title")
    if arguments.has("no-tags") { change.tags = [] }
    if !arguments.all("tag").isEmpty { change.tags = arguments.all("tag") }
    if arguments.has("private") && arguments.has("public") {
      throw ArgumentParser.usage("--private and --public exclude each other", suggestion: nil, command: "edit")
    }
    if arguments.has("private") { change.isPrivate = true }
    if arguments.has("public") { change.isPrivate = false }
    if arguments.has("stdin") {
      change.body = try MemoRules.decodeUTF8(
        try context.console.readStdin(limit: MemoRules.maxBodyBytes), source: "stdin")
    } else if change.isEmpty {
      change.body = try EditorSession.edit(
        try store.memo(id).body, environment: context.environment, privacy: TerminalViewer.editorPrivacy())
    }
    let memo = try save(change, to: id, in: store, now: context.now)
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary)))
    } else {
      context.console.print("\(memo.id.short)  revision \(memo.revision)")
    }
  }

  static let delete = Command(
    name: "delete", summary: "Delete a memo.",
    details: "Asks for confirmation on a terminal; scripts pass --yes. The text is wiped; a tombstone keeps the id.",
    options: [OptionSpec("yes", short: "y", "do not ask"), OptionSpec("json", "print {schema, deleted} as JSON")],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    let store = try context.store()
    let id = try context.memoID()
    try store.checkChangeable(id)
    if !context.arguments.has("yes") {
      guard context.console.stdinIsTerminal else {
        throw MemoPeerError(
          .usage, "refusing to delete without confirmation (stdin is not a terminal)",
          hint: "pass --yes to delete from a script")
      }
      let title = try store.memo(id).title
      guard try context.console.confirm("Delete memo \(id.short) “\(title)”?") else {
        throw MemoPeerError(.cancelled, "nothing was deleted")
      }
    }
    try store.delete(id, now: context.now)
    if context.wantsJSON {
      context.printJSON(DeletedJSON(deleted: id.rawValue))
    } else {
      context.console.print("deleted \(id.short)")
    }
  }

  static let search = Command(
    name: "search", summary: "Find memos whose title, tags or body contain TEXT (case-insensitive).",
    details: """
      Memos are decrypted in memory only. A process's arguments are visible to other users
      of this machine (ps); to keep the search text private, pass --stdin and type it there.
      """,
    options: [
      OptionSpec("stdin", "read TEXT from stdin instead of the command line"),
      OptionSpec("notebook", value: "NAME", "only memos of this notebook", completion: .dynamic(.notebooks)),
      OptionSpec("json", "print {schema, memos: [...]} as JSON"),
    ],
    positionals: [PositionalSpec(name: "TEXT", optional: true, help: "what to look for")]
  ) { context in
    var query = context.arguments.positional(0) ?? ""
    if context.arguments.has("stdin") {
      query = try MemoRules.decodeUTF8(try context.console.readStdin(limit: 4096), source: "stdin").trimmingWhitespace
    }
    guard !query.isEmpty else {
      throw ArgumentParser.usage("nothing to search for", suggestion: nil, command: "search")
    }
    let notebook = try context.notebookOption()
    let found = try context.store().search(query, notebook: notebook?.id)
    let names = try context.names()
    let relayed = try relayedSummaries(context, only: notebook)
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.MemoListJSON(
          memos: found.map { .init($0, names: names) },
          relayed: relayed.isEmpty ? nil : relayed.map { .init($0, names: names) }))
      return
    }
    for memo in found { context.console.print(OutputFormat.line(memo, names: names)) }
    try noteRelayed(context, verb: "searched", relayed)
  }

  static let move = Command(
    name: "move", summary: "Move a memo to another notebook.",
    details: """
      The move is a new revision of the memo in the other notebook: it reaches that
      notebook's devices at their next sync. A device that gets only the old notebook keeps
      the version it had (as when a notebook is unshared).
      """,
    options: [
      OptionSpec("to", value: "NAME", "the notebook to move it to", completion: .dynamic(.notebooks)),
      OptionSpec("json", "print the moved memo as JSON"),
    ],
    positionals: [
      PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix", completion: .dynamic(.memoIDs))
    ]
  ) { context in
    try requireUnlocked(context)
    guard let target = try context.notebookOption("to") else {
      throw ArgumentParser.usage("move needs --to NAME", suggestion: nil, command: "move")
    }
    let memo = try context.store().move(try context.memoID(), to: target.id, now: context.now)
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary, names: try context.names())))
    } else {
      context.console.print("\(memo.id.short)  moved to \(target.displayName) (revision \(memo.revision))")
    }
  }

  /// `relayed` of `list`, `search` and `export --json`: nil when this device relays nothing.
  static func relayedJSON(_ context: CommandContext) throws -> [OutputFormat.RelayedJSON]? {
    let relayed = try relayedSummaries(context)
    let names = try context.names()
    return relayed.isEmpty ? nil : relayed.map { .init($0, names: names) }
  }

  /// Tells a person, on stderr, which relayed notebooks a command left out (`export`,
  /// `search`): it cannot read them.
  static func noteRelayed(_ context: CommandContext, verb: String, _ relayed: [NotebookSummary]? = nil) throws {
    let names = try context.names()
    for summary in try relayed ?? relayedSummaries(context) {
      context.console.error("not \(verb) (sealed, relayed here): \(OutputFormat.relayedLine(summary, names: names))")
    }
  }

  /// The notebooks this device relays (all, or `only` when it is one of them): what `list`,
  /// `search` and `export` show of them — counts, never content.
  static func relayedSummaries(_ context: CommandContext, only: Notebook? = nil) throws -> [NotebookSummary] {
    if let only, only.role == .member { return [] }
    return try context.store().relayedNotebookSummaries().filter { only == nil || $0.notebook.id == only?.id }
  }

  // MARK: - Helpers

  /// `show --copy`: the body to the clipboard, a helper to clear it later, and a line that
  /// says so without any of the memo.
  static func copyToClipboard(_ memo: Memo, _ context: CommandContext) throws {
    if context.arguments.has("json") || context.arguments.has("plain") {
      throw ArgumentParser.usage(
        "--copy prints nothing of the memo: leave out --json and --plain", suggestion: nil, command: "show")
    }
    let seconds =
      try context.arguments.value("clear-after").map { text -> Int in
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

  /// `delete --json`.
  struct DeletedJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let deleted: String
  }

  /// Changes a memo (for `edit` and the web page). When a sync brought a conflict copy while
  /// the text was being written, or (with `expectedRevision`) the memo changed since the
  /// writer read it, the new text is kept as a memo of its own rather than lost or written
  /// over the other change, and the error says which.
  static func save(
    _ change: MemoChange, to id: MemoID, in store: MemoStore, now: Timestamp, expectedRevision: Int64? = nil
  )
    throws -> Memo
  {
    func keepAsNewMemo(_ reason: String) throws -> Never {
      let current = try store.memo(id)
      let saved = try store.create(
        MemoDraft(
          title: change.title ?? current.title, body: change.body ?? current.body, tags: change.tags ?? current.tags,
          isPrivate: change.isPrivate ?? current.isPrivate), now: now)
      throw MemoPeerError(
        .conflict, "\(reason); your text was saved as memo \(saved.id.short)",
        hint: "`memo-peer conflicts` shows the versions of \(id.short)")
    }
    if let expectedRevision, try store.memo(id).revision != expectedRevision {
      let reason = "memo \(id.short) changed (on another device, or elsewhere) since you opened it"
      guard change.body != nil else {
        throw MemoPeerError(.conflict, reason + "; nothing was changed", hint: "open it again and repeat the change")
      }
      try keepAsNewMemo(reason)
    }
    do {
      return try store.update(id, change, now: now)
    } catch let error as MemoPeerError where error.code == .conflict && change.body != nil {
      try keepAsNewMemo(error.message)
    }
  }

  /// Refuses a change before any text is typed when the node is locked.
  static func requireUnlocked(_ context: CommandContext) throws {
    guard try context.store().lockState.canReadContent else { throw MemoStore.lockedError }
  }

  /// The body of a new memo: stdin when piped, the editor on a terminal.
  static func readBody(_ context: CommandContext, initial: String) throws -> String {
    if context.console.stdinIsTerminal {
      return try EditorSession.edit(initial, environment: context.environment, privacy: TerminalViewer.editorPrivacy())
    }
    let bytes = try context.console.readStdin(limit: MemoRules.maxBodyBytes)
    return try MemoRules.decodeUTF8(bytes, source: "stdin")
  }
}
