import Dispatch
import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem
import Synchronization

/// Runs async work from the synchronous command line and waits for it. The CLI's main
/// thread is not part of Swift's cooperative pool, so blocking it here is safe.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
  let result = Mutex<Result<T, any Error>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task {
    let outcome: Result<T, any Error>
    do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
    result.withLock { $0 = outcome }
    done.signal()
  }
  done.wait()
  return try result.withLock { $0! }.get()
}

/// Blocking work, off Swift's cooperative pool.
///
/// On Linux the pool has one thread per core (two on the build machines): a task that
/// blocks in poll(2) — a TLS handshake with a peer that never answers, a sync waiting for
/// the next frame — holds one of them, and two such peers would stall every task of the
/// process. Everything that waits on the network therefore runs here, on a thread of its
/// own, and the caller's task is suspended (not blocked) until it is done. The body must
/// bound its own waits (every channel call has a deadline), since a thread cannot be
/// cancelled: cancelling the caller's task does not end the body early.
public enum BlockingIO {
  /// `name` names the thread (at most 15 bytes, Linux's limit: `mp.sync` shows in `top -H`).
  public static func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      do throws(SystemError) {
        try SystemThread.start(name: name) { continuation.resume(with: Result { try body() }) }
      } catch {
        continuation.resume(throwing: TransportError(.library, "cannot start a thread: \(error.description)"))
      }
    }
  }
}

/// Runs `body` until it returns or `deadline` passes, whichever is first: the one timeout
/// helper of the engine and the CLI. Nil when the deadline came first; the body is then
/// cancelled, and awaited (bodies that wait on the network bound their waits by the same
/// deadline).
public func untilDeadline<T: Sendable>(_ deadline: Deadline, _ body: @escaping @Sendable () async throws -> T)
  async throws -> T?
{
  try await withThrowingTaskGroup(of: DeadlineOutcome<T>.self) { group in
    group.addTask { .finished(try await body()) }
    group.addTask {
      try await deadline.waitUntilPassed()
      return .timedOut
    }
    let first = try await group.next()
    group.cancelAll()
    if case .finished(let value) = first { return value }
    return nil
  }
}

/// Which came first in `untilDeadline`.
private enum DeadlineOutcome<T: Sendable>: Sendable {
  case finished(T)
  case timedOut
}

/// A flag set from a signal handler queue and read by a loop.
public final class StopFlag: Sendable {
  private let stopped = Mutex(false)
  private let wakers = Mutex<[@Sendable () -> Void]>([])
  public init() {}
  public var isSet: Bool { stopped.withLock { $0 } }
  public func set() {
    stopped.withLock { $0 = true }
    for wake in wakers.withLock({ $0 }) { wake() }
  }

  /// Calls `wake` when the flag is set: a loop that sleeps until something happens (`serve`)
  /// stops at once rather than at its next wake.
  public func whenSet(_ wake: @escaping @Sendable () -> Void) { wakers.withLock { $0.append(wake) } }
}
