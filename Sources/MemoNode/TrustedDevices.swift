import Foundation
import MemoCore
import MemoStore
import Synchronization

/// The set of trusted device IDs the TLS verify callback consults, shared between the
/// daemon's loop (which reloads it when the trust store file changes) and connection
/// threads (which read it during handshakes).
public final class TrustedDevices: Sendable {
  private struct Loaded {
    var ids: Set<DeviceID>
    var fingerprint: String
  }
  private let loaded: Mutex<Loaded>
  let store: TrustStore

  public init(store: TrustStore) throws {
    self.store = store
    let fingerprint = store.fingerprint()
    loaded = Mutex(Loaded(ids: try store.load().deviceIDs, fingerprint: fingerprint))
  }

  public func contains(_ id: DeviceID) -> Bool { loaded.withLock { $0.ids.contains(id) } }

  /// For the TLS verify callback: a device not in the loaded set is looked up in the file
  /// itself, so a device paired a moment ago is accepted at once rather than after the
  /// daemon's next reload. (The cached set is left to `reloadIfChanged`, which also tells
  /// the daemon whom to disconnect.)
  public func accepts(_ id: DeviceID) -> Bool {
    if contains(id) { return true }
    return (try? store.load().deviceIDs.contains(id)) ?? false
  }

  public var all: Set<DeviceID> { loaded.withLock { $0.ids } }

  /// Whether the store's file changed since it was last loaded.
  public var hasChanged: Bool {
    let fingerprint = store.fingerprint()
    return loaded.withLock { fingerprint != $0.fingerprint }
  }

  /// Re-reads the store if its file changed (or always, with `force`); returns the devices
  /// no longer trusted (nil: the file did not change and nothing was re-read).
  public func reloadIfChanged(force: Bool = false) throws -> Set<DeviceID>? {
    let fingerprint = store.fingerprint()
    guard force || loaded.withLock({ fingerprint != $0.fingerprint }) else { return nil }
    let fresh = try store.load().deviceIDs
    return loaded.withLock { loaded in
      let removed = loaded.ids.subtracting(fresh)
      loaded = Loaded(ids: fresh, fingerprint: fingerprint)
      return removed
    }
  }
}
