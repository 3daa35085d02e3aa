import Foundation
import MemoCrypto

@testable import MemoStore

/// An in-memory `SecretKeyring` that follows the contract of `SecretKeyring`, records the
/// timeouts set, and can "reboot" (forget everything).
final class FakeKeyring: SecretKeyring, @unchecked Sendable {
  // Guarded by `lock`.
  private let lock = NSLock()
  private var secrets: [String: [UInt8]] = [:]
  private var timeoutLog: [(name: String, seconds: UInt32)] = []

  func store(_ name: String, secret: SecureBytes) throws {
    lock.withLock { secrets[name] = secret.withUnsafeBytes { Array($0) } }
  }

  func read(_ name: String, maxCount: Int) throws -> SecureBytes? {
    lock.withLock { secrets[name].map { SecureBytes(copying: $0) } }
  }

  func contains(_ name: String) -> Bool { lock.withLock { secrets[name] != nil } }

  func setTimeout(_ name: String, seconds: UInt32) throws {
    lock.withLock {
      if secrets[name] != nil { timeoutLog.append((name, seconds)) }
    }
  }

  func remove(_ name: String) throws { _ = lock.withLock { secrets.removeValue(forKey: name) } }

  /// A restart: the kernel forgets every key.
  func reboot() { lock.withLock { secrets.removeAll() } }

  /// An idle timeout running out.
  func expire(where matches: (String) -> Bool) {
    lock.withLock { for name in secrets.keys where matches(name) { secrets.removeValue(forKey: name) } }
  }

  var names: [String] { lock.withLock { Array(secrets.keys).sorted() } }
  var timeouts: [(name: String, seconds: UInt32)] { lock.withLock { timeoutLog } }
}
