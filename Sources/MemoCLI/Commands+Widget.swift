import MemoCore
import MemoNode
import MemoStore

/// `memo-peer widget`: one status line for a desktop bar, redacted by `RedactionPolicy`.
enum WidgetCommand {
  static let widget = Command(
    name: "widget", summary: "Print a status line for desktop bars (waybar, i3blocks), redacted while locked.",
    details: """
      Shows the pinned memo (else the latest), the number of trusted peers online, of outbox
      entries waiting, and of memos waiting in the inbox (when there are any). A private memo is a placeholder while the node is locked, or always
      with widget.show-private-when-locked=false; with widget.protection=complete every memo
      field is a placeholder until the first unlock after the machine starts. Counts are never
      redacted. Settings live in config/config.json (docs/FORMATS.md). The widget never
      counts as use for the idle timeout of protection complete, and never creates a node.
      waybar: {"exec": "memo-peer widget --format waybar", "return-type": "json"}.
      """,
    options: [
      OptionSpec(
        "format", value: "FORMAT", "waybar (JSON), i3blocks or plain (default)",
        completion: .choices(WidgetFormat.allCases.map(\.rawValue))),
      OptionSpec("json", "print the waybar object (with schema and the per-field redaction reasons)"),
    ],
    positionals: []
  ) { context in
    let formatName = context.wantsJSON ? "waybar" : context.arguments.value("format") ?? "plain"
    guard let format = WidgetFormat(rawValue: formatName) else {
      throw ArgumentParser.usage(
        "unknown widget format \(ArgumentParser.echo(formatName))",
        suggestion: ArgumentParser.closest(to: formatName, among: WidgetFormat.allCases.map(\.rawValue)),
        command: "widget")
    }
    let presence = RecentTrustedContacts(paths: try context.paths(), now: context.now)
    let model = WidgetModel(try gather(context, presence: presence))
    switch format {
    case .waybar: context.printJSON(WidgetRenderer.waybar(model))
    case .i3blocks: context.console.write(Array(WidgetRenderer.i3blocks(model).utf8))
    case .plain: context.console.write(Array(WidgetRenderer.plain(model).utf8))
    }
  }

  /// Reads what the widget needs without counting as use and without creating anything.
  static func gather(_ context: CommandContext, presence: any TrustedPeerPresence) throws -> WidgetInput {
    let paths = try context.paths()
    let settings = try NodeConfig.load(paths: paths).widget
    let lockState = try DeviceKeys(paths: paths).status().lockState
    var memo: WidgetMemo?
    var outbox = 0
    var inbox = 0
    var relayed = 0
    if PrivateFiles.exists(paths.databasePath) {
      let store = try MemoStore.open(paths: paths, logger: context.logger.scoped("store"), use: .background)
      outbox = try store.outboxWaitingCount()
      inbox = try store.alertSnapshot().inbox.count
      relayed = try store.relayedRevisionCount()
      if let listed = try store.widgetMemo() {
        memo = WidgetMemo(
          id: listed.id, isPrivate: listed.isPrivate, isPinned: listed.isPinned, title: listed.title,
          tags: listed.tags, updated: listed.updated)
      }
    }
    return WidgetInput(
      lockState: lockState, memo: memo, peersOnline: presence.onlineCount(), outboxWaiting: outbox,
      inboxWaiting: inbox, relayedRevisions: relayed, settings: settings)
  }
}
