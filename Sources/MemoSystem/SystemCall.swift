#if canImport(Glibc)
  import Glibc
#endif

/// One way to call the C library's system calls: `System.call("open") { open(path, flags) }`
/// runs the call, retries it while it fails with EINTR, and throws a `SystemError` naming the
/// call and its errno when it fails otherwise. The errno is read right after the call, before
/// anything else can overwrite it, which is why system calls go through here rather than
/// reading `errno` themselves.
///
/// The shape is swift-system's (`Errno`, retry on interrupt), reduced to what memo-peer needs.
/// Callers turn a `SystemError` into their own error with their own message (PrivateFiles'
/// `ioError`, the keyring's, the transport's), so what a person sees stays theirs to word;
/// the call's name and errno go to the diagnostics. A `SystemError` never holds anything but
/// the call's name and a number: never a path, never memo text.
public enum System {
  /// Runs a call that returns -1 and sets errno on failure (open, read, write, poll, …),
  /// retrying it on EINTR unless `retryingOnInterrupt` is false (connect(2), whose EINTR
  /// means the connection goes on in the background). Returns what the call returned.
  @inlinable @discardableResult
  public static func call<Result: FixedWidthInteger & SignedInteger>(
    _ name: String, retryingOnInterrupt: Bool = true, _ body: () -> Result
  ) throws(SystemError) -> Result {
    while true {
      let result = body()
      guard result == -1 else { return result }
      let failure = Errno.current
      if retryingOnInterrupt && failure == .interrupted { continue }
      throw SystemError(name, failure)
    }
  }

  /// Runs a call that returns a pointer, or nil with errno set on failure (mkdtemp, …),
  /// retrying it on EINTR. Returns the pointer.
  @inlinable @discardableResult
  public static func call<Pointer>(_ name: String, retryingOnInterrupt: Bool = true, _ body: () -> Pointer?)
    throws(SystemError) -> Pointer
  {
    while true {
      if let result = body() { return result }
      let failure = Errno.current
      if retryingOnInterrupt && failure == .interrupted { continue }
      throw SystemError(name, failure)
    }
  }

  /// Runs a call that returns its error number instead of setting errno (posix_spawn and
  /// the pthread functions): 0 is success. Never retried: these calls do not fail with EINTR.
  @inlinable
  public static func callReturningErrno(_ name: String, _ body: () -> Int32) throws(SystemError) {
    let code = body()
    guard code == 0 else { throw SystemError(name, Errno(code)) }
  }
}

/// An errno value. Its `description` is the C library's text for it (strerror).
public struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32

  public init(rawValue: Int32) { self.rawValue = rawValue }
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  /// The calling thread's errno, now: `System` reads it right after a failed call; others
  /// only for an errno a library leaves behind (OpenSSL's SSL_ERROR_SYSCALL).
  @inlinable
  public static var current: Errno { Errno(errno) }

  public var description: String { String(cString: strerror(rawValue)) }

  /// EINTR: a signal arrived before the call could finish; `System` retries.
  public static let interrupted = Errno(EINTR)
  /// EAGAIN (EWOULDBLOCK): a non-blocking descriptor has nothing to give yet.
  public static let wouldBlock = Errno(EAGAIN)
  /// EINPROGRESS: a non-blocking connect(2) goes on in the background.
  public static let inProgress = Errno(EINPROGRESS)
  /// EEXIST: the file or directory is already there.
  public static let exists = Errno(EEXIST)

  /// EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the system is out of descriptors or
  /// memory for now; retrying at once cannot succeed.
  public var isResourceShortage: Bool { [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(rawValue) }
}

/// A failed system call: which call, and its errno. `description` is `call: strerror text`;
/// `diagnostics` is the form memo-peer's errors carry for `--debug` (`open: errno 2`).
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The C function's name, with the operation for multiplexed calls (`keyctl(READ)`).
  public let call: String
  public let errno: Errno

  public init(_ call: String, _ errno: Errno) {
    self.call = call
    self.errno = errno
  }

  /// The errno's number, for comparisons with the C constants (`error.code == ENOSPC`).
  public var code: Int32 { errno.rawValue }

  public var description: String { "\(call): \(errno)" }

  /// The call and the number, for the diagnostics of an error shown to a person.
  public var diagnostics: String { "\(call): errno \(errno.rawValue)" }
}
