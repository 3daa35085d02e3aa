import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import Synchronization

/// Runs two real sessions against each other over an in-memory pair: the way MemoNodeTests,
/// MemoStoreTests and later suites drive production session code without sockets.
public enum InMemorySession {
  /// Runs `second` on a thread of its own and `first` on the calling thread, each with its
  /// end of a fresh pair (`first` is the first end, whose peer is `secondID`); each end is
  /// closed when its side returns, as the real code closes its connection. Waits for both.
  public static func run<First, Second: Sendable>(
    firstID: DeviceID = TestDevices.id(1), secondID: DeviceID = TestDevices.id(2),
    limits: ConnectionLimits = ConnectionLimits(), faults: LinkFaults = LinkFaults(),
    exporters: ([UInt8], [UInt8])? = nil,
    first: (InMemoryChannel) throws -> First,
    second: @escaping @Sendable (InMemoryChannel) throws -> Second
  ) -> (first: Result<First, any Error>, second: Result<Second, any Error>) {
    let (mine, theirs) = InMemoryChannel.pair(
      first: firstID, second: secondID, limits: limits, faults: faults, exporters: exporters)
    let other = Background.start("mp.test.session") {
      defer { theirs.close() }
      return try second(theirs)
    }
    let result = Result { () throws -> First in
      defer { mine.close() }
      return try first(mine)
    }
    return (result, other.wait())
  }
}

/// Work on a thread of its own whose result the caller collects later.
public final class Background<Value: Sendable>: Sendable {
  private let outcome = Mutex<Result<Value, any Error>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  private init() {}

  public static func start(_ name: String, _ body: @escaping @Sendable () throws -> Value) -> Background {
    let background = Background()
    let thread = Thread {
      let result = Result { try body() }
      background.outcome.withLock { $0 = result }
      background.done.signal()
    }
    thread.name = name
    thread.start()
    return background
  }

  /// Waits for the body to return.
  public func wait() -> Result<Value, any Error> {
    done.wait()
    done.signal()
    return outcome.withLock { $0! }
  }
}

/// Device IDs for tests that need a peer but no key.
public enum TestDevices {
  /// A device ID of 32 copies of `byte`.
  public static func id(_ byte: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: byte, count: 32))! }

  /// A device ID of its own for each name (SHA-256 of it).
  public static func id(named name: String) -> DeviceID {
    DeviceID(bytes: (try? SHA256.hash(Array(name.utf8))) ?? [UInt8](repeating: 0, count: 32))!
  }
}
