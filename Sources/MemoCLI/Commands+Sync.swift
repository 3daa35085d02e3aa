import Dispatch
import FoundationEssentials
import MemoApp
import MemoCore
import MemoNode
import MemoPresentation
import MemoProtocol
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `sync`, `peers` and `conflicts`: keeping the memos of trusted devices in step.
enum SyncCommands {
  /// The options of `sync`.
  enum SyncOptions {
    static let peer = ValueOption(
      "peer", value: "PEER", "sync only with this trusted device (name or device-ID prefix)")
    static let timeout = SharedOptions.timeout.withHelp("how long to wait for each device (default 10)")
    static let allowDeletes = Flag(
      "allow-deletes", "apply the deletes the guard held back from PEER (needs --peer)")
    static let keepDeleted = Flag(
      "keep-deleted", "keep the memos whose deletes were held back from PEER (needs --peer)")
    static let json = SharedOptions.json.withHelp("print {schema, peers: [...], received, sent, conflicts} as JSON")
  }

  static let sync = Command(
    name: "sync", summary: "Sync memos with trusted devices now.",
    details: """
      Finds every trusted device (or only PEER) on the local network by its rotating tag, all
      at once (up to four at a time), connects with its pinned key and exchanges only what
      the other lacks: new memos, edits, deletes. Concurrent edits of one memo keep both (a
      conflict copy, see `conflicts`); an edit beats a concurrent delete. Deletes (and edits
      that empty a memo) from one device that would remove more than half of the memos this
      node had (and at least 10), counted over 24 hours, are held back: nothing is deleted
      until you choose --allow-deletes (delete them here too) or --keep-deleted (keep them;
      they come back on the peer). A sync cut off at any point resumes where it stopped. On
      a terminal a progress line shows long syncs, and the first sync there asks once whether
      `serve` may keep this device in sync in the background (the background-sync consent).
      Exit status 20 when deletes were held back, 17 when a device could not be reached, 21
      when a device sent data that breaks the protocol (nothing of it is stored; the message
      names the device).
      """,
    options: [
      SyncOptions.peer, SyncOptions.timeout, SyncOptions.allowDeletes, SyncOptions.keepDeleted, SyncOptions.json,
    ],
    positionals: []
  ) { context in
    let allowDeletes = context.arguments.has(SyncOptions.allowDeletes)
    let keepDeleted = context.arguments.has(SyncOptions.keepDeleted)
    let reference = context.arguments[SyncOptions.peer]
    guard reference != nil || !(allowDeletes || keepDeleted) else {
      throw ArgumentParser.usage(
        "--allow-deletes and --keep-deleted answer one device's held deletes: add --peer", suggestion: nil,
        command: "sync")
    }
    guard !(allowDeletes && keepDeleted) else {
      throw ArgumentParser.usage("choose --allow-deletes or --keep-deleted, not both", suggestion: nil, command: "sync")
    }
    let timeout = try NetworkCommands.seconds(
      context.arguments[SyncOptions.timeout], default: 10, option: SyncOptions.timeout)
    let console = context.console
    let sync = try context.app().sync.prepare(
      peer: reference, timeout: timeout, deletes: allowDeletes ? .allow : keepDeleted ? .keep : .guarded,
      consent: .ask(console),
      onKept: { kept, peer in
        console.error("memo-peer: kept \(kept) memo(s) whose deletes \(peer.displayName) sent; they go back to it now")
      })
    let progress = ProgressLine(enabled: isatty(2) == 1 && !context.wantsJSON)
    let outcome = try runBlocking {
      try await sync.run(note: { progress.note($0) }, progress: { progress.update($0) })
    }
    progress.clear()
    if let error = outcome.lockError { throw error }
    if context.wantsJSON {
      context.printJSON(SyncJSON(outcome.results, wording: CLIRemedyText.words))
    } else {
      for result in outcome.results {
        context.console.print(result.summary)
      }
      if outcome.results.count > 1 {
        let json = SyncJSON(outcome.results, wording: CLIRemedyText.words)
        context.console.print("in all: received \(json.received), sent \(json.sent), conflicts \(json.conflicts)")
      }
    }
    if let problem = outcome.problem { throw problem }
    // The first sync a person runs on a terminal may ask about keeping in sync without them.
    if !context.wantsJSON, !outcome.results.isEmpty,
      let record = try context.app().consent.offerBackgroundSync(prompt: console)
    {
      let granted = record.decision == .granted
      console.print(
        granted
          ? "background sync allowed: `memo-peer serve` keeps this device in sync"
            + " (`memo-peer consent revoke --scope background-sync` to stop)"
          : "background sync not allowed: `memo-peer sync` syncs when you run it"
            + " (`memo-peer consent grant --scope background-sync` to change that)")
    }
  }

  /// The options of `peers`.
  enum PeersOptions {
    static let json = SharedOptions.json.withHelp("print {schema, peers: [...]} as JSON")
  }

