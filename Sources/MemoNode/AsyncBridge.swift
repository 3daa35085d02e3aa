import Foundation

/// Runs async work from the synchronous command line and waits for it. The CLI's main
/// thread is not part of Swift's cooperative pool, so blocking it here is safe.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
  let box = ResultBox<T>()
  let done = DispatchSemaphore(value: 0)
  Task {
    do { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
    done.signal()
  }
  done.wait()
  return try box.get()
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
  // Written once by the task before it signals, read once after the wait.
  private var result: Result<T, any Error>?
  private let lock = NSLock()
  func set(_ value: Result<T, any Error>) { lock.withLock { result = value } }
  func get() throws -> T { try lock.withLock { result! }.get() }
}

/// A flag set from a signal handler queue and read by a loop.
public final class StopFlag: @unchecked Sendable {
  private let lock = NSLock()
  private var stopped = false
  public init() {}
  public var isSet: Bool { lock.withLock { stopped } }
  public func set() { lock.withLock { stopped = true } }
}
