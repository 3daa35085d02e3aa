import MemoCore
import MemoSystem

/// What a revocation asks of this node's files beyond the database: the store decides it
/// (`MemoStore.takeHello`, `revoke`, `revokedTrustChanges`) and never writes the trust
/// store or the discovery key itself; whoever called it (the sync session, `trust remove`)
/// applies it here, after the store's transaction committed.
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

  /// Removes the revoked devices from the trust store, then rotates the discovery key when
  /// asked. Returns the devices it removed (none when none of them was trusted). Runs again
  /// harmlessly: a sync cut short before this is repeated at the next one.
  @discardableResult
  public func apply(paths: NodePaths, keys: DeviceKeys) throws -> [DeviceID] {
    let removed = try untrustRevoked(TrustStore(paths: paths, keys: keys))
    if rotateDiscoveryKey {
      try NodeSecrets(paths: paths, keys: keys).rotateDiscoveryKey()
      _ = try TrustStore(paths: paths, keys: keys).update { $0.markDiscoveryKeysStale() }
    }
    return removed
  }

  private func untrustRevoked(_ trustStore: TrustStore) throws -> [DeviceID] {
    guard !untrust.isEmpty else { return [] }
    guard try trustStore.load().peers.contains(where: { untrust.contains($0.deviceID) }) else { return [] }
    return try trustStore.update { list in
      let gone = list.peers.map(\.deviceID).filter(untrust.contains)
      for device in gone { _ = try list.remove(device.compact) }
      return gone
    }
  }
}
