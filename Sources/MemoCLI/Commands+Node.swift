import MemoApp
import MemoCore

/// Commands about the node itself and moving memos between nodes.
enum NodeCommands {
  /// The options of `init`.
  enum InitOptions {
    static let json = SharedOptions.json.withHelp("print the node's paths as JSON")
  }

  static let initialize = Command(
    name: "init", summary: "Create this node's device key and memo store (other commands do it on first use).",
    details: """
      The device key goes to the key directory, the database to the data directory; both are
      0700 and owned by you. MEMO_PEER_HOME=DIR puts everything under DIR.
      """,
    options: [InitOptions.json],
    positionals: []
  ) { context in
    let setup = try context.app().transfer.initialize()
    if context.wantsJSON {
      context.printJSON(InitializedJSON(setup))
      return
    }
    let console = context.console
    console.print(setup.created ? "memo-peer node created" : "memo-peer node already set up")
    console.print("  data:  \(setup.paths.dataDirectory)")
    console.print("  keys:  \(setup.paths.keyDirectory)  (device-only: never exported or backed up by memo-peer)")
    console.print("  memos: \(setup.memos)")
    console.print("  \(ProtectionCommands.describe(setup.protection))")
  }

  /// The options of `export` (also read by `MarkdownCommands.export`).
  enum ExportOptions {
    static let output = ValueOption("output", short: "o", value: "FILE", "where to write the archive (- for stdout)")
    static let passphraseFD = SharedOptions.passphraseFD
    static let format = ValueOption(
      "format", value: "FORMAT", "archive (default) or markdown (plain-text files, one per memo)",
      completion: .choices(["archive", "markdown"]))
    static let force = Flag("force", "with --format markdown: write into a folder that is not empty")
    static let json = SharedOptions.json.withHelp("print {schema, exported, path} as JSON")
  }

  static let export = Command(
    name: "export", summary: "Write all memos to a passphrase-protected archive, or as Markdown files.",
    details: """
      For moving memos to another device: the archive is sealed with a key derived from the
      passphrase (scrypt) and never contains the device key. The passphrase is asked on the
      terminal, or read as one line from descriptor N with --passphrase-fd N.
      --format markdown DIR writes one Markdown file per memo (front matter with id, title,
      tags, times) into DIR, 0700, each file 0600. These files are PLAIN TEXT: anyone who can
      read them reads the memos. DIR must be new or empty unless --force.
      """,
    options: [
      ExportOptions.output, ExportOptions.passphraseFD, ExportOptions.format, ExportOptions.force, ExportOptions.json,
    ],
    positionals: [PositionalSpec(name: "DIR", optional: true, help: "with --format markdown: the folder to write")]
  ) { context in
    switch context.arguments[ExportOptions.format] ?? "archive" {
    case "archive":
      guard context.arguments.positional(0) == nil else {
        throw ArgumentParser.usage(
          "DIR is for --format markdown; the archive goes to --output FILE", suggestion: nil, command: "export")
      }
    case "markdown": return try MarkdownCommands.export(context)
    case let other:
      throw ArgumentParser.usage(
        "unknown export format \(ArgumentParser.echo(other))",
        suggestion: ArgumentParser.closest(to: other, among: ["archive", "markdown"]), command: "export")
    }
    guard let output = context.arguments[ExportOptions.output] else {
      throw ArgumentParser.usage("missing --output FILE", suggestion: nil, command: "export")
    }
    if output == "-" && context.console.stdoutIsTerminal {
      throw MemoPeerError(.usage, "refusing to write a binary archive to the terminal", hint: "use --output FILE")
    }
    let console = context.console
    let count = try context.app().transfer.exportArchive(
      to: output == "-" ? .descriptor(1, name: output) : .file(output),
      passphrase: {
        try console.passphrase(prompt: "Passphrase for the archive: ", confirm: true, fd: try passphraseFD(context))
      }, progress: { console.progress("exporting… \($0) memos") })
    console.endProgress()
    if output == "-" { return }
    if context.wantsJSON {
      context.printJSON(ExportJSON(exported: count, path: output, relayed: try MemoCommands.relayedJSON(context)))
    } else {
      console.print("exported \(count) memo(s) to \(output)")
      try MemoCommands.noteRelayed(context, verb: "exported")
    }
  }

  /// The options of `import`.
  enum ImportOptions {
    static let passphraseFD = SharedOptions.passphraseFD
    static let markdown = Flag("markdown", "import Markdown or text files and folders instead of an archive")
    static let allOrNothing = Flag(
      "all-or-nothing", "with --markdown: import nothing when a file is refused (an archive always is whole)")
    static let json = SharedOptions.json.withHelp(
      "print {schema, added, updated, unchanged} as JSON (and ignored and refused, for --markdown)")
  }

  static let `import` = Command(
    name: "import", summary: "Add the memos of an archive made by `memo-peer export`, or Markdown files.",
    details: """
      The whole archive is authenticated before anything is stored, and then imported in one
      transaction: all of it or none. Memos already here at the same or a newer revision are
      left alone.
      --markdown PATH… takes Markdown or text files (.md, .markdown, .txt) and folders of them:
      the title from front matter or the first `# ` heading, tags from front matter and
      #tags in the text, times from front matter or the file's modification time. Every file
      is checked first, then the valid ones are added in one transaction; each refused file
      is listed with its reason and the exit status is 4. --all-or-nothing adds none when
      any file is refused.
      """,
    options: [ImportOptions.passphraseFD, ImportOptions.markdown, ImportOptions.allOrNothing, ImportOptions.json],
    positionals: [
      PositionalSpec(
        name: "PATH", optional: false, help: "the archive, or with --markdown files and folders", completion: .file,
        variadic: true)
    ]
  ) { context in
    if context.arguments.has(ImportOptions.markdown) { return try MarkdownCommands.import(context) }
    if context.arguments.has(ImportOptions.allOrNothing) {
      throw ArgumentParser.usage(
        "--all-or-nothing is for --markdown: an archive is always imported whole or not at all", suggestion: nil,
        command: "import")
    }
    guard context.arguments.positionals.count == 1 else {
      throw ArgumentParser.usage(
        "import takes one archive (several paths are for --markdown)", suggestion: nil, command: "import")
    }
    let console = context.console
    let counts = try context.app().transfer.importArchive(
      context.arguments.positional(0) ?? "",
      passphrase: {
        try console.passphrase(prompt: "Passphrase of the archive: ", confirm: false, fd: try passphraseFD(context))
      }, progress: { console.progress("importing… \($0) memos") })
    console.endProgress()
    if context.wantsJSON {
      context.printJSON(ImportJSON(counts))
    } else {
      console.print("imported: \(counts.added) added, \(counts.updated) updated, \(counts.unchanged) unchanged")
    }
  }

  /// `--passphrase-fd N` of `export` and `import`.
  private static func passphraseFD(_ context: CommandContext) throws -> Int32? {
    guard let text = context.arguments[SharedOptions.passphraseFD] else { return nil }
    guard let fd = Int32(text), fd >= 0 else {
      throw ArgumentParser.usage("--passphrase-fd needs a file descriptor number", suggestion: nil, command: nil)
    }
    return fd
  }
}
