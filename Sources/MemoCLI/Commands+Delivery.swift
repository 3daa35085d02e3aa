import MemoApp
import MemoCore

/// Sending memos to trusted devices: the outbox, and the inbox of memos received.
enum DeliveryCommands {
  /// The options of `send`.
  enum SendOptions {
    static let to = ValueOption("to", value: "PEER", "the trusted device to send to")
    static let wait = Flag("wait", "deliver now and wait for the receipt (SECONDS after ID, default 60)")
    static let expires = ValueOption("expires", value: "DURATION", "drop the entry if undelivered after DURATION")
    static let json = SharedOptions.json.withHelp("print the entry as JSON")
  }

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
    options: [SendOptions.to, SendOptions.wait, SendOptions.expires, SendOptions.json],
    positionals: [
      PositionalSpec(
        name: "ID|-", optional: false, help: "a memo id or prefix, or - for stdin", completion: .dynamic(.memoIDs)),
      PositionalSpec(name: "SECONDS", optional: true, help: "with --wait: how long to wait (default 60)"),
    ]
  ) { context in
    guard let source = context.arguments.positional(0) else {
      throw ArgumentParser.usage("send needs a memo id or -", suggestion: nil, command: "send")
    }
    guard let reference = context.arguments[SendOptions.to] else {
      throw ArgumentParser.usage("send needs --to PEER", suggestion: nil, command: "send")
    }
    let expires = try context.arguments[SendOptions.expires].map { text -> Double in
      guard let seconds = DurationText.seconds(text) else {
        throw ArgumentParser.usage(
          "--expires needs a duration of at most 366 days, such as 90s, 10m, 2h or 7d", suggestion: nil,
          command: "send")
      }
      return seconds
    }
    let wait: Double? =
      context.arguments.has(SendOptions.wait)
      ? try NetworkCommands.seconds(context.arguments.positional(1), default: 60, option: SendOptions.wait) : nil
    let console = context.console
    let printer = LinePrinter()
    let sent = try context.app().delivery.send(
      source == "-"
        ? .text { try MemoCommands.stdinBody(context, for: .send, allowEmpty: false) }
        : .memo(source),
      to: reference, expiresAfter: expires, wait: wait, prompt: console,
      note: { printer.error("memo-peer: \($0)") })
    if context.wantsJSON {
      context.printJSON(OutboxJSON(entries: [.init(sent.entry, name: sent.peer.name)]))
    } else {
      context.console.print(
        "\(sent.entry.id.prefix(8))  to \(sent.peer.displayName)  \(DeliveryUseCases.display(sent.entry.state))")
    }
    if let problem = sent.problem { throw problem }
  }

  /// The options of `outbox`.
  enum OutboxOptions {
    static let json = SharedOptions.json.withHelp("print the entries as JSON")
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
    options: [OutboxOptions.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, retry or cancel",
        completion: .choices(["list", "retry", "cancel"])),
      PositionalSpec(name: "ID", optional: true, help: "an entry id or prefix"),
    ]
  ) { context in
    let app = try context.app()
    let names = try app.peerNames()
    let action = context.arguments.positional(0) ?? "list"
    switch action {
    case "list":
      let entries = try app.delivery.outbox()
      if context.wantsJSON {
        context.printJSON(OutboxJSON(entries: entries.map { .init($0, name: names[$0.recipient]) }))
        return
      }
      guard !entries.isEmpty else {
        context.console.print("the outbox is empty")
        return
      }
      for entry in entries {
        let name = names[entry.recipient].terminalSafe
        context.console.print(
          "\(entry.id.prefix(8))  to \(name)  \(OutputFormat.localTime(entry.created))  \(DeliveryUseCases.display(entry.state))"
        )
      }
    case "retry":
      let entry = try app.delivery.retry(try entryText(context, command: "outbox", action: action))
      context.console.print("\(entry.id.prefix(8)) queued again; `memo-peer serve` delivers it")
    case "cancel":
      let entry = try app.delivery.cancel(try entryText(context, command: "outbox", action: action))
      context.console.print("\(entry.id.prefix(8)) cancelled")
    default:
      throw ArgumentParser.usage(
        "unknown outbox action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: ["list", "retry", "cancel"]), command: "outbox")
    }
  }

  /// The options of `inbox`.
  enum InboxOptions {
    static let json = SharedOptions.json.withHelp(
      "print the entries (list), the new memo (accept) or {schema, dropped} as JSON")
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
    options: [InboxOptions.json],
    positionals: [
      PositionalSpec(
        name: "ACTION", optional: true, help: "list, accept or drop", completion: .choices(["list", "accept", "drop"])),
      PositionalSpec(name: "ID", optional: true, help: "an entry id or prefix"),
    ]
  ) { context in
    let app = try context.app()
    let names = try app.peerNames()
    let action = context.arguments.positional(0) ?? "list"
    func entryArgument() throws -> String { try entryText(context, command: "inbox", action: action) }
    switch action {
    case "list":
      let entries = try app.delivery.inbox()
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
      let memo = try app.delivery.accept(try entryArgument())
      if context.wantsJSON {
        context.printJSON(MemoJSON(memo: .init(memo.summary)))
      } else {
        context.console.print("accepted as memo \(memo.id.short)")
      }
    case "drop":
      let entry = try app.delivery.drop(try entryArgument())
      if context.wantsJSON {
        context.printJSON(DroppedJSON(entry))
      } else {
        context.console.print("dropped \(String(entry.id.prefix(8)).terminalSafe)")
      }
    default:
      throw ArgumentParser.usage(
        "unknown inbox action \(action.prefix(20))",
        suggestion: ArgumentParser.closest(to: action, among: ["list", "accept", "drop"]), command: "inbox")
    }
  }
}

/// The entry id an outbox or inbox action was given, or the usage error that asks for it.
private func entryText(_ context: CommandContext, command: String, action: String) throws -> String {
  guard let text = context.arguments.positional(1) else {
    throw ArgumentParser.usage("\(command) \(action) needs an entry id", suggestion: nil, command: command)
  }
  return text
}
