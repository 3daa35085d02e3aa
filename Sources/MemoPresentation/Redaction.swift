import MemoCore

/// Why a field is not shown. The widget's JSON names the reason for every redacted field,
/// so a bar (or a person reading it) can tell "locked" from "private" from "not yet".
public enum RedactionReason: String, Sendable, Codable, CaseIterable {
  /// The field is sealed under the device key and the node is locked.
  case locked
  /// The memo is marked private and the user chose not to show private memos in the widget
  /// (`widget.show-private-when-locked=false`).
  case `private`
  /// `widget.protection=complete` and nobody has unlocked the node since the machine
  /// started: every memo field is a placeholder, like a widget under Data Protection.
  case placeholder
}

/// The memo fields a widget may show.
public enum WidgetMemoField: String, Sendable, CaseIterable {
  /// Sealed under the listing key too for memos not marked private (readable while locked).
  case title
  /// Sealed under the device key only.
  case tags
}

/// The rule for every memo field a widget shows. Pure: the same inputs always give the same
/// answer, and the tests cover every combination.
///
/// Precedence: `placeholder` (nothing of any memo before the first unlock, when asked for),
/// then `private` (the user's choice for private memos), then `locked` (the field is sealed
/// under the device key: tags always, titles of private memos). A non-private memo's title
/// is sealed under the listing key as well and so stays readable while locked, which is what
/// lets a locked widget still say which memo is pinned.
public enum RedactionPolicy {
  public static func reason(
    for field: WidgetMemoField, isPrivate: Bool, lockState: LockState, settings: WidgetSettings
  ) -> RedactionReason? {
    if settings.protection == .complete && lockState.isProtectedState && !lockState.unlockedSinceBoot {
      return .placeholder
    }
    if isPrivate && !settings.showPrivateWhenLocked { return .private }
    if lockState.canReadContent { return nil }
    switch field {
    case .title: return isPrivate ? .locked : nil
    case .tags: return .locked
    }
  }
}

extension LockState {
  /// Whether the node has a passphrase at all (only then is there an unlock to wait for).
  var isProtectedState: Bool { self != .unprotected }
}
