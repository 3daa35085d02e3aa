import MemoCore

/// The output formats of `memo-peer widget`.
public enum WidgetFormat: String, Sendable, CaseIterable {
  /// waybar's custom module with `"return-type": "json"`: one JSON object per line.
  case waybar
  /// i3blocks' line format: full text, short text, colour.
  case i3blocks
  /// One line of text.
  case plain
}

/// Formats a `WidgetModel`. Pure: strings in, strings out; the CLI prints them.
public enum WidgetRenderer {
  /// Titles longer than this are shortened in the bar (the tooltip has the whole title).
  public static let maxTitleCharacters = 40

  /// What stands in for a withheld title, saying why.
  public static func placeholder(for reason: RedactionReason) -> String {
    switch reason {
    case .locked: "locked"
    case .private: "private memo"
    case .placeholder: "memo-peer"
    }
  }

  /// The title as the bar shows it: the title, a placeholder, or `no memos`.
  public static func titleText(_ model: WidgetModel, limit: Int = maxTitleCharacters) -> String {
    guard model.hasMemo else { return "no memos" }
    if let reason = model.title.redacted { return placeholder(for: reason) }
    let title = model.title.value ?? ""
    // A title may have come from a peer: a bar and a terminal get it through the one
    // rendering rule (a bidirectional override cannot reorder the counts next to it).
    let shown = title.isEmpty ? "(untitled)" : TerminalText.title(title)
    return shown.count > limit ? String(shown.prefix(limit - 1)) + "…" : shown
  }

  /// `Groceries · 2 online · 1 waiting`, `· 3 in inbox` when memos wait there,
  /// `· 812 sealed (relay)` on a device that relays notebooks it cannot read, and
  /// `· paused` while the daemon waits (the tooltip says for what).
  public static func text(_ model: WidgetModel) -> String {
    "\(titleText(model)) · \(model.peersOnline) online" + (model.peersLive > 0 ? " (\(model.peersLive) live)" : "")
      + " · \(model.outboxWaiting) waiting"
      + (model.inboxWaiting > 0 ? " · \(model.inboxWaiting) in inbox" : "")
      + (model.relayedRevisions > 0 ? " · \(model.relayedRevisions) sealed (relay)" : "")
      + (model.daemonWaitingFor != nil ? " · paused" : "")
  }

  /// Several lines: the state, the memo, its tags, the counts.
  public static func tooltip(_ model: WidgetModel) -> String {
    var lines = ["memo-peer: \(model.lockState.name)"]
    if let waiting = model.daemonWaitingFor { lines.append("paused: the daemon waits for \(waiting)") }
    if model.hasMemo {
      var memo = "memo: " + titleText(model, limit: 200)
      if model.pinned { memo += " (pinned)" }
      lines.append(memo)
      if let reason = model.tags.redacted {
        lines.append("tags: \(placeholder(for: reason))")
      } else if let tags = model.tags.value, !tags.isEmpty {
        lines.append("tags: " + tags.map { "#" + TerminalText.display($0) }.joined(separator: " "))
      }
    } else {
      lines.append("memo: none")
    }
    lines.append("trusted peers online: \(model.peersOnline)")
    lines.append("connected live: \(model.peersLive)")
    lines.append("outbox waiting: \(model.outboxWaiting)")
    lines.append("inbox: \(model.inboxWaiting)")
    if model.relayedRevisions > 0 { lines.append("relayed, sealed revisions: \(model.relayedRevisions)") }
    return lines.joined(separator: "\n")
  }

  /// CSS classes for waybar: the lock state, plus `redacted` when a field is withheld.
  public static func classes(_ model: WidgetModel) -> [String] {
    [model.lockState.name] + (model.isRedacted ? ["redacted"] : []) + (model.daemonWaitingFor != nil ? ["paused"] : [])
  }

  /// waybar's JSON object. `text` and `tooltip` are Pango markup in waybar, so `&`, `<` and
  /// `>` in a title are escaped. `fields` is memo-peer's own addition (waybar ignores keys
  /// it does not know): every field's value, or null and the reason it is withheld.
  public static func waybar(_ model: WidgetModel) -> WaybarObject {
    WaybarObject(
      text: escapeMarkup(text(model)), tooltip: escapeMarkup(tooltip(model)), class: classes(model),
      alt: model.lockState.name, fields: WaybarObject.Fields(model))
  }

  /// i3blocks: the full text, a short text (the title), and a colour while locked.
  public static func i3blocks(_ model: WidgetModel) -> String {
    var lines = [text(model), titleText(model, limit: 20)]
    if !model.lockState.canReadContent { lines.append("#E5C07B") }
    return lines.joined(separator: "\n") + "\n"
  }

  public static func plain(_ model: WidgetModel) -> String { text(model) + "\n" }

  static func escapeMarkup(_ text: String) -> String {
    var result = ""
    for character in text {
      switch character {
      case "&": result += "&amp;"
      case "<": result += "&lt;"
      case ">": result += "&gt;"
      default: result.append(character)
      }
    }
    return result
  }
}

/// The waybar custom-module object, plus memo-peer's `fields` and `schema`.
public struct WaybarObject: Encodable, Sendable, Equatable {
  public let text: String
  public let tooltip: String
  public let `class`: [String]
  public let alt: String
  public let fields: Fields
  /// memo-peer's JSON schema version (docs/CLI.md).
  public let schema = 1

  /// Per field: `value` (null when withheld) and `redacted` (null, `locked`, `private` or
  /// `placeholder`). Counts are never redacted.
  public struct Fields: Encodable, Sendable, Equatable {
    public struct Field<Value: Encodable & Sendable & Equatable>: Encodable, Sendable, Equatable {
      public let value: Value?
      public let redacted: String?

      // Explicit so that a withheld value is written as null rather than left out.
      public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        try container.encode(redacted, forKey: .redacted)
      }
      enum CodingKeys: String, CodingKey { case value, redacted }
    }

    public let title: Field<String>
    public let tags: Field<[String]>
    public let memoID: Field<String>
    public let peersOnline: Field<Int>
    public let peersLive: Field<Int>
    public let outboxWaiting: Field<Int>
    public let inboxWaiting: Field<Int>
    public let relayedRevisions: Field<Int>
    public let state: String

    init(_ model: WidgetModel) {
      title = Field(value: model.title.value, redacted: model.title.redacted?.rawValue)
      tags = Field(value: model.tags.value, redacted: model.tags.redacted?.rawValue)
      memoID = Field(
        value: model.memoID?.rawValue, redacted: model.hasMemo && model.memoID == nil ? "placeholder" : nil)
      peersOnline = Field(value: model.peersOnline, redacted: nil)
      peersLive = Field(value: model.peersLive, redacted: nil)
      outboxWaiting = Field(value: model.outboxWaiting, redacted: nil)
      inboxWaiting = Field(value: model.inboxWaiting, redacted: nil)
      relayedRevisions = Field(value: model.relayedRevisions, redacted: nil)
      state = model.lockState.name
    }

    enum CodingKeys: String, CodingKey {
      case title, tags, state
      case memoID = "memo_id"
      case peersOnline = "peers_online"
      case peersLive = "peers_live"
      case outboxWaiting = "outbox_waiting"
      case inboxWaiting = "inbox_waiting"
      case relayedRevisions = "relayed_revisions"
    }
  }
}
