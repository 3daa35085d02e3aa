import MemoCore
import MemoSystem

/// Applying what a revocation asks of this node's files (`TrustChanges`, decided by the
/// store): here, since only the vault writes the trust store and the discovery key.
extension TrustChanges {
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
