import MemoApp
import MemoCore
import MemoStore

/// History, restore, the trash and undo by device (docs/CLI.md, "History"). Everything a
/// peer may have written (titles, first lines, diff lines, device names) is escaped for the
/// terminal; `--json` gives the exact text.
enum HistoryCommands {
  static let memoID = PositionalSpec(
    name: "ID", optional: false, help: "memo id or unique prefix (deleted memos too)", completion: .dynamic(.memoIDs))

  /// The options of `history`.
  enum HistoryOptions {
    static let json = SharedOptions.json.withHelp("print {schema, memo, revisions: [...]} as JSON")
    static let from = ValueOption(
      "from", value: "PEER", "first fetch the sealed history a relay of the memo's notebook kept")
    static let timeout = SharedOptions.timeout.withHelp("with --from: how long to wait for PEER (default 30)")
  }

  static let history = Command(
    name: "history", summary: "List the revisions of a memo this device kept.",
    details: """
      Oldest first, the current one last: the revision number, when it was written, the
      device that signed it ("this device", a trusted device's name, or "unsigned (before
      version 3)"), the body's size and its first line. This device keeps every revision it
      saw replaced (by an edit here, a sync, a delivery or a conflict's resolution), sealed
      like the memo, up to 100 revisions or 365 days per memo and 256 MiB in all
      (config.json "history"). `show ID --revision N` shows one, `diff` compares two,
      `restore` brings one back.

      With --from PEER, first asks PEER (a trusted device that relays the memo's notebook)
      for the sealed revisions it forwarded and kept: a laptop that was away while a memo
      was edited several times gets the revisions only the relay still holds. Each is
      checked as a synced one (signature, revocation, the notebook key); those that fail
      are kept aside, still sealed, with PEER's name, and the first line counts them. Waits
      for consent and PEER as `ping` does (status 17 after --timeout).
      """,
    options: [HistoryOptions.from, HistoryOptions.timeout, HistoryOptions.json],
    positionals: [memoID]
  ) { context in
    let app = try context.app()
    let reference = context.arguments.positional(0) ?? ""
    let names = try app.names()
    guard let peer = context.arguments[HistoryOptions.from] else {
      if context.arguments[HistoryOptions.timeout] != nil {
        throw ArgumentParser.usage("--timeout goes with --from PEER", suggestion: nil, command: "history")
      }
      let history = try app.history.history(reference)
      if context.wantsJSON {
        context.printJSON(HistoryJSON(history, names: names))
        return
      }
      for entry in history.revisions { context.console.print(line(entry, names: names)) }
      return
    }
    let timeout = try NetworkCommands.seconds(
      context.arguments[HistoryOptions.timeout], default: 30, option: HistoryOptions.timeout)
    let printer = LinePrinter()
    let report = try app.history.fetch(
      reference, from: peer, timeout: timeout, prompt: context.console,
      onState: { printer.error("memo-peer: \($0)") })
    if context.wantsJSON {
      context.printJSON(HistoryJSON(report, names: names))
      return
    }
    context.console.print(fetchSummary(report))
    for entry in report.history.revisions { context.console.print(line(entry, names: names)) }
  }

