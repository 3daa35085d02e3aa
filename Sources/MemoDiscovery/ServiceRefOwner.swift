internal import CDNSSD
import Dispatch
import FoundationEssentials
import Synchronization

/// Owns one DNSServiceRef: starts it, reads its socket with a dispatch source (each event
/// calls DNSServiceProcessResult, which runs the C callback on `queue`), and deallocates it
/// exactly once, after the source is cancelled. The C pointer never leaves this class: it
/// travels inside `RefBox`, captured by the source's handlers only.
final class ServiceRefOwner: Sendable {
  let queue: DispatchQueue
  private struct State {
    var source: (any DispatchSourceRead)?
    var cancelled = false
  }
  private let state = Mutex(State())
  /// Told once the ref has been deallocated (the daemon has been told).
  private let released = ReleaseSignal()

  init(label: String) {
    queue = DispatchQueue(label: "memo-peer.dnssd.\(label)")
  }

  /// Calls the DNSService* function `create` (which fills in the ref), then reads results.
  /// `context` is kept alive until the ref is deallocated; `onFailure` hears a failure of
  /// DNSServiceProcessResult (the daemon went away).
  func start(
    context: any AnyObject & Sendable, onFailure: @escaping @Sendable (DNSServiceError) -> Void,
    _ create: @Sendable (UnsafeMutablePointer<DNSServiceRef?>) -> DNSServiceErrorType
  ) throws(DNSServiceError) {
    var created: DNSServiceRef?
    let code = create(&created)
    guard code == DNSServiceErrorType(kDNSServiceErr_NoError), let ref = created else {
      if let created { DNSServiceRefDeallocate(created) }
      throw DNSServiceError(code: code)
    }
    let fd = DNSServiceRefSockFD(ref)
    guard fd >= 0 else {
      DNSServiceRefDeallocate(ref)
      throw DNSServiceError(code: DNSServiceErrorType(kDNSServiceErr_Unknown))
    }
    let refBox = RefBox(ref)
    let (queue, released) = (self.queue, self.released)
    // Made under the lock, so a `cancel` cannot miss it.
    state.withLock { state in
      let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self] in
        let result = DNSServiceProcessResult(refBox.ref)
        if result != DNSServiceErrorType(kDNSServiceErr_NoError) {
          onFailure(DNSServiceError(code: result))
          self?.cancel()
        }
      }
      // The context lives until the ref is gone: no callback can see a freed context.
      source.setCancelHandler { [context] in
        withExtendedLifetime(context) { DNSServiceRefDeallocate(refBox.ref) }
        released.signal()
      }
      state.source = source
      source.resume()
    }
  }

  /// Stops the operation and frees the ref (asynchronously, on `queue`). Idempotent.
  func cancel() {
    // Under the lock (cancelling a source only schedules its cancel handler on `queue`).
    state.withLock { state in
      guard !state.cancelled else { return }
      state.cancelled = true
      state.source?.cancel()
    }
  }

  /// Cancels and returns once the ref is deallocated (or after `timeout`), so a process
  /// about to exit has withdrawn its advertisement first. Suspends; blocks no thread.
  func cancelAndWait(timeout: Double) async {
    let started = state.withLock { $0.source != nil && !$0.cancelled }
    cancel()
    guard started else { return }
    await released.wait(timeout: timeout, on: queue)
  }

  deinit { cancel() }
}

/// Carries the ref into the dispatch handlers. `@unchecked Sendable`: it holds a C pointer
/// that is only used on the owner's serial queue.
private final class RefBox: @unchecked Sendable {
  let ref: DNSServiceRef
  init(_ ref: DNSServiceRef) { self.ref = ref }
}

/// A one-time signal that async waiters can await with a timeout.
private final class ReleaseSignal: Sendable {
  private struct State {
    var signalled = false
    var waiters: [OnceBox<Void>] = []
  }
  private let state = Mutex(State())

  func signal() {
    let waiters = state.withLock { state in
      state.signalled = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.finish(.success(())) }
  }

  func wait(timeout: Double, on queue: DispatchQueue) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let once = OnceBox<Void> { _ in continuation.resume() }
      let already = state.withLock { state in
        if !state.signalled { state.waiters.append(once) }
        return state.signalled
      }
      if already { return once.finish(.success(())) }
      queue.asyncAfter(deadline: .now() + timeout) { once.finish(.success(())) }
    }
  }
}

/// Runs a one-shot callback at most once, whichever of result, error or timeout comes first.
final class OnceBox<T: Sendable>: Sendable {
  private let done = Mutex(false)
  private let body: @Sendable (Result<T, any Error>) -> Void

  init(_ body: @escaping @Sendable (Result<T, any Error>) -> Void) { self.body = body }

  /// Whether the callback has run.
  var isFinished: Bool { done.withLock { $0 } }

  func finish(_ result: Result<T, any Error>) {
    let first = done.withLock { done in
      defer { done = true }
      return !done
    }
    if first { body(result) }
  }
}
