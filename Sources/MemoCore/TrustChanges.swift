/// What a revocation asks of this node's files beyond the database: the store decides it
/// (`MemoStore.takeHello`, `revoke`, `revokedTrustChanges`) and never writes the trust
/// store or the discovery key itself; whoever called it (the sync session, `trust remove`)
/// applies it (MemoVault's `apply(paths:keys:)`), after the store's transaction committed.
/// A value here, below both, so the store can return it without seeing the files it names.
public struct TrustChanges: Sendable, Equatable {
  /// Devices revoked here: each one still in the trust store leaves it.
  public var untrust: Set<DeviceID>
  /// A revocation was applied here: a new discovery key for this node, so the revoked
  /// device, which knew the old one, no longer recognises its advertisements; and every
  /// trusted device's key marked possibly old (each rotates its own when it hears of the
  /// revocation), so this node tries the advertisements it does not recognise until each
  /// device's next hello gives its new key.
  public var rotateDiscoveryKey: Bool

  public init(untrust: Set<DeviceID> = [], rotateDiscoveryKey: Bool = false) {
    self.untrust = untrust
    self.rotateDiscoveryKey = rotateDiscoveryKey
  }

  /// Nothing to change.
  public var isEmpty: Bool { untrust.isEmpty && !rotateDiscoveryKey }
}
