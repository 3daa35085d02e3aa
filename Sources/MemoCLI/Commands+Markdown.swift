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

  /// Imports the valid files, lists each refused one on stderr (escaped for the terminal),
  /// and ends with exit status 4 (`invalid-input`) when any was refused; with
  /// `--all-or-nothing` a refused file keeps every file out.
  static func `import`(_ context: CommandContext) throws {
    let console = context.console
    let allOrNothing = context.arguments.has(NodeCommands.ImportOptions.allOrNothing)
    let result = try context.app().transfer.importMarkdown(
      context.arguments.positionals, allOrNothing: allOrNothing,
      reading: { console.progress("reading… \($0) of \($1) files") }, read: { console.endProgress() })
    let summary = result.summary
    if context.wantsJSON {
      context.printJSON(ImportJSON(result))
    } else {
      // The message names the file (and never its text); a path may hold anything.
      for refused in result.refused {
        console.error("memo-peer: refused \(TerminalText.display(refused.error.message, limit: 4096))")
      }
      var line =
        "imported \(result.files - result.refused.count) of \(result.files) file(s): \(summary.added) added, "
        + "\(summary.updated) updated, \(summary.unchanged) skipped (already here)"
      if !result.refused.isEmpty { line += "; \(result.refused.count) refused" }
      if summary.ignored > 0 { line += "; \(summary.ignored) other file(s) ignored" }
      if allOrNothing && !result.refused.isEmpty { line = "imported nothing (--all-or-nothing): " + line }
      console.print(line)
    }
    guard result.refused.isEmpty else {
      throw MemoPeerError(
        .invalidInput,
        allOrNothing
          ? "\(result.refused.count) of \(result.files) file(s) refused, so none was imported (--all-or-nothing)"
          : "\(result.refused.count) of \(result.files) file(s) refused; the others were imported",
        hint: "fix the files listed and import them again (docs/FORMATS.md, Markdown files)")
    }
  }
}