  static let peers = Command(
    name: "peers", summary: "List trusted devices with their sync state.",
    details: """
      For each trusted device: when it was last seen (a sync, or a connection to this node's
      daemon), when it last synced, how many changes here it has not received yet, and deletes
      from it held back by the mass-delete guard; `connected live` when this node's daemon
      (`serve`, live sync) has a link open with it now. Below a device, the last sync data
      this device refused from it: when, what it was, and why it is impossible. Then the
      addresses it is dialled at when DNS-SD does not show it: those given with `trust
      address`, and where it was last reached.
      """,
    options: [PeersOptions.json],
    positionals: []
  ) { context in
    let rows = try context.app().sync.peers()
    if context.wantsJSON {
      context.printJSON(PeersJSON(rows))
      return
    }
    // The devices revoked here are not trusted any more, so they are not rows: named below.
    defer { TrustCommands.printRevocations((try? context.app().trust.revocations()) ?? [], context: context) }
    if rows.isEmpty {
      context.console.print("no trusted devices (pair with `memo-peer pair`)")
      return
    }
    for row in rows {
      var text = "\(row.peer.name.terminalSafe)  \(String(row.peer.deviceID.compact.prefix(9)))…"
      text += "  seen \(row.seen.map(OutputFormat.localTime) ?? "never")"
      text += "  synced \(row.synced.map(OutputFormat.localTime) ?? "never")  pending \(row.pending)"
      if row.heldDeletes > 0 { text += "  held deletes \(row.heldDeletes)" }
      if row.live { text += "  connected live" }
      context.console.print(text)
      let given = (row.peer.addresses ?? []).map(\.description)
      if !given.isEmpty { context.console.print("  addresses given: \(given.joined(separator: ", "))") }
      if let last = row.peer.reached?.first {
        context.console.print("  last reached at \(last.address) \(OutputFormat.localTime(last.at))")
      }
      if let refusal = row.lastRefusal {
        // The detail is this program's own words, escaped all the same: it names values a
        // peer sent.
        context.console.print(
          "  last refused \(OutputFormat.localTime(refusal.at)): it sent \(refusal.what.terminalSafe) "
            + "(\(refusal.reason.terminalSafe): \(refusal.detail.terminalSafe))")
      }
    }
  }

  /// The options of `conflicts`.
  enum ConflictsOptions {
    static let keep = ValueOption(
      "keep", value: "A|B|both", "which version to keep (resolve)", completion: .choices(["A", "B", "both"]))
    static let json = SharedOptions.json
  }

  static let conflicts = Command(
    name: "conflicts", summary: "List or resolve memos that changed on two devices at once.",
    details: """
      ACTION is list (default) or resolve.
        conflicts                          list memos with conflict copies or an overruled delete
        conflicts resolve ID --keep A      keep the memo, drop the conflict copy
        conflicts resolve ID --keep B      the copy's version becomes the memo
        conflicts resolve ID --keep both   keep the memo, and the copy as a memo of its own
      ID is the conflict copy's id (or the memo's, when it has one copy). For a memo whose
      delete on another device lost to an edit here, A keeps it and B deletes it. Every
      device picks the same version as the memo, so all show the same; a resolution
      syncs like an edit.
      """,
    options: [ConflictsOptions.keep, ConflictsOptions.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list or resolve", completion: .choices(["list", "resolve"])),
      PositionalSpec(
        name: "ID", optional: true, help: "a conflict copy's or memo's id or prefix", completion: .dynamic(.memoIDs)),
    ]
  ) { context in
    let conflicts = try context.app().conflicts
    switch context.arguments.positional(0) ?? "list" {
    case "list":
      let entries = try conflicts.list()
      if context.wantsJSON {
        context.printJSON(ConflictsJSON(entries, names: try context.app().names()))
        return
      }
      if entries.isEmpty { context.console.print("no conflicts") }
      let names = try context.app().names()
      for entry in entries {
        context.console.print(
          "\(entry.memo.short)  \(OutputFormat.title(entry.title))  (by \(names.author(entry.author)))")
        for copy in entry.copies {
          let title = OutputFormat.title(copy.title)
          context.console.print(
            "  copy \(copy.id.short)  \(OutputFormat.localTime(copy.updated))  \(title)  (by \(names.author(copy.author)))"
          )
        }
        if entry.overruledDelete {
          context.console.print("  deleted on another device while edited here: kept (A) or delete it (B)")
        }
      }
    case "resolve":
      guard let text = context.arguments.positional(1) else {
        throw ArgumentParser.usage("conflicts resolve needs an id", suggestion: nil, command: "conflicts")
      }
      guard let keepText = context.arguments[ConflictsOptions.keep], let choice = ConflictUseCases.choice(keepText)
      else {
        throw ArgumentParser.usage("conflicts resolve needs --keep A, B or both", suggestion: nil, command: "conflicts")
      }
      let resolution = try conflicts.resolve(text, keep: choice)
      if context.wantsJSON {
        context.printJSON(ResolvedJSON(resolution))
        return
      }
      context.console.print(
        resolution.deleted ? "deleted \(resolution.memo.short)" : "resolved \(resolution.memo.short)")
      for memo in resolution.newMemos { context.console.print("kept the other version as memo \(memo.short)") }
    default:
      throw ArgumentParser.usage(
        "unknown conflicts action (use list or resolve)", suggestion: nil, command: "conflicts")
    }
  }
}

/// One status line on stderr that rewrites itself (a terminal only): at most ten updates a
/// second, and cleared before anything else is printed.
final class ProgressLine: Sendable {
  private struct State {
    var last: UInt64 = 0
    var shown = false
  }
  private let state = Mutex(State())
  private let enabled: Bool

  init(enabled: Bool) { self.enabled = enabled }

  func update(_ text: String) {
    guard enabled else { return }
    state.withLock { state in
      let now = DispatchTime.now().uptimeNanoseconds
      guard now - state.last > 100_000_000 else { return }
      state.last = now
      state.shown = true
      try? PrivateFiles.writeAll(2, Array("\r\u{1B}[K\(text)".utf8), path: "stderr")
    }
  }

  /// A line that stays (waiting states), printed on a terminal only.
  func note(_ text: String) {
    guard enabled else { return }
    clear()
    try? PrivateFiles.writeAll(2, Array("memo-peer: \(text)\n".utf8), path: "stderr")
  }

  func clear() {
    state.withLock { state in
      guard state.shown else { return }
      state.shown = false
      try? PrivateFiles.writeAll(2, Array("\r\u{1B}[K".utf8), path: "stderr")
    }
  }
}