  /// The first line of `history --from`: what the relay sent and what became of it.
  static func fetchSummary(_ report: HistoryFetchReport) -> String {
    let fetched = report.fetched
    var notes: [String] = []
    if fetched.known > 0 { notes.append("\(fetched.known) already here") }
    if fetched.notSuperseded > 0 { notes.append("\(fetched.notSuperseded) newer than this device's: sync first") }
    if fetched.missingKey > 0 { notes.append("\(fetched.missingKey) under a key this device lacks") }
    if fetched.keptAside > 0 { notes.append("\(fetched.keptAside) kept aside: they failed their checks") }
    let noun = fetched.added == 1 ? "revision" : "revisions"
    return "fetched \(fetched.added) \(noun) from \(report.peer.displayName.terminalSafe)"
      + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")")
  }

  /// One line of `history`.
  static func line(_ entry: MemoRevision, names: Names) -> String {
    let number = String(entry.memo.revision)
    let size = entry.memo.isDeleted ? "-" : "\(entry.memo.body.utf8.count) B"
    return String(repeating: " ", count: max(0, 4 - number.count)) + number + "  "
      + OutputFormat.localTime(entry.memo.updated) + "  " + names.author(entry.author) + "  " + size + "  "
      + OutputFormat.title(HistoryText.firstLine(entry.memo)) + (entry.isCurrent ? "  (current)" : "")
  }

  /// A revision number as the commands take it.
  static func revisionNumber(_ text: String?, option: String, command: String) throws -> Int64? {
    guard let text else { return nil }
    guard let number = Int64(text), number >= 1 else {
      throw ArgumentParser.usage(
        "\(option) needs a revision number (1 or more; `memo-peer history ID` lists them)", suggestion: nil,
        command: command)
    }
    return number
  }

  /// The options of `diff`.
  enum DiffOptions {
    static let json = SharedOptions.json.withHelp("print {schema, memo, from, to, lines: [{op, text}]} as JSON")
  }

  static let diff = Command(
    name: "diff", summary: "Show what changed in a memo's body between two revisions.",
    details: """
      Without N, the current revision against the one before it; with N, revision N against
      the current one; with N and M, N against M. Lines only in the older revision start
      with "-", lines only in the newer with "+", others with a space. Control characters
      are shown escaped (as \\x1b): a revision from a peer cannot drive your terminal.
      """,
    options: [DiffOptions.json],
    positionals: [
      memoID, PositionalSpec(name: "N", optional: true, help: "the older revision (default: the one before M)"),
      PositionalSpec(name: "M", optional: true, help: "the newer revision (default: the current one)"),
    ]
  ) { context in
    let from = try revisionNumber(context.arguments.positional(1), option: "N", command: "diff")
    let to = try revisionNumber(context.arguments.positional(2), option: "M", command: "diff")
    let app = try context.app()
    let diff = try app.history.diff(context.arguments.positional(0) ?? "", from: from, to: to)
    let names = try app.names()
    if context.wantsJSON {
      context.printJSON(DiffJSON(diff, names: names))
      return
    }
    for (mark, entry) in [("---", diff.from), ("+++", diff.to)] {
      context.console.print(
        "\(mark) revision \(entry.memo.revision) · "
          + OutputFormat.authorLine(entry.author, updated: entry.memo.updated, names: names))
    }
    for line in diff.lines {
      let mark =
        switch line.kind {
        case .same: " "
        case .removed: "-"
        case .added: "+"
        }
      context.console.print(mark + OutputFormat.terminalLine(line.text))
    }
  }

  /// The options of `restore`.
  enum RestoreOptions {
    static let revision = ValueOption("revision", value: "N", "the revision to bring back (`history ID` lists them)")
    static let json = SharedOptions.json.withHelp("print the memo as restored as JSON")
  }

  static let restore = Command(
    name: "restore", summary: "Bring back an earlier revision of a memo, as a new revision.",
    details: """
      The memo gets revision N's title, body, tags and private mark as a new revision,
      signed by this device, which syncs like an edit; nothing is dropped (the revision it
      replaces joins the history). A deleted memo comes back too (`trash restore` picks its
      last revision for you). A memo with conflict copies is resolved first.
      """,
    options: [RestoreOptions.revision, RestoreOptions.json],
    positionals: [memoID]
  ) { context in
    guard
      let number = try revisionNumber(
        context.arguments[RestoreOptions.revision], option: "--revision", command: "restore")
    else {
      throw ArgumentParser.usage("restore needs --revision N", suggestion: nil, command: "restore")
    }
    let app = try context.app()
    let memo = try app.history.restore(context.arguments.positional(0) ?? "", revision: number)
    if context.wantsJSON {
      context.printJSON(MemoJSON(memo: .init(memo.summary, names: try app.names())))
    } else {
      context.console.print("\(memo.id.short)  restored revision \(number) as revision \(memo.revision)")
    }
  }

  /// The options of `trash`.
  enum TrashOptions {
    static let yes = SharedOptions.yes.withHelp("with empty: do not ask")
    static let json = SharedOptions.json.withHelp("print {schema, trash: [...]} (list) or the result as JSON")
  }

  static let trash = Command(
    name: "trash", summary: "List, restore or empty the deleted memos.",
    details: """
      A memo deleted here or on another device stays in the trash for 30 days (config.json
      "history", "trash_days"): `trash` lists them (with who deleted each), `trash restore ID`
      brings one back as a new revision that syncs like an edit, `trash empty` drops their
      text for good on this device (asks first; --yes for scripts). Deletes the mass-delete
      guard held back are listed too, marked held: those memos are still here
      (`memo-peer sync` says how to settle them).
      """,
    options: [TrashOptions.yes, TrashOptions.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list (default), restore or empty",
        completion: .choices(["list", "restore", "empty"])),
      PositionalSpec(name: "ID", optional: true, help: "with restore: the memo's id or prefix"),
    ]
  ) { context in
    let app = try context.app()
    switch context.arguments.positional(0) ?? "list" {
    case "list":
      let entries = try app.history.trash()
      let names = try app.names()
      if context.wantsJSON {
        context.printJSON(TrashJSON(entries, names: names))
        return
      }
      if entries.isEmpty && context.console.stdoutIsTerminal { context.console.print("The trash is empty.") }
      for entry in entries {
        var text = entry.memo.short + "  " + OutputFormat.localTime(entry.deleted) + "  "
        text += entry.title.map(OutputFormat.title) ?? "(untitled)"
        if let peer = entry.heldFrom {
          text += "  [held: a delete from \(names.author(peer)), not applied]"
        } else {
          text += "  (deleted by \(names.author(entry.author)))"
        }
        context.console.print(text + OutputFormat.notebookSuffix(entry.notebook, names))
      }
    case "restore":
      guard let reference = context.arguments.positional(1) else {
        throw ArgumentParser.usage("trash restore needs a memo id", suggestion: nil, command: "trash")
      }
      let memo = try app.history.restoreFromTrash(reference)
      if context.wantsJSON {
        context.printJSON(MemoJSON(memo: .init(memo.summary, names: try app.names())))
      } else {
        context.console.print("\(memo.id.short)  restored (revision \(memo.revision))")
      }
    case "empty":
      let console = context.console
      let confirm: ((Int) throws -> Bool)? =
        context.arguments.has(TrashOptions.yes)
        ? nil
        : { count in
          guard console.stdinIsTerminal else {
            throw MemoPeerError(
              .usage, "refusing to empty the trash without confirmation (stdin is not a terminal)",
              hint: "pass --yes to empty it from a script")
          }
          return try console.confirm(
            "Drop the text of \(count) deleted memo\(count == 1 ? "" : "s") for good on this device?")
        }
      let count = try app.history.emptyTrash(confirm: confirm)
      if context.wantsJSON {
        context.printJSON(TrashEmptiedJSON(emptied: count))
      } else {
        context.console.print("emptied the trash (\(count) memo\(count == 1 ? "" : "s"))")
      }
    default:
      throw ArgumentParser.usage("unknown trash action (use list, restore or empty)", suggestion: nil, command: "trash")
    }
  }

  /// The options of `undo`.
  enum UndoOptions {
    static let device = ValueOption(
      "device", value: "PEER", "the device whose changes to undo (a trusted name or device ID)",
      completion: .dynamic(.peers))
    static let since = ValueOption("since", value: "TIME", "undo its changes since TIME (ISO 8601, or 90m, 12h, 3d)")
    static let yes = SharedOptions.yes.withHelp("carry it out (without: a dry run that lists what would change)")
    static let json = SharedOptions.json.withHelp("print {schema, device, since, applied, memos: [...]} as JSON")
  }

  static let undo = Command(
    name: "undo", summary: "Undo what one device changed since a time.",
    details: """
      Lists every memo whose latest revisions since TIME are by PEER (signed by it), and
      what undoing them does: the memo gets back the content of the revision before them,
      as a new revision that syncs like an edit; a memo PEER made since TIME is deleted (it
      stays in the trash). Nothing changes without --yes. A memo someone else changed
      after PEER is left alone; one with conflict copies waits until they are resolved.
      For a stolen or broken device, together with `memo-peer trust revoke`.
      """,
    options: [UndoOptions.device, UndoOptions.since, UndoOptions.yes, UndoOptions.json],
    positionals: []
  ) { context in
    guard let device = context.arguments[UndoOptions.device] else {
      throw ArgumentParser.usage("undo needs --device PEER", suggestion: nil, command: "undo")
    }
    guard let since = context.arguments[UndoOptions.since] else {
      throw ArgumentParser.usage(
        "undo needs --since TIME (for example 2026-12-01 or 12h)", suggestion: nil, command: "undo")
    }
    let app = try context.app()
    let report = try app.history.undo(device: device, since: since, apply: context.arguments.has(UndoOptions.yes))
    let names = try app.names()
    if context.wantsJSON {
      context.printJSON(UndoJSON(report, names: names))
      return
    }
    let who = names.author(report.device)
    if report.steps.isEmpty {
      context.console.print("nothing to undo: no memo's latest revision since then is by \(who)")
      return
    }
    for step in report.steps {
      var text = step.memo.short + "  " + OutputFormat.title(step.title) + "  "
      let count = step.undone.count
      text += "\(count) revision\(count == 1 ? "" : "s") by \(who) → "
      text += step.target.map { "revision \($0.memo.revision) (\(names.author($0.author)))" } ?? "deleted"
      if let blocked = step.blocked { text += "  [left alone: \(blocked)]" }
      context.console.print(text)
    }
    if !report.applied {
      context.console.error("memo-peer: a dry run: nothing changed; pass --yes to undo these")
    }
  }
}
