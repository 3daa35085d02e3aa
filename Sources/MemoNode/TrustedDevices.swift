import FoundationEssentials
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
    /// What the verify callback last read from the file, and the file's fingerprint then.
    var lookedUp: (fingerprint: String, ids: Set<DeviceID>)?
    /// Times the verify callback read the file (for tests of the rate limit).
    var lookups = 0
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
  /// daemon's next reload. The file is read again only when it changed since the last look
  /// (one stat per unknown key): strangers presenting key after key cannot make the daemon
  /// read and decrypt it for each. (The cached set is left to `reloadIfChanged`, which also
  /// tells the daemon whom to disconnect.)
  public func accepts(_ id: DeviceID) -> Bool {
    if contains(id) { return true }
    let fingerprint = store.fingerprint()
    let (known, cached) = loaded.withLock { loaded -> (Bool, Bool) in
      if fingerprint == loaded.fingerprint { return (false, true) }
      guard let looked = loaded.lookedUp, looked.fingerprint == fingerprint else { return (false, false) }
      return (looked.ids.contains(id), true)
    }
    if cached { return known }
    let ids = (try? store.load().deviceIDs) ?? []
    loaded.withLock {
      $0.lookedUp = (fingerprint, ids)
      $0.lookups += 1
    }
    return ids.contains(id)
  }

  /// How often `accepts` read the file.
  public var fileLookups: Int { loaded.withLock { $0.lookups } }

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
