import MemoCrypto
import MemoVault
import Synchronization

/// An in-memory `SecretKeyring` that follows the contract of `SecretKeyring`, records the
/// timeouts set (each one is a restart of the idle timeout of protection `complete`), and
/// can "reboot" (forget everything) or let a timeout run out, deterministically.
public final class FakeKeyring: SecretKeyring {
  private struct State {
    var secrets: [String: [UInt8]] = [:]
    var timeoutLog: [(name: String, seconds: UInt32)] = []
  }
  private let state = Mutex(State())

  public init() {}

  public func store(_ name: String, secret: SecureBytes) throws {
    let bytes = secret.withUnsafeBytes { Array($0) }
    state.withLock { $0.secrets[name] = bytes }
  }

  public func read(_ name: String, maxCount: Int) throws -> SecureBytes? {
    state.withLock { $0.secrets[name].map { SecureBytes(copying: $0) } }
  }

  public func contains(_ name: String) -> Bool { state.withLock { $0.secrets[name] != nil } }

  public func setTimeout(_ name: String, seconds: UInt32) throws {
    state.withLock {
      if $0.secrets[name] != nil { $0.timeoutLog.append((name, seconds)) }
    }
  }

  public func remove(_ name: String) throws { _ = state.withLock { $0.secrets.removeValue(forKey: name) } }

  /// A restart: the kernel forgets every key.
  public func reboot() { state.withLock { $0.secrets.removeAll() } }

  /// An idle timeout running out.
  public func expire(where matches: (String) -> Bool) {
    state.withLock { state in
      for name in state.secrets.keys where matches(name) { state.secrets.removeValue(forKey: name) }
    }
  }

  public var names: [String] { state.withLock { Array($0.secrets.keys).sorted() } }
  public var timeouts: [(name: String, seconds: UInt32)] { state.withLock { $0.timeoutLog } }
}
