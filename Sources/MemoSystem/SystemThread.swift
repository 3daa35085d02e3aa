import CSystemShims

#if canImport(Glibc)
  import Glibc
#endif

/// Threads of their own, for work that blocks (an accept loop, a connection's reads, a
/// watch that sleeps): what Foundation's `Thread` did, over pthreads, so the binary needs
/// no full Foundation. Every wait on the network runs on one of these, never on Swift's
/// cooperative pool, whose few threads a blocking read would take away from everything else.
public enum SystemThread {
  /// Starts `body` on a new detached thread named `name` (the kernel keeps 15 bytes of it,
  /// which `top -H` and crash reports show). Throws when the system has no thread to give
  /// (EAGAIN: a process or user limit), so the caller can refuse the work it was for.
  public static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
    let job = Unmanaged.passRetained(Job(name: name, body: body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    do throws(SystemError) {
      try System.callReturningErrno("pthread_create") {
        pthread_create(
          &thread, &attributes,
          { pointer in
            guard let pointer else { return nil }
            let job = Unmanaged<Job>.fromOpaque(pointer).takeRetainedValue()
            memo_name_this_thread(job.name)
            job.body()
            return nil
          }, job)
      }
    } catch {
      Unmanaged<Job>.fromOpaque(job).release()
      throw error
    }
  }

  /// Sleeps this thread for `seconds` (resumed after a signal for the rest of the time).
  public static func sleep(seconds: Double) {
    guard seconds > 0 else { return }
    let whole = seconds.rounded(.down)
    var request = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
  }

  private final class Job {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
      self.name = name
      self.body = body
    }
  }
}
