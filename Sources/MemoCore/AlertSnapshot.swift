/// What the desktop should hear about, found by comparing two snapshots of the store that
/// hold no content: inbox entries (id → sender), memos with conflict copies, and held
/// deletes per device. The store's facts only (MemoStore reads them without the device
/// key); what is news and how a notice says it is MemoPresentation's (`alerts(since:)`,
/// `DesktopNoticeRules`). Pure, so every rule is tested without a bus.
public struct AlertSnapshot: Sendable, Equatable {
  /// Inbox entry id → the sender.
  public var inbox: [String: DeviceID]
  public var conflicted: Set<MemoID>
  /// Device → deletes held from it.
  public var heldDeletes: [DeviceID: Int]
  /// Revocations a peer passed on and this device applied: id → (maker, the revoked device
  /// as this device names it).
  public var revocations: [String: RevokedDevice]

  /// A revocation as a notice names it.
  public struct RevokedDevice: Sendable, Equatable {
    public var revoker: DeviceID
    public var revokedName: String

    public init(revoker: DeviceID, revokedName: String) {
      self.revoker = revoker
      self.revokedName = revokedName
    }
  }

  public init(
    inbox: [String: DeviceID] = [:], conflicted: Set<MemoID> = [], heldDeletes: [DeviceID: Int] = [:],
    revocations: [String: RevokedDevice] = [:]
  ) {
    self.inbox = inbox
    self.conflicted = conflicted
    self.heldDeletes = heldDeletes
    self.revocations = revocations
  }
}
