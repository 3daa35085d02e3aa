import MemoCore
import MemoStore

/// The commands that work on memos of this node.
enum MemoCommands {
  static let new = Command(
    name: "new", summary: "Create a memo.",
    details: """
      The body is read from stdin when stdin is not a terminal, otherwise your editor
      ($VISUAL or $EDITOR) opens on a file in a private memory-backed directory. Without
      --title, the first line of the body becomes the title.
      """,
    options: [
      OptionSpec("title", short: "t", value: "TITLE", "the memo's title"),
      OptionSpec("tag", value: "TAG", repeatable: true, "add a tag (repeatable)"),
      OptionSpec("private", "mark the memo private (hidden from widgets while locked)"),
      OptionSpec("json", "print the new memo as JSON"),
    ],
    positionals: []
  ) { context in
    let body = try readBody(context, initial: "")
    let draft = MemoDraft(
      title: context.arguments.value("title") ?? "", body: body, tags: context.arguments.all("tag"),
      isPrivate: context.arguments.has("private"))
    let memo = try context.store().create(draft, now: context.now)
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary)))
    } else {
      context.console.print(memo.id.rawValue)
    }
  }

  static let list = Command(
    name: "list", summary: "List memos, newest first.",
    details: "Shows the short id, the time of the last change, the title and the tags. ● marks private memos.",
    options: [
      OptionSpec("tag", value: "TAG", "only memos with this tag"),
      OptionSpec("json", "print {schema, memos: [...]} as JSON"),
    ],
    positionals: []
  ) { context in
    let memos = try context.store().summaries(tag: context.arguments.value("tag"))
    printSummaries(memos, context)
  }

  static let show = Command(
    name: "show", summary: "Show one memo.",
    details: "ID may be any unique prefix of the memo's id.",
    options: [OptionSpec("json", "print {schema, memo: {..., body}} as JSON")],
    positionals: [PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix")]
  ) { context in
    let memo = try context.store().memo(try context.memoID())
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary, body: memo.body)))
      return
    }
    let console = context.console
    console.print(memo.title)
    var meta = "id \(memo.id)  ·  updated \(OutputFormat.localTime(memo.updated))  ·  revision \(memo.revision)"
    if memo.isPrivate { meta += "  ·  private" }
    console.print(meta)
    if !memo.tags.isEmpty { console.print(memo.tags.map { "#" + $0 }.joined(separator: " ")) }
    console.print("")
    console.write(Array(memo.body.utf8))
    if !memo.body.isEmpty && !memo.body.hasSuffix("\n") { console.print("") }
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
      OptionSpec("json", "print the changed memo as JSON"),
    ],
    positionals: [PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix")]
  ) { context in
    let arguments = context.arguments
    let store = try context.store()
    let id = try context.memoID()
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
      change.body = try EditorSession.edit(try store.memo(id).body, environment: context.environment)
    }
    let memo = try store.update(id, change, now: context.now)
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
    positionals: [PositionalSpec(name: "ID", optional: false, help: "memo id or unique prefix")]
  ) { context in
    let store = try context.store()
    let id = try context.memoID()
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
      struct Deleted: Encodable {
        let schema = OutputFormat.jsonSchema
        let deleted: String
      }
      context.printJSON(Deleted(deleted: id.rawValue))
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
    printSummaries(try context.store().search(query), context)
  }

  // MARK: - Helpers

  static func printSummaries(_ memos: [MemoSummary], _ context: CommandContext) {
    if context.wantsJSON {
      context.printJSON(OutputFormat.MemoListJSON(memos: memos.map { .init($0) }))
      return
    }
    for memo in memos { context.console.print(OutputFormat.line(memo)) }
  }

  /// The body of a new memo: stdin when piped, the editor on a terminal.
  static func readBody(_ context: CommandContext, initial: String) throws -> String {
    if context.console.stdinIsTerminal {
      return try EditorSession.edit(initial, environment: context.environment)
    }
    let bytes = try context.console.readStdin(limit: MemoRules.maxBodyBytes)
    return try MemoRules.decodeUTF8(bytes, source: "stdin")
  }
}
