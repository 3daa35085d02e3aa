import MemoApp
import MemoCore
import MemoTransfer

/// `export --format markdown DIR` and `import --markdown PATH…`.
enum MarkdownCommands {
  static func export(_ context: CommandContext) throws {
    guard let folder = context.arguments.positional(0) ?? context.arguments[NodeCommands.ExportOptions.output],
      folder != "-"
    else {
      throw ArgumentParser.usage(
        "--format markdown needs a folder: export --format markdown DIR", suggestion: nil, command: "export")
    }
    let console = context.console
    let count = try context.app().transfer.exportMarkdown(
      to: folder, force: context.arguments.has(NodeCommands.ExportOptions.force)
    ) { console.progress("exporting… \($0) memos") }
    console.endProgress()
    if context.console.stdoutIsTerminal || context.console.stderrIsTerminal {
      context.console.error(
        "memo-peer: warning: the files in \(folder) are plain text: anyone who can read them reads your memos")
    }
    if context.wantsJSON {
      context.printJSON(
        ExportJSON(exported: count, path: folder, relayed: try MemoCommands.relayedJSON(context)))
    } else {
      context.console.print("exported \(count) memo(s) to \(folder) as Markdown")
      try MemoCommands.noteRelayed(context, verb: "exported")
    }
  }

  static func `import`(_ context: CommandContext) throws {
    let console = context.console
    let (files, summary) = try context.app().transfer.importMarkdown(
      context.arguments.positionals, reading: { console.progress("reading… \($0) of \($1) files") },
      read: { console.endProgress() })
    if context.wantsJSON {
      context.printJSON(ImportJSON(summary))
    } else {
      var line =
        "imported \(files) file(s): \(summary.added) added, \(summary.updated) updated, "
        + "\(summary.unchanged) skipped (already here)"
      if summary.ignored > 0 { line += "; \(summary.ignored) other file(s) ignored" }
      context.console.print(line)
    }
  }
}
