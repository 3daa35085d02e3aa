import FoundationEssentials
import MemoCore
import MemoVault
import Synchronization

/// The set of trusted device IDs the TLS verify callback and the sessions in progress
/// consult, shared between the daemon's loop (which reloads it when the trust store file
/// changes, and closes the connections of the devices removed) and connection threads
/// (which ask it during handshakes and before applying what a peer sent).
public final class TrustedDevices: Sendable {
  private struct Loaded {
    /// What the daemon's loop last loaded (`reloadIfChanged`).
    var reading: TrustReading
    /// What `accepts` last read from the file itself, when it changed after that load.
    var lookedUp: TrustReading?
    /// Whether that read failed (then `lookedUp` trusts nobody).
    var lookupFailed = false
    /// Times `accepts` read the file (for tests of the rate limit).
    var lookups = 0
  }
  private let loaded: Mutex<Loaded>
  let store: TrustStore

  public init(store: TrustStore) throws {
    self.store = store
    let fingerprint = store.fingerprint()
    let reading = TrustReading(fingerprint: fingerprint, devices: try store.load().deviceIDs)
    loaded = Mutex(Loaded(reading: reading))
  }

  /// A set that has read nothing yet: its first `accepts` reads the file (for sessions
  /// outside the daemon, which load the trust store only when asked).
  public init(following store: TrustStore) {
    self.store = store
    loaded = Mutex(Loaded(reading: TrustReading(fingerprint: "", devices: [])))
  }

  /// Whether the daemon's loaded set has `id` (not the file: see `accepts`).
  public func contains(_ id: DeviceID) -> Bool { loaded.withLock { $0.reading.devices.contains(id) } }

  /// Whether the trust file trusts `id` now: the TLS verify callback asks it at every
  /// handshake, and sessions in progress before they apply what a peer sent. The file
  /// decides, both ways: a device removed a moment ago is refused and one paired a moment
  /// ago accepted, before the daemon's loop has reloaded. Costs one stat; the file is read
  /// (and decrypted) only when it changed since it was last read, once per change, so
  /// strangers presenting key after key cannot make the daemon read it for each. A file
  /// that cannot be read trusts nobody until it changes again (as `TrustStore.load` says).
  public func accepts(_ id: DeviceID) -> Bool { look(id).trusted }

  /// For sessions in progress: false only when the file as it is now was read and does
  /// not trust `id` (a `trust remove`). A file that cannot be read ends no session: the
  /// node was locked meanwhile (which closes every session by itself, and a locked store
  /// refuses the session's work with its own reason), or the file is damaged (no new
  /// handshake succeeds until it is fixed).
  public func stillTrusts(_ id: DeviceID) -> Bool {
    let (trusted, readable) = look(id)
    return trusted || !readable
  }

  /// Whether the file as it is now trusts `id`, and whether it could be read.
  private func look(_ id: DeviceID) -> (trusted: Bool, readable: Bool) {
    let fingerprint = store.fingerprint()
    let (answer, failed) = loaded.withLock {
      (
        TrustReading.answer(for: id, fileNow: fingerprint, readings: [$0.reading, $0.lookedUp]),
        $0.lookupFailed && $0.lookedUp?.fingerprint == fingerprint && $0.reading.fingerprint != fingerprint
      )
    }
    switch answer {
    case .trusted: return (true, true)
    case .refused: return (false, !failed)
    case .readFile: break
    }
    let devices = try? store.load().deviceIDs
    loaded.withLock {
      $0.lookedUp = TrustReading(fingerprint: fingerprint, devices: devices ?? [])
      $0.lookupFailed = devices == nil
      $0.lookups += 1
    }
    return (devices?.contains(id) ?? false, devices != nil)
  }

  /// How often `accepts` read the file.
  public var fileLookups: Int { loaded.withLock { $0.lookups } }

  public var all: Set<DeviceID> { loaded.withLock { $0.reading.devices } }

  /// The fingerprint of the file as the daemon's loop last loaded it: what `serve.json`
  /// says the daemon has applied (`ServeStatus.trustStore`).
  public var loadedFingerprint: String { loaded.withLock { $0.reading.fingerprint } }

  /// Whether the store's file changed since it was last loaded.
  public var hasChanged: Bool {
    let fingerprint = store.fingerprint()
    return loaded.withLock { fingerprint != $0.reading.fingerprint }
  }

  /// Re-reads the store if its file changed (or always, with `force`); returns the devices
  /// no longer trusted (nil: the file did not change and nothing was re-read).
  public func reloadIfChanged(force: Bool = false) throws -> Set<DeviceID>? {
    let fingerprint = store.fingerprint()
    guard force || loaded.withLock({ fingerprint != $0.reading.fingerprint }) else { return nil }
    let fresh = try store.load().deviceIDs
    return loaded.withLock { loaded in
      let removed = loaded.reading.devices.subtracting(fresh)
      loaded = Loaded(reading: TrustReading(fingerprint: fingerprint, devices: fresh), lookups: loaded.lookups)
      return removed
    }
  }
}
