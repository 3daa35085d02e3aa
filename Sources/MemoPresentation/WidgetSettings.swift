/// The widget's settings, from the node's config file (`widget` in config/config.json).
public struct WidgetSettings: Sendable, Equatable {
  /// Whether the widget protects its memo fields beyond the memo's own protection.
  public enum Protection: String, Sendable, CaseIterable, Codable {
    /// Fields follow the node's lock state and the private mark.
    case none
    /// Every memo field is a placeholder until the first unlock after boot.
    case complete
  }

  /// `widget.show-private-when-locked`. memo-peer cannot tell whether your desktop's screen
  /// is locked, and a status bar may be seen by anyone at the desk, so `false` means a
  /// private memo is never shown in the widget. `true` (the default) shows it while the
  /// node is unlocked; while locked it cannot be read anyway.
  public var showPrivateWhenLocked: Bool
  /// `widget.protection`.
  public var protection: Protection

  public init(showPrivateWhenLocked: Bool = true, protection: Protection = .none) {
    self.showPrivateWhenLocked = showPrivateWhenLocked
    self.protection = protection
  }
}
