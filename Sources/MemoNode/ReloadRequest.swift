import FoundationEssentials
import Synchronization

/// A request to reload, set from a signal handler (SIGHUP, systemctl reload) and taken once
/// by the daemon's loop.
public final class ReloadRequest: Sendable {
  private let pending = Mutex(false)
  public init() {}
  public func set() { pending.withLock { $0 = true } }
  /// Whether a reload was asked for since the last call; clears the request.
  public func take() -> Bool {
    pending.withLock { pending in
      defer { pending = false }
      return pending
    }
  }
}
