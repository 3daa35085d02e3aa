import MemoCore
import MemoStore

/// `export --format markdown DIR` and `import --markdown PATH…`.
enum MarkdownCommands {
  static func export(_ context: CommandContext) throws {
    guard let folder = context.arguments.positional(0) ?? context.arguments.value("output"), folder != "-" else {
      throw ArgumentParser.usage(
        "--format markdown needs a folder: export --format markdown DIR", suggestion: nil, command: "export")
    }
    try MemoCommands.requireUnlocked(context)
    let store = try context.store()
    let count = try MarkdownFiles.export(store, to: folder, force: context.arguments.has("force")) {
      context.console.progress("exporting… \($0) memos")
    }
    context.console.endProgress()
    if context.console.stdoutIsTerminal || context.console.stderrIsTerminal {
      context.console.error(
        "memo-peer: warning: the files in \(folder) are plain text: anyone who can read them reads your memos")
    }
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.ExportJSON(exported: count, path: folder, relayed: try MemoCommands.relayedJSON(context)))
    } else {
      context.console.print("exported \(count) memo(s) to \(folder) as Markdown")
      try MemoCommands.noteRelayed(context, verb: "exported")
    }
  }

  static func `import`(_ context: CommandContext) throws {
    let (files, ignored) = try MarkdownFiles.collect(context.arguments.positionals)
    var sources: [MarkdownFiles.Source] = []
    for (index, file) in files.enumerated() {
      sources.append(try MarkdownFiles.read(file))
      if (index + 1) % 500 == 0 { context.console.progress("reading… \(index + 1) of \(files.count) files") }
    }
    context.console.endProgress()
    try MemoCommands.requireUnlocked(context)
    var summary = try context.store().importMarkdown(sources, now: context.now)
    summary.ignored = ignored
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.ImportJSON(
          added: summary.added, updated: summary.updated, unchanged: summary.unchanged, ignored: summary.ignored))
    } else {
      var line =
        "imported \(files.count) file(s): \(summary.added) added, \(summary.updated) updated, "
        + "\(summary.unchanged) skipped (already here)"
      if ignored > 0 { line += "; \(ignored) other file(s) ignored" }
      context.console.print(line)
    }
  }
}
