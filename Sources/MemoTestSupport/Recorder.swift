import Foundation
import Synchronization

/// Values recorded from any thread (server events, progress steps), read by the test.
public final class Recorder<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])

  public init() {}

  public func append(_ value: Value) { values.withLock { $0.append(value) } }
  public var all: [Value] { values.withLock { $0 } }

  /// Polls until `condition` holds over the recorded values, at most `seconds` (a bound on
  /// a failing test's wait, never a timing assertion).
  public func wait(seconds: Double = 10, until condition: ([Value]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition(all) { return true }
      Thread.sleep(forTimeInterval: 0.02)
    }
    return condition(all)
  }
}
