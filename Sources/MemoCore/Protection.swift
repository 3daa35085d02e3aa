/// How the device key, which seals memo content at rest, is itself kept: memo-peer's
/// version of the Data Protection classes of the source documents.
public enum ProtectionClass: String, Sendable, CaseIterable, Codable {
  /// Stored unwrapped, guarded by file permissions only: for headless hosts that must work
  /// unattended after a reboot.
  case none
  /// Wrapped under a passphrase. `unlock` puts the unwrapped key in the kernel keyring,
  /// where it stays until reboot or `lock`.
  case afterFirstUnlock = "after-first-unlock"
  /// Like `afterFirstUnlock`, but the key also leaves the keyring after an idle timeout, so
  /// content is unreadable again soon after the last use.
  case complete

  /// Whether a passphrase wraps the key.
  public var isProtected: Bool { self != .none }

  /// The byte that names the class in the key file (docs/FORMATS.md).
  public var code: UInt8 {
    switch self {
    case .none: 0
    case .afterFirstUnlock: 1
    case .complete: 2
    }
  }

  public init?(code: UInt8) {
    guard let match = Self.allCases.first(where: { $0.code == code }) else { return nil }
    self = match
  }

  /// The idle timeout of `complete` when none is chosen: five minutes.
  public static let defaultIdleTimeoutSeconds: UInt32 = 300
  /// Idle timeouts accepted for `complete`: one second (tests) to one week.
  public static let idleTimeoutRange: ClosedRange<UInt32> = 1...604_800
}

/// Whether memo content can be read right now.
public enum LockState: Sendable, Equatable {
  /// Protection `none`: the key is always available.
  case unprotected
  /// The unwrapped key is in the kernel keyring.
  case unlocked
  /// The key is wrapped and not in the keyring. `unlockedSinceBoot` tells whether it was
  /// unlocked at some point since the machine started (a widget with
  /// `widget.protection=complete` shows only placeholders until that first unlock).
  case locked(unlockedSinceBoot: Bool)

  /// The state that follows from the key file's class and what the keyring holds.
  public static func of(protection: ProtectionClass, keyInKeyring: Bool, unlockedSinceBoot: Bool) -> LockState {
    guard protection.isProtected else { return .unprotected }
    return keyInKeyring ? .unlocked : .locked(unlockedSinceBoot: unlockedSinceBoot)
  }

  /// Whether memo content (bodies, tags, private titles) can be decrypted.
  public var canReadContent: Bool {
    if case .locked = self { return false }
    return true
  }

  /// Whether an unlock has happened since boot (always true without protection).
  public var unlockedSinceBoot: Bool {
    if case .locked(let since) = self { return since }
    return true
  }

  /// `unprotected`, `unlocked` or `locked`: the name in JSON and status lines.
  public var name: String {
    switch self {
    case .unprotected: "unprotected"
    case .unlocked: "unlocked"
    case .locked: "locked"
    }
  }
}

/// What `memo-peer protect` must ask for and do to move the key from one class to another.
///
/// Every change of a protected key asks for the current passphrase first: it proves the
/// person at the keyboard may change it, and it is the only way to unwrap the key (an
/// unlocked keyring is not enough, so a walk-up attacker at an unlocked session cannot
/// remove the protection). Memos are never re-encrypted: only the key is re-wrapped.
public struct ProtectionPlan: Sendable, Equatable {
  public enum Action: Sendable, Equatable {
    /// Already as asked.
    case nothing
    /// Wrap an unwrapped key under a new passphrase.
    case wrap
    /// Unwrap with the current passphrase and wrap again (new class, timeout or passphrase).
    case rewrap
    /// Unwrap with the current passphrase and store the key unwrapped (`none`).
    case unwrap
  }

  public let action: Action
  public let needsCurrentPassphrase: Bool
  public let needsNewPassphrase: Bool

  public init(action: Action, needsCurrentPassphrase: Bool, needsNewPassphrase: Bool) {
    self.action = action
    self.needsCurrentPassphrase = needsCurrentPassphrase
    self.needsNewPassphrase = needsNewPassphrase
  }

  /// - Parameters:
  ///   - settingsChange: the target's parameters (idle timeout) differ from the current ones.
  public static func make(
    from current: ProtectionClass, to target: ProtectionClass, changePassphrase: Bool, settingsChange: Bool = false
  ) throws -> ProtectionPlan {
    if changePassphrase && !target.isProtected {
      throw MemoPeerError(
        .usage, "protection none has no passphrase to change",
        hint: "choose after-first-unlock or complete, or drop --change-passphrase")
    }
    switch (current.isProtected, target.isProtected) {
    case (false, false):
      return ProtectionPlan(action: .nothing, needsCurrentPassphrase: false, needsNewPassphrase: false)
    case (false, true):
      return ProtectionPlan(action: .wrap, needsCurrentPassphrase: false, needsNewPassphrase: true)
    case (true, false):
      return ProtectionPlan(action: .unwrap, needsCurrentPassphrase: true, needsNewPassphrase: false)
    case (true, true):
      if current == target && !changePassphrase && !settingsChange {
        return ProtectionPlan(action: .nothing, needsCurrentPassphrase: false, needsNewPassphrase: false)
      }
      return ProtectionPlan(action: .rewrap, needsCurrentPassphrase: true, needsNewPassphrase: changePassphrase)
    }
  }
}
