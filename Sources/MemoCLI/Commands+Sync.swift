import Foundation
import MemoCore
import MemoNode
import MemoStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `sync`, `peers` and `conflicts`: keeping the memos of trusted devices in step.
enum SyncCommands {
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
      a terminal a progress line shows long syncs. Exit status 20 when deletes were held
      back, 17 when a device could not be reached, 21 when a device sent data that breaks
      the protocol (nothing of it is stored; the message names the device).
      """,
    options: [
      OptionSpec("peer", value: "PEER", "sync only with this trusted device (name or device-ID prefix)"),
      OptionSpec("timeout", value: "SECONDS", "how long to wait for each device (default 10)"),
      OptionSpec("allow-deletes", "apply the deletes the guard held back from PEER (needs --peer)"),
      OptionSpec("keep-deleted", "keep the memos whose deletes were held back from PEER (needs --peer)"),
      OptionSpec("json", "print {schema, peers: [...], received, sent, conflicts} as JSON"),
    ],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let gate = try ConsentGate(paths: paths)
    let trust = TrustStore(paths: paths)
    let list = try trust.load()
    let allowDeletes = context.arguments.has("allow-deletes")
    let keepDeleted = context.arguments.has("keep-deleted")
    let peers: [TrustedPeer]
    if let reference = context.arguments.value("peer") {
      peers = [try list.find(reference)]
    } else {
      guard !allowDeletes && !keepDeleted else {
        throw ArgumentParser.usage(
          "--allow-deletes and --keep-deleted answer one device's held deletes: add --peer", suggestion: nil,
          command: "sync")
      }
      peers = list.peers
    }
    guard !(allowDeletes && keepDeleted) else {
      throw ArgumentParser.usage("choose --allow-deletes or --keep-deleted, not both", suggestion: nil, command: "sync")
    }
    guard !peers.isEmpty else { throw nobodyToSync }
    let timeout = try NetworkCommands.seconds(context.arguments.value("timeout"), default: 10, option: "timeout")
    let store = try context.store()
    guard store.canReadContent else { throw MemoStore.lockedError }
    if keepDeleted, let peer = peers.first, let id = DeviceID(peer.deviceID) {
      let kept = try store.settleHeldDeletes(from: id.compact, apply: false, now: context.now)
      context.console.error(
        "memo-peer: kept \(kept) memo(s) whose deletes \(peer.displayName) sent; they go back to it now")
    }
    if context.console.stdinIsTerminal {
      try NetworkCommands.obtainConsent(
        for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: gate, context: context)
    }
    // `memo-peer lock` during the sync closes its connections.
    let watch = LockWatch(keys: DeviceKeys(paths: paths))
    defer { watch.stop() }
    let progress = ProgressLine(enabled: isatty(2) == 1 && !context.wantsJSON)
    let logger = context.logger.scoped("sync")
    let results = try runBlocking {
      try await syncAll(
        peers, paths: paths, gate: gate, trust: trust, sessions: watch.sessions, timeout: timeout,
        guarded: !allowDeletes, logger: logger, note: { progress.note($0) }, progress: { progress.update($0) })
    }
    progress.clear()
    if watch.fired { throw LockWatch.lockedDuring("the sync") }
    try report(results, context: context)
  }

  /// A sync of a node that trusts nobody.
  static let nobodyToSync = MemoPeerError(
    .notFound, "this node trusts no device yet, so there is nobody to sync with",
    hint: "pair with `memo-peer pair --accept` on one device and `memo-peer pair` on the other")

  /// Syncs with `peers` through `PeerSync.syncAll`, the one way to sync with several devices
  /// (up to `PeerSync.concurrency` at once: a device that is away costs its timeout once,
  /// not once per device before it). Each sync has its own store connection; their batches
  /// take turns at SQLite's write lock; `sessions` closes them when the node locks. `note`
  /// gets lines that stay (waiting states), `progress` the line that changes (counts only,
  /// never memo text). For `sync` and the web page.
  static func syncAll(
    _ peers: [TrustedPeer], paths: NodePaths, gate: ConsentGate, trust: TrustStore, sessions: LiveSessions?,
    timeout: Double, guarded: Bool, logger: Logger, note: @escaping @Sendable (String) -> Void,
    progress: @escaping @Sendable (String) -> Void
  ) async throws -> [PeerSync.PeerResult] {
    let runner = PeerSync(
      store: StoreAccess(paths: paths, use: .person, logger: logger),
      dialer: PeerConnector(
        gate: gate, identity: try NodeIdentity.load(paths: paths), trust: trust, sessions: sessions,
        clock: { wallClock() }),
      clock: { wallClock() })
    return await runner.syncAll(
      peers, timeout: timeout, deleteGuard: guarded ? MassDeleteGuard() : nil,
      onState: { peer, state in
        if case .waiting(let reason) = state { note("\(peer.displayName): waiting (\(reason))") }
      },
      progress: { peer, step in
        let direction = step.receiving ? "receiving from" : "sending to"
        let total = step.estimate > step.done ? " of about \(step.estimate)" : ""
        progress("\(direction) \(peer.displayName): \(step.done)\(total) memo revisions")
      })
  }

  /// Prints the summary and turns what needs a person into the exit status.
  private static func report(_ results: [PeerSync.PeerResult], context: CommandContext) throws {
    let json = SyncJSON(results)
    if context.wantsJSON {
      context.printJSON(json)
    } else {
      for result in results {
        context.console.print(result.summary)
      }
      if results.count > 1 {
        context.console.print("in all: received \(json.received), sent \(json.sent), conflicts \(json.conflicts)")
      }
    }
    if let held = results.first(where: { ($0.report?.received.heldDeletes ?? 0) > 0 }) {
      let name = held.peer.displayName
      throw MemoPeerError(
        .syncHeld,
        "\(held.report?.received.heldDeletes ?? 0) deletes (or edits emptying memos) from \(name) were held back: they would remove that many of your \(held.report?.received.liveMemos ?? 0) memos; nothing was deleted",
        hint: "if \(name) deleted them on purpose: `memo-peer sync --peer \(name) --allow-deletes`; "
          + "to keep them (and bring them back on \(name)): `memo-peer sync --peer \(name) --keep-deleted`")
    }
    if let failed = results.first(where: { $0.error != nil }), let error = failed.error {
      guard results.count > 1 else { throw error }
      throw MemoPeerError(
        error.code,
        "\(results.filter { $0.error != nil }.count) of \(results.count) devices could not be synced; first: \(error.message)",
        hint: error.hint)
    }
  }

  struct SyncJSON: Encodable {
    struct Outcome: Encodable {
      let applied: Int
      let conflicts: Int
      let heldDeletes: Int
      enum CodingKeys: String, CodingKey {
        case applied, conflicts
        case heldDeletes = "held_deletes"
      }
      init(_ outcome: SyncMessage.Outcome) {
        applied = outcome.applied
        conflicts = outcome.conflicts
        heldDeletes = outcome.heldDeletes
      }
    }
    struct Peer: Encodable {
      let name: String
      let deviceID: String
      let status: String
      let received: Outcome?
      let sent: Outcome?
      let sentRevisions: Int?
      let error: OutputFormat.ErrorJSON.Detail?
      /// Finding the device and the TLS handshake; then the sync over the ready connection.
      let connectMilliseconds: Double?
      let sessionMilliseconds: Double?
      /// TLS record bytes of the sync itself, both directions.
      let sessionBytes: UInt64?
      enum CodingKeys: String, CodingKey {
        case name, status, received, sent, error
        case deviceID = "device_id"
        case sentRevisions = "sent_revisions"
        case connectMilliseconds = "connect_ms"
        case sessionMilliseconds = "session_ms"
        case sessionBytes = "session_bytes"
      }
      init(_ result: PeerSync.PeerResult) {
        name = result.peer.name
        deviceID = result.peer.deviceID
        received = result.report.map { Outcome($0.received) }
        sent = result.report.map { Outcome($0.sent) }
        sentRevisions = result.report?.sentRevisions
        connectMilliseconds = result.connectSeconds.map { ($0 * 100_000).rounded() / 100 }
        sessionMilliseconds = result.sessionSeconds.map { ($0 * 100_000).rounded() / 100 }
        sessionBytes = result.sessionBytes
        if let report = result.report {
          status = report.received.heldDeletes > 0 ? "held" : "synced"
        } else {
          status = result.error?.code.rawValue ?? "failed"
        }
        error = result.error.map {
          OutputFormat.ErrorJSON.Detail(code: $0.code.rawValue, message: $0.message, hint: $0.hint, dnsServiceCode: nil)
        }
      }
    }
    let schema = OutputFormat.jsonSchema
    let peers: [Peer]
    let received: Int
    let sent: Int
    let conflicts: Int

    init(_ results: [PeerSync.PeerResult]) {
      peers = results.map(Peer.init)
      received = results.compactMap(\.report).reduce(0) { $0 + $1.received.applied }
      sent = results.compactMap(\.report).reduce(0) { $0 + $1.sentRevisions }
      // A conflict made by this sync shows on both sides (each receives the other's
      // version): counted once, here.
      conflicts = results.compactMap(\.report).reduce(0) { $0 + $1.received.conflicts }
    }
  }

  static let peers = Command(
    name: "peers", summary: "List trusted devices with their sync state.",
    details: """
      For each trusted device: when it was last seen (a sync, or a connection to this node's
      daemon), when it last synced, how many changes here it has not received yet, and deletes
      from it held back by the mass-delete guard.
      """,
    options: [OptionSpec("json", "print {schema, peers: [...]} as JSON")],
    positionals: []
  ) { context in
    let rows = try peerRows(paths: try context.paths(), store: try context.store())
    if context.wantsJSON {
      context.printJSON(PeersJSON(peers: rows.map(\.json)))
      return
    }
    if rows.isEmpty {
      context.console.print("no trusted devices (pair with `memo-peer pair`)")
      return
    }
    for row in rows {
      let json = row.json
      var text = "\(json.name.terminalSafe)  \(String(json.deviceID.prefix(9)))…"
      text += "  seen \(row.seen.map(OutputFormat.localTime) ?? "never")"
      text += "  synced \(row.synced.map(OutputFormat.localTime) ?? "never")  pending \(json.pending)"
      if json.heldDeletes > 0 { text += "  held deletes \(json.heldDeletes)" }
      context.console.print(text)
    }
  }

  /// Each trusted device's row of `peers`: its JSON, and the times for people.
  static func peerRows(paths: NodePaths, store: MemoStore) throws -> [(
    json: PeerJSON, seen: Timestamp?, synced: Timestamp?
  )] {
    let trusted = try TrustStore(paths: paths).load().peers
    let records = Dictionary(uniqueKeysWithValues: try store.syncPeerRecords().map { ($0.device, $0) })
    let contacts = ServeStatus.read(paths)?.trustedContacts ?? [:]
    return try trusted.map { peer -> (json: PeerJSON, seen: Timestamp?, synced: Timestamp?) in
      let compact = DeviceID(peer.deviceID)?.compact ?? peer.deviceID
      let record = records[compact]
      let seen = [record?.lastSeen, contacts[compact]].compactMap { $0 }.max()
      // Never synced: everything here is pending for it.
      let pending = try record?.pending ?? store.feedCount(after: 0)
      let json = PeerJSON(
        name: peer.name, deviceID: peer.deviceID, lastSeen: seen.map(OutputFormat.isoTime),
        lastSynced: record?.lastSynced.map(OutputFormat.isoTime), pending: pending,
        heldDeletes: record?.heldDeletes ?? 0)
      return (json, seen, record?.lastSynced)
    }
  }

  /// `peers --json`.
  struct PeersJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let peers: [PeerJSON]
  }

  struct PeerJSON: Encodable {
    let name: String
    let deviceID: String
    let lastSeen: String?
    let lastSynced: String?
    let pending: Int
    let heldDeletes: Int
    enum CodingKeys: String, CodingKey {
      case name, pending
      case deviceID = "device_id"
      case lastSeen = "last_seen"
      case lastSynced = "last_synced"
      case heldDeletes = "held_deletes"
    }
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
    options: [
      OptionSpec(
        "keep", value: "A|B|both", "which version to keep (resolve)", completion: .choices(["A", "B", "both"])),
      OptionSpec("json", "print as JSON"),
    ],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list or resolve", completion: .choices(["list", "resolve"])),
      PositionalSpec(
        name: "ID", optional: true, help: "a conflict copy's or memo's id or prefix", completion: .dynamic(.memoIDs)),
    ]
  ) { context in
    let store = try context.store()
    switch context.arguments.positional(0) ?? "list" {
    case "list":
      let entries = try store.conflicts()
      if context.wantsJSON {
        context.printJSON(ConflictsJSON(conflicts: entries.map(ConflictsJSON.Entry.init)))
        return
      }
      if entries.isEmpty { context.console.print("no conflicts") }
      for entry in entries {
        context.console.print("\(entry.memo.short)  \(OutputFormat.title(entry.title))")
        for copy in entry.copies {
          let title = OutputFormat.title(copy.title)
          context.console.print("  copy \(copy.id.short)  \(OutputFormat.localTime(copy.updated))  \(title)")
        }
        if entry.overruledDelete {
          context.console.print("  deleted on another device while edited here: kept (A) or delete it (B)")
        }
      }
    case "resolve":
      guard let text = context.arguments.positional(1) else {
        throw ArgumentParser.usage("conflicts resolve needs an id", suggestion: nil, command: "conflicts")
      }
      guard let keepText = context.arguments.value("keep"), let choice = conflictChoice(keepText) else {
        throw ArgumentParser.usage("conflicts resolve needs --keep A, B or both", suggestion: nil, command: "conflicts")
      }
      let resolution = try store.resolveConflict(try store.resolve(text), keep: choice, now: context.now)
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

  /// `A`, `B` or `both`, in any case.
  static func conflictChoice(_ text: String) -> ConflictChoice? {
    ConflictChoice.allCases.first { $0.rawValue.lowercased() == text.lowercased() }
  }

  /// `conflicts resolve --json`.
  struct ResolvedJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let memo: String
    let deleted: Bool
    let newMemos: [String]
    enum CodingKeys: String, CodingKey {
      case schema, memo, deleted
      case newMemos = "new_memos"
    }

    init(_ resolution: ConflictResolution) {
      memo = resolution.memo.rawValue
      deleted = resolution.deleted
      newMemos = resolution.newMemos.map(\.rawValue)
    }
  }

  struct ConflictsJSON: Encodable {
    struct Entry: Encodable {
      let memo: String
      let title: String
      let copies: [OutputFormat.SummaryJSON]
      let overruledDelete: Bool
      enum CodingKeys: String, CodingKey {
        case memo, title, copies
        case overruledDelete = "overruled_delete"
      }
      init(_ entry: ConflictEntry) {
        memo = entry.memo.rawValue
        title = entry.title
        copies = entry.copies.map { OutputFormat.SummaryJSON($0, conflictOf: entry.memo) }
        overruledDelete = entry.overruledDelete
      }
    }
    let schema = OutputFormat.jsonSchema
    let conflicts: [Entry]
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
