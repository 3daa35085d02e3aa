import Foundation
import MemoCore
import MemoNode
import MemoStore

/// Sending memos to trusted devices: the outbox, and the inbox of memos received.
enum DeliveryCommands {
  static let send = Command(
    name: "send", summary: "Send a memo (or stdin) to a trusted device.",
    details: """
      Queues the memo, sealed, in the outbox for PEER (a trusted device's name or device-ID
      prefix) and returns; `memo-peer serve` delivers it when PEER is reachable and
      local-network consent is on record. With --wait it delivers now (with whatever else
      is queued for PEER), showing the state,
      and waits up to SECONDS (default 60); if it was not delivered by then it stays queued
      (status 17). --expires DURATION (90s, 10m, 2h, 7d) drops the entry if it is still
      undelivered then. `memo-peer outbox` shows every entry's state.
      """,
    options: [
      OptionSpec("to", value: "PEER", "the trusted device to send to"),
      OptionSpec("wait", "deliver now and wait for the receipt (SECONDS after ID, default 60)"),
      OptionSpec("expires", value: "DURATION", "drop the entry if undelivered after DURATION"),
      OptionSpec("json", "print the entry as JSON"),
    ],
    positionals: [
      PositionalSpec(
        name: "ID|-", optional: false, help: "a memo id or prefix, or - for stdin", completion: .dynamic(.memoIDs)),
      PositionalSpec(name: "SECONDS", optional: true, help: "with --wait: how long to wait (default 60)"),
    ]
  ) { context in
    let paths = try context.paths()
    guard let source = context.arguments.positional(0) else {
      throw ArgumentParser.usage("send needs a memo id or -", suggestion: nil, command: "send")
    }
    guard let reference = context.arguments.value("to") else {
      throw ArgumentParser.usage("send needs --to PEER", suggestion: nil, command: "send")
    }
    let trust = TrustStore(paths: paths)
    let peer = try trust.load().find(reference)
    guard let peerID = peer.id else {
      throw MemoPeerError(.storage, "the trust entry for \(peer.displayName) is damaged")
    }
    var expires: Timestamp?
    if let text = context.arguments.value("expires") {
      guard let seconds = DurationText.seconds(text) else {
        throw ArgumentParser.usage(
          "--expires needs a duration of at most 366 days, such as 90s, 10m, 2h or 7d", suggestion: nil,
          command: "send")
      }
      expires = context.now + Timestamp(seconds * 1000)
    }
    let wait: Double? =
      context.arguments.has("wait")
      ? try NetworkCommands.seconds(context.arguments.positional(1), default: 60, option: "wait") : nil
    let store = try context.store()
    let content: DeliveryMessage.Content
    if source == "-" {
      let bytes = try context.console.readStdin(limit: MemoRules.maxBodyBytes)
      let body = try MemoRules.decodeUTF8(bytes, source: "stdin")
      let valid = try MemoRules.validated(MemoDraft(title: "", body: body))
      content = DeliveryMessage.Content(
        title: valid.title, body: valid.body, tags: valid.tags, isPrivate: false, sent: context.now)
    } else {
      let memo = try store.memo(try store.resolve(source))
      content = DeliveryMessage.Content(
        title: memo.title, body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate, sent: context.now,
        revision: DeliveryMessage.SentRevision(memo: memo))
    }
    let id = try store.queueForDelivery(content, to: peerID.compact, expires: expires, now: context.now)
    let printer = LinePrinter()
    if let wait {
      let gate = try ConsentGate(paths: paths)
      if context.console.stdinIsTerminal && source != "-" {
        try NetworkCommands.obtainConsent(
          for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType), gate: gate, context: context)
      }
      // `memo-peer lock` while it waits closes the connection.
      let watch = LockWatch(keys: DeviceKeys(paths: paths))
      defer { watch.stop() }
      let outbox = OutboxDelivery(
        store: StoreAccess(paths: paths, use: .person),
        dialer: PeerConnector(
          gate: gate, identity: try NodeIdentity.load(paths: paths), trust: trust, sessions: watch.sessions,
          clock: { wallClock() }),
        trust: trust, clock: { wallClock() })
      let name = peer.displayName
      printer.error("memo-peer: \(name): sending \(id.prefix(8))…")
      _ = try runBlocking {
        let deadline = Date().addingTimeInterval(wait)
        var failures = 0
        while true {
          let remaining = deadline.timeIntervalSinceNow
          guard remaining > 0 else { return false }
          if watch.fired { throw LockWatch.lockedDuring("the delivery") }
          // Everything queued for this peer goes along (the next user action delivers it).
          let round = try await outbox.deliver(to: peerID.compact, timeout: max(remaining, 1))
          guard let reason = round.waitingFor, round.pending > 0 else { return true }
          let mine = try MemoStore.open(paths: paths).resolveOutboxEntry(id)
          guard mine.state.isPending else { return true }
          printer.error("memo-peer: \(name): waiting (\(reason))")
          failures += 1
          let pause = min(DeliveryBackoff().delay(afterFailures: failures, random: .random(in: 0..<1)), remaining)
          try await Task.sleep(for: .milliseconds(Int(pause * 1000)))
        }
      }
    }
    let entry = try store.resolveOutboxEntry(id)
    if context.wantsJSON {
      context.printJSON(OutboxJSON(schema: OutputFormat.jsonSchema, entries: [json(entry, name: peer.name)]))
    } else {
      context.console.print("\(id.prefix(8))  to \(peer.displayName)  \(display(entry.state))")
    }
    if wait != nil, entry.state.isPending {
      throw MemoPeerError(
        .connection, "not delivered yet: \(display(entry.state)); it stays in the outbox",
        hint: "`memo-peer serve` delivers it when \(peer.displayName) is reachable; `memo-peer outbox` shows its state")
    }
    if case .failed(let reason) = entry.state { throw MemoPeerError(.connection, "not delivered: \(reason)") }
  }

  static let outbox = Command(
    name: "outbox", summary: "List, retry or cancel memos being sent.",
    details: """
      ACTION is list (default), retry or cancel.
        outbox retry ID    try a waiting, failed or expired entry again now
        outbox cancel ID   drop an undelivered entry
      States: queued, waiting (reason), sending, delivered (time), expired, failed (reason),
      cancelled.
      """,
    options: [OptionSpec("json", "print the entries as JSON")],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, retry or cancel",
        completion: .choices(["list", "retry", "cancel"])),
      PositionalSpec(name: "ID", optional: true, help: "an entry id or prefix"),
    ]
  ) { context in
    let store = try context.store()
    let names = try PeerNames(context)
    let action = context.arguments.positional(0) ?? "list"
    func entryArgument() throws -> OutboxEntry {
      try store.resolveOutboxEntry(try entryText(context, command: "outbox", action: action))
    }
    switch action {
    case "list":
      let now = context.now
      for entry in try store.outboxEntries() where entry.hasExpired(at: now) {
        try store.setOutboxState(entry.id, .expired)
      }
      let entries = try store.outboxEntries()
      if context.wantsJSON {
        context.printJSON(
          OutboxJSON(
            schema: OutputFormat.jsonSchema,
            entries: entries.map { json($0, name: names[$0.recipient]) }))
        return
      }
      guard !entries.isEmpty else {
        context.console.print("the outbox is empty")
        return
      }
      for entry in entries {
        let name = names[entry.recipient].terminalSafe
        context.console.print(
          "\(entry.id.prefix(8))  to \(name)  \(OutputFormat.localTime(entry.created))  \(display(entry.state))")
      }
    case "retry":
      let entry = try entryArgument()
      guard entry.state.allows(.queued), try store.setOutboxState(entry.id, .queued) || entry.state == .queued else {
        throw MemoPeerError(.invalidInput, "entry \(entry.id.prefix(8)) is \(entry.state.name); nothing to retry")
      }
      context.console.print("\(entry.id.prefix(8)) queued again; `memo-peer serve` delivers it")
    case "cancel":
      let entry = try entryArgument()
      guard entry.state.isPending, try store.setOutboxState(entry.id, .cancelled) else {
        throw MemoPeerError(.invalidInput, "entry \(entry.id.prefix(8)) is \(entry.state.name); it cannot be cancelled")
      }
      context.console.print("\(entry.id.prefix(8)) cancelled")
    default:
      throw ArgumentParser.usage(
        "unknown outbox action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: ["list", "retry", "cancel"]), command: "outbox")
    }
  }

  static let inbox = Command(
    name: "inbox", summary: "List, accept or drop memos received from trusted devices.",
    details: """
      ACTION is list (default), accept or drop.
        inbox accept ID   move it into your memos, keeping its sender and time
        inbox drop ID     delete it (a resend of it is not stored again)
      Memos from a peer whose receive policy is `accept` skip the inbox; see
      `memo-peer trust policy PEER ask|accept|refuse`.
      """,
    options: [OptionSpec("json", "print the entries (list), the new memo (accept) or {schema, dropped} as JSON")],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, accept or drop", completion: .choices(["list", "accept", "drop"])),
      PositionalSpec(name: "ID", optional: true, help: "an entry id or prefix"),
    ]
  ) { context in
    let store = try context.store()
    let names = try PeerNames(context)
    let action = context.arguments.positional(0) ?? "list"
    func entryArgument() throws -> String { try entryText(context, command: "inbox", action: action) }
    switch action {
    case "list":
      let entries = try store.inboxEntries()
      if context.wantsJSON {
        context.printJSON(InboxJSON(entries, names: names))
        return
      }
      guard !entries.isEmpty else {
        context.console.print("the inbox is empty")
        return
      }
      for entry in entries {
        // The entry id and the title came from the sender.
        let name = names[entry.sender].terminalSafe
        let title = OutputFormat.title(entry.memo.title)
        context.console.print(
          "\(String(entry.id.prefix(8)).terminalSafe)  from \(name)  \(OutputFormat.localTime(entry.received))  \(title)"
        )
      }
    case "accept":
      let memo = try store.acceptInboxEntry(try entryArgument())
      if context.wantsJSON {
        context.printJSON(OutputFormat.MemoJSON(memo: .init(memo.summary)))
      } else {
        context.console.print("accepted as memo \(memo.id.short)")
      }
    case "drop":
      let entry = try store.dropInboxEntry(try entryArgument())
      if context.wantsJSON {
        context.printJSON(DroppedJSON(dropped: entry.id))
      } else {
        context.console.print("dropped \(String(entry.id.prefix(8)).terminalSafe)")
      }
    default:
      throw ArgumentParser.usage(
        "unknown inbox action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: ["list", "accept", "drop"]), command: "inbox")
    }
  }

  /// `inbox --json`: the entries, without their text (`accept` makes one a memo to read).
  struct InboxJSON: Encodable {
    struct Entry: Encodable {
      let id, from, deviceID, title, received, sent: String
      let tags: [String]
      enum CodingKeys: String, CodingKey {
        case id, from, title, received, sent, tags
        case deviceID = "device_id"
      }
    }
    let schema = OutputFormat.jsonSchema
    let entries: [Entry]

    init(_ entries: [InboxEntry], names: PeerNames) {
      self.entries = entries.map {
        Entry(
          id: $0.id, from: names[$0.sender], deviceID: $0.sender, title: $0.memo.title,
          received: OutputFormat.isoTime($0.received), sent: OutputFormat.isoTime($0.memo.sent), tags: $0.memo.tags)
      }
    }
  }

  /// `inbox drop --json`.
  struct DroppedJSON: Encodable {
    let schema = OutputFormat.jsonSchema
    let dropped: String
  }

  struct EntryJSON: Encodable {
    let id, to, deviceID, state, created: String
    let reason, delivered, expires: String?
    let attempts: Int
    enum CodingKeys: String, CodingKey {
      case id, to, state, created, reason, delivered, expires, attempts
      case deviceID = "device_id"
    }
  }

  struct OutboxJSON: Encodable {
    let schema: Int
    let entries: [EntryJSON]
  }

  static func json(_ entry: OutboxEntry, name: String) -> EntryJSON {
    var delivered: String?
    if case .delivered(let time) = entry.state { delivered = OutputFormat.isoTime(time) }
    return EntryJSON(
      id: entry.id, to: name, deviceID: entry.recipient, state: entry.state.name,
      created: OutputFormat.isoTime(entry.created),
      reason: entry.state.reason, delivered: delivered, expires: entry.expires.map(OutputFormat.isoTime),
      attempts: entry.attempts)
  }

  static func display(_ state: OutboxState) -> String {
    if case .delivered(let time) = state { return "delivered (\(OutputFormat.localTime(time)))" }
    return state.description
  }
}

/// Trusted devices' names by compact device ID, for outbox and inbox listings; a device no
/// longer trusted, or any device while the node is locked (the trust store is sealed then),
/// shows as the start of its ID.
struct PeerNames {
  private let names: [String: String]

  init(_ context: CommandContext) throws { try self.init(paths: try context.paths()) }

  init(paths: NodePaths) throws {
    let peers: [TrustedPeer]
    do { peers = try TrustStore(paths: paths).load().peers } catch let error as MemoPeerError
      where error.code == .locked
    { peers = [] }
    names = Dictionary(peers.map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
  }

  subscript(deviceID: String) -> String { names[deviceID] ?? String(deviceID.prefix(8)) + "…" }
}

/// The entry id an outbox or inbox action was given, or the usage error that asks for it.
private func entryText(_ context: CommandContext, command: String, action: String) throws -> String {
  guard let text = context.arguments.positional(1) else {
    throw ArgumentParser.usage("\(command) \(action) needs an entry id", suggestion: nil, command: command)
  }
  return text
}
