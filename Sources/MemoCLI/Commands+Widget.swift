import MemoApp
import MemoCore
import MemoPresentation

/// `memo-peer widget`: one status line for a desktop bar, redacted by `RedactionPolicy`.
enum WidgetCommand {
  /// The options of `widget`.
  enum WidgetOptions {
    static let format = ValueOption(
      "format", value: "FORMAT", "waybar (JSON), i3blocks or plain (default)",
      completion: .choices(WidgetFormat.allCases.map(\.rawValue)))
    static let json = SharedOptions.json.withHelp(
      "print the waybar object (with schema and the per-field redaction reasons)")
  }

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
    options: [WidgetOptions.format, WidgetOptions.json],
    positionals: []
  ) { context in
    let formatName = context.wantsJSON ? "waybar" : context.arguments[WidgetOptions.format] ?? "plain"
    guard let format = WidgetFormat(rawValue: formatName) else {
      throw ArgumentParser.usage(
        "unknown widget format \(ArgumentParser.echo(formatName))",
        suggestion: ArgumentParser.closest(to: formatName, among: WidgetFormat.allCases.map(\.rawValue)),
        command: "widget")
    }
    let model = WidgetModel(try context.app().info.widget())
    switch format {
    case .waybar: context.printJSON(WidgetRenderer.waybar(model))
    case .i3blocks: context.console.write(Array(WidgetRenderer.i3blocks(model).utf8))
    case .plain: context.console.write(Array(WidgetRenderer.plain(model).utf8))
    }
  }
}
