import MemoCore
import MemoStore

/// Commands about the node itself and moving memos between nodes.
enum NodeCommands {
  static let initialize = Command(
    name: "init", summary: "Create this node's device key and memo store (other commands do it on first use).",
    details: """
      The device key goes to the key directory, the database to the data directory; both are
      0700 and owned by you. MEMO_PEER_HOME=DIR puts everything under DIR.
      """,
    options: [OptionSpec("json", "print the node's paths as JSON")],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let existed = PrivateFiles.exists(paths.databasePath)
    let store = try context.store()
    let protection = try DeviceKeys(paths: paths).status()
    if context.wantsJSON {
      struct Initialized: Encodable {
        let schema = OutputFormat.jsonSchema
        let created: Bool
        let dataDirectory: String
        let keyDirectory: String
        let schemaVersion: Int
        let memos: Int
        let protection: String
        let state: String

        enum CodingKeys: String, CodingKey {
          case schema, created, memos, protection, state
          case dataDirectory = "data_directory"
          case keyDirectory = "key_directory"
          case schemaVersion = "schema_version"
        }
      }
      context.printJSON(
        Initialized(
          created: !existed, dataDirectory: paths.dataDirectory, keyDirectory: paths.keyDirectory,
          schemaVersion: store.schemaVersion, memos: try store.count(), protection: protection.protection.rawValue,
          state: protection.lockState.name))
      return
    }
    let console = context.console
    console.print(existed ? "memo-peer node already set up" : "memo-peer node created")
    console.print("  data:  \(paths.dataDirectory)")
    console.print("  keys:  \(paths.keyDirectory)  (device-only: never exported or backed up by memo-peer)")
    console.print("  memos: \(try store.count())")
    console.print("  \(ProtectionCommands.describe(protection))")
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
      OptionSpec("output", short: "o", value: "FILE", "where to write the archive (- for stdout)"),
      OptionSpec("passphrase-fd", value: "N", "read the passphrase from this file descriptor"),
      OptionSpec(
        "format", value: "FORMAT", "archive (default) or markdown (plain-text files, one per memo)",
        completion: .choices(["archive", "markdown"])),
      OptionSpec("force", "with --format markdown: write into a folder that is not empty"),
      OptionSpec("json", "print {schema, exported, path} as JSON"),
    ],
    positionals: [PositionalSpec(name: "DIR", optional: true, help: "with --format markdown: the folder to write")]
  ) { context in
    switch context.arguments.value("format") ?? "archive" {
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
    guard let output = context.arguments.value("output") else {
      throw ArgumentParser.usage("missing --output FILE", suggestion: nil, command: "export")
    }
    if output == "-" && context.console.stdoutIsTerminal {
      throw MemoPeerError(.usage, "refusing to write a binary archive to the terminal", hint: "use --output FILE")
    }
    try MemoCommands.requireUnlocked(context)
    let store = try context.store()
    let passphrase = try context.console.passphrase(
      prompt: "Passphrase for the archive: ", confirm: true, fd: try passphraseFD(context))
    let file = output == "-" ? nil : try AtomicFile(path: output)
    let writer = try MemoArchiveWriter(fd: file?.fd ?? 1, destination: output, passphrase: passphrase)
    try store.forEachMemo { memo in
      try writer.append(memo)
      if writer.count % 500 == 0 { context.console.progress("exporting… \(writer.count) memos") }
    }
    try writer.finish()
    context.console.endProgress()
    try file?.commit()
    if output == "-" { return }
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.ExportJSON(
          exported: writer.count, path: output, relayed: try MemoCommands.relayedJSON(context)))
    } else {
      context.console.print("exported \(writer.count) memo(s) to \(output)")
      try MemoCommands.noteRelayed(context, verb: "exported")
    }
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
      is checked first, then all are added in one transaction, or none.
      """,
    options: [
      OptionSpec("passphrase-fd", value: "N", "read the passphrase from this file descriptor"),
      OptionSpec("markdown", "import Markdown or text files and folders instead of an archive"),
      OptionSpec("json", "print {schema, added, updated, unchanged} as JSON (and ignored, for --markdown)"),
    ],
    positionals: [
      PositionalSpec(
        name: "PATH", optional: false, help: "the archive, or with --markdown files and folders", completion: .file,
        variadic: true)
    ]
  ) { context in
    if context.arguments.has("markdown") { return try MarkdownCommands.import(context) }
    guard context.arguments.positionals.count == 1 else {
      throw ArgumentParser.usage(
        "import takes one archive (several paths are for --markdown)", suggestion: nil, command: "import")
    }
    let path = context.arguments.positional(0) ?? ""
    let bytes = try PrivateFiles.read(path, limit: MemoArchiveReader.maxArchiveBytes)
    try MemoCommands.requireUnlocked(context)
    let store = try context.store()
    let passphrase = try context.console.passphrase(
      prompt: "Passphrase of the archive: ", confirm: false, fd: try passphraseFD(context))
    let reader = try MemoArchiveReader(bytes: bytes, source: path, passphrase: passphrase)
    try reader.forEachMemo { _ in }  // authenticate every chunk before writing anything
    var counts: [MemoStore.ImportOutcome: Int] = [:]
    var done = 0
    try store.batch {
      try reader.forEachMemo { memo in
        counts[try store.importMemo(memo), default: 0] += 1
        done += 1
        if done % 500 == 0 { context.console.progress("importing… \(done) memos") }
      }
    }
    context.console.endProgress()
    if context.wantsJSON {
      context.printJSON(
        OutputFormat.ImportJSON(
          added: counts[.added] ?? 0, updated: counts[.updated] ?? 0, unchanged: counts[.unchanged] ?? 0))
    } else {
      context.console.print(
        "imported: \(counts[.added] ?? 0) added, \(counts[.updated] ?? 0) updated, \(counts[.unchanged] ?? 0) unchanged"
      )
    }
  }

  private static func passphraseFD(_ context: CommandContext) throws -> Int32? {
    guard let text = context.arguments.value("passphrase-fd") else { return nil }
    guard let fd = Int32(text), fd >= 0 else {
      throw ArgumentParser.usage("--passphrase-fd needs a file descriptor number", suggestion: nil, command: nil)
    }
    return fd
  }
}
