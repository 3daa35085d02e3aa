import Foundation

/// A request to reload, set from a signal handler (SIGHUP, systemctl reload) and taken once
/// by the daemon's loop.
public final class ReloadRequest: @unchecked Sendable {
  // Unchecked: `pending` is only touched under `lock`.
  private let lock = NSLock()
  private var pending = false
  public init() {}
  public func set() { lock.withLock { pending = true } }
  /// Whether a reload was asked for since the last call; clears the request.
  public func take() -> Bool {
    lock.withLock {
      defer { pending = false }
      return pending
    }
  }
}
