import MemoCore

extension AlertSnapshot {
  /// What is new in `self` since `earlier`: entries that arrived, memos that gained
  /// conflicts, devices with more held deletes. Something that went away is not news.
  public func alerts(since earlier: AlertSnapshot) -> [DesktopAlert] {
    var alerts: [DesktopAlert] = inbox.sorted { $0.key < $1.key }.filter { earlier.inbox[$0.key] == nil }.map {
      .arrived(entry: $0.key, sender: $0.value)
    }
    let conflicts = conflicted.subtracting(earlier.conflicted).count
    if conflicts > 0 { alerts.append(.conflicts(count: conflicts)) }
    for (device, count) in heldDeletes.sorted(by: { $0.key < $1.key }) where count > earlier.heldDeletes[device] ?? 0 {
      alerts.append(.heldDeletes(sender: device, count: count))
    }
    for (id, revoked) in revocations.sorted(by: { $0.key < $1.key }) where earlier.revocations[id] == nil {
      alerts.append(.revoked(by: revoked.revoker, name: revoked.revokedName))
    }
    return alerts
  }
}

/// One thing the desktop is told about.
public enum DesktopAlert: Sendable, Equatable {
  /// A memo arrived in the inbox from `sender` (a device ID).
  case arrived(entry: String, sender: DeviceID)
  /// A sync brought conflict copies for `count` memos.
  case conflicts(count: Int)
  /// `count` deletes from `sender` wait for a person's answer.
  case heldDeletes(sender: DeviceID, count: Int)
  /// `by` (a device ID) revoked the device this device names `name`, which is cut off here.
  case revoked(by: DeviceID, name: String)
}

/// A desktop notification, ready to send: org.freedesktop.Notifications' summary and body
/// (body markup escaped), and the command its "Open" action runs in a terminal.
public struct DesktopNotice: Sendable, Equatable {
  public let summary: String
  public let body: String
  public let openCommand: [String]
}

/// The rules for a notice's text. The redaction follows the widget's: while the node is
/// locked, before the first unlock with `widget.protection=complete`, or for a private memo
/// (always: a notification pops up over whatever is on screen), an arrival says only
/// "A memo arrived from NAME" with no title. Counts and names are never redacted.
public enum DesktopNoticeRules {
  /// What an arrival's memo may show: its title and private mark, when they could be read.
  public struct ArrivedMemo: Sendable, Equatable {
    public let title: String
    public let isPrivate: Bool

    public init(title: String, isPrivate: Bool) {
      self.title = title
      self.isPrivate = isPrivate
    }
  }

  public static func notice(
    for alert: DesktopAlert, senderName: String, memo: ArrivedMemo?, lockState: LockState, settings: WidgetSettings
  ) -> DesktopNotice {
    let name = escape(senderName)
    let plainName = plain(senderName)
    switch alert {
    case .arrived(let entry, _):
      let short = String(entry.prefix(8))
      let hint = "memo-peer inbox accept \(escape(short))"
      let redacted =
        memo.map {
          $0.isPrivate
            || RedactionPolicy.reason(for: .title, isPrivate: $0.isPrivate, lockState: lockState, settings: settings)
              != nil
        } ?? true
      if redacted || memo == nil {
        return DesktopNotice(
          summary: "memo-peer", body: "A memo arrived from \(name)\n\(hint)", openCommand: ["memo-peer", "inbox"])
      }
      return DesktopNotice(
        summary: "A memo from \(plainName)", body: "\(escape(memo?.title ?? ""))\n\(hint)",
        openCommand: ["memo-peer", "inbox"])
    case .conflicts(let count):
      return DesktopNotice(
        summary: "memo-peer: \(count) memo\(count == 1 ? "" : "s") in conflict",
        body: "A sync brought versions edited on two devices; both are kept.\nmemo-peer conflicts",
        openCommand: ["memo-peer", "conflicts"])
    case .heldDeletes(_, let count):
      return DesktopNotice(
        summary: "memo-peer: deletes held",
        body: "\(name) would delete \(count) memo\(count == 1 ? "" : "s"); nothing was deleted yet.\n"
          + "memo-peer sync --peer \(name) --allow-deletes (or --keep-deleted)",
        openCommand: ["memo-peer", "peers"])
    case .revoked(_, let revoked):
      return DesktopNotice(
        summary: "memo-peer: \(plain(revoked)) revoked",
        body: "\(name) revoked \(escape(revoked)); this device no longer trusts it.\nmemo-peer trust list",
        openCommand: ["memo-peer", "trust", "list"])
    }
  }

  /// Text for the summary, which is never markup: control characters become spaces.
  static func plain(_ text: String) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.map {
          $0.properties.generalCategory == .control || $0.properties.generalCategory == .format ? " " : $0
        }))
  }

  /// Escapes the body markup of org.freedesktop.Notifications (a subset of HTML) and drops
  /// control characters but newlines, so text from a peer cannot format or forge a notice.
  public static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default:
        if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
          out += " "
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }
}
