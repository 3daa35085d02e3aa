import Foundation
import MemoApp
import MemoCore
import MemoCrypto
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoVault
import Synchronization

/// A node in a temporary home for the use cases: a fixed clock that moves on a second per
/// reading, a fake keyring (so protection, locking and unlocking are observable) and cheap
/// scrypt. `app()` is a use of it, as a command or a web request makes one.
final class AppFixture {
  static let fastKDF = ScryptParameters(n: 1 << 10, r: 8, p: 1)
  static let passphrase = "correct horse battery"

  let root: String
  let paths: NodePaths
  let keyring = FakeKeyring()
  let keys: DeviceKeys
  let clock = TickingClock(start: 1_796_000_000_000)

  init() throws {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    root = try PrivateFiles.makeUniqueDirectory(in: base, prefix: "memo-peer-app-test")
    paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": root])
    keys = DeviceKeys(paths: paths, keyring: keyring, kdfParameters: Self.fastKDF)
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  /// A fresh use of the node (its own store connection).
  func app() -> App {
    let clock = self.clock
    return App(paths: paths, keys: keys, clock: { clock.next() })
  }

  func secret(_ text: String = AppFixture.passphrase) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }

  /// Protects the device key under `passphrase` (class complete), leaving it unlocked.
  func protect() throws {
    _ = try keys.protect(
      .complete, idleTimeout: nil, changePassphrase: false, currentPassphrase: { self.secret() },
      newPassphrase: { self.secret() })
  }

  /// A memo made through the use case, for the tests that need one.
  @discardableResult
  func memo(_ body: String, title: String = "", tags: [String] = [], in notebook: String? = nil) throws -> Memo {
    try app().memos.create(in: notebook) { MemoDraft(title: title, body: body, tags: tags) }
  }
}

/// Milliseconds that move on by one second at every reading.
final class TickingClock: Sendable {
  private let time: Mutex<Timestamp>
  init(start: Timestamp) { time = Mutex(start) }
  func next() -> Timestamp {
    time.withLock {
      $0 += 1000
      return $0
    }
  }
}
