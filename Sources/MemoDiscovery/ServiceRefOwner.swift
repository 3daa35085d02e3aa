internal import CDNSSD
import Dispatch
import Foundation

/// Owns one DNSServiceRef: starts it, reads its socket with a dispatch source (each event
/// calls DNSServiceProcessResult, which runs the C callback on `queue`), and deallocates it
/// exactly once, after the source is cancelled. The C pointer never leaves this class.
///
/// `@unchecked Sendable`: `source` is set once in `start` before any event can arrive, and
/// cancellation is serialised by `lock`; everything else runs on the serial `queue`.
final class ServiceRefOwner: @unchecked Sendable {
  let queue: DispatchQueue
  private var source: (any DispatchSourceRead)?
  private let lock = NSLock()
  private var cancelled = false
  /// Signalled once the ref has been deallocated (the daemon has been told).
  private let released = DispatchSemaphore(value: 0)

  init(label: String) {
    queue = DispatchQueue(label: "memo-peer.dnssd.\(label)")
  }

  /// Calls the DNSService* function `create` (which fills in the ref), then reads results.
  /// `context` is kept alive until the ref is deallocated; `onFailure` hears a failure of
  /// DNSServiceProcessResult (the daemon went away).
  func start(
    context: AnyObject, onFailure: @escaping @Sendable (DNSServiceError) -> Void,
    _ create: (UnsafeMutablePointer<DNSServiceRef?>) -> DNSServiceErrorType
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
    let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    let refBox = RefBox(ref)
    source.setEventHandler { [weak self] in
      let result = DNSServiceProcessResult(refBox.ref)
      if result != DNSServiceErrorType(kDNSServiceErr_NoError) {
        onFailure(DNSServiceError(code: result))
        self?.cancel()
      }
    }
    // The context lives until the ref is gone: no callback can see a freed context.
    let released = self.released
    source.setCancelHandler { [context] in
      withExtendedLifetime(context) { DNSServiceRefDeallocate(refBox.ref) }
      released.signal()
    }
    lock.withLock { self.source = source }
    source.resume()
  }

  /// Stops the operation and frees the ref (asynchronously, on `queue`). Idempotent.
  func cancel() {
    let source: (any DispatchSourceRead)? = lock.withLock {
      guard !cancelled else { return nil }
      cancelled = true
      return self.source
    }
    source?.cancel()
  }

  /// Cancels and waits (up to `timeout`) until the ref is deallocated, so a process about
  /// to exit has withdrawn its advertisement first.
  func cancelAndWait(timeout: Double) {
    let started: Bool = lock.withLock { source != nil && !cancelled }
    cancel()
    if started { _ = released.wait(timeout: .now() + timeout) }
  }

  deinit { cancel() }
}

/// Carries the ref into the dispatch handlers. `@unchecked Sendable`: the ref is only used
/// on the owner's serial queue.
private final class RefBox: @unchecked Sendable {
  let ref: DNSServiceRef
  init(_ ref: DNSServiceRef) { self.ref = ref }
}

/// Runs a one-shot callback at most once, whichever of result, error or timeout comes first.
final class OnceBox<T: Sendable>: @unchecked Sendable {
  private let lock = NSLock()
  private var done = false
  private let body: @Sendable (Result<T, any Error>) -> Void

  init(_ body: @escaping @Sendable (Result<T, any Error>) -> Void) { self.body = body }

  func finish(_ result: Result<T, any Error>) {
    let first = lock.withLock {
      defer { done = true }
      return !done
    }
    if first { body(result) }
  }
}
