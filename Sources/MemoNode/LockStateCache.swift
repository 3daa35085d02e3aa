import MemoCore
import MemoStore
import MemoVault
import Synchronization

/// The daemon's lock state, read with as little disk as it can be: a node without a
/// passphrase stays unprotected until its device key file is replaced (`protect` writes a
/// new one), so while the file's stamp is the one it was read at, no file is read. A
/// protected node is asked every time (the key file and the keyring): the keyring's idle
/// timeout locks it without writing any file, so no stamp tells of it.
final class LockStateCache: Sendable {
  let keys: DeviceKeys
  private let last = Mutex<(stamp: String, state: LockState)?>(nil)

  init(keys: DeviceKeys) { self.keys = keys }

  /// The lock state now; nil when it cannot be told.
  func read() -> LockState? {
    let stamp = ServeFactsReader.stamp(KeyFile.device(keys.paths).path)
    if let known = Self.reusable(last.withLock { $0 }, stamp: stamp) { return known }
    guard let state = try? keys.status().lockState else { return nil }
    last.withLock { $0 = (stamp, state) }
    return state
  }

  /// The state read before, when it still holds for a file at `stamp`: only an
  /// unprotected one, and only for the same file.
  static func reusable(_ last: (stamp: String, state: LockState)?, stamp: String) -> LockState? {
    guard let last, last.stamp == stamp, last.state == .unprotected else { return nil }
    return last.state
  }
}
