import Synchronization

/// What a wake of the waiting status calls knows of the node's change mark.
enum MarkLook: Sendable, Equatable {
  /// Nothing was read: only the longest waits count.
  case deadlines
  /// The mark now: the calls that saw another one go.
  case mark(String)
  /// A lock or an unlock: every call goes, to be answered.
  case everyone
}

/// The page's status calls that wait for a change (`GET /api/status?wait=MARK`, docs/WEB.md),
/// held without a thread: each waits for the store's change mark to move from the one the
/// page last saw, for the node's lock to change, or for `longestWait` to pass, whichever is
/// first; then it is let go and answered. Long polling instead of the page asking twice a
/// second: a change reaches the page as soon as the server hears of it, and an idle page
/// costs the server nothing between its wakes.
///
/// Generic over what a waiting request is to its server (`Handle`: libmicrohttpd's
/// connection, inside `MicroHTTPDaemon`), so the rules here are tested without a socket.
/// `suspend` and `wake` call their closures under the registry's lock, so a request is
/// never let go before it has been held, and never twice.
final class ChangeWaiters<Handle: Sendable>: Sendable {
  struct Waiter: Sendable {
    let handle: Handle
    let mark: String
    let deadline: Double
  }

  private struct State: Sendable {
    var waiters: [UInt64: Waiter] = [:]
    var next: UInt64 = 0
    var closed = false
  }

  /// Seconds a request waits at most (the page asks again at once): 25 by default, below
  /// libmicrohttpd's idle timeout and the gate's deadline for a request (30 and 60 s), and
  /// short enough that a connection the browser dropped meanwhile is let go soon.
  let longestWait: Double
  private let state = Mutex(State())

  init(longestWait: Double = 25) {
    self.longestWait = longestWait
  }

  /// How many requests wait now.
  var count: Int { state.withLock { $0.waiters.count } }

  /// Holds `handle` until the mark moves from `mark`: `hold` (which suspends it) runs under
  /// the lock. False, with nothing held, once the registry is closed: the request is
  /// answered at once.
  func suspend(_ handle: Handle, mark: String, now: Double, hold: (Handle) -> Void) -> Bool {
    state.withLock { state in
      guard !state.closed else { return false }
      state.next += 1
      state.waiters[state.next] = Waiter(handle: handle, mark: mark, deadline: now + longestWait)
      hold(handle)
      return true
    }
  }

  /// Lets go, through `release`, every request whose wait is over (`due`). Returns how many
  /// were let go.
  @discardableResult
  func wake(now: Double, look: MarkLook, release: (Handle) -> Void) -> Int {
    state.withLock { state in
      let due = Self.due(state.waiters, now: now, look: look)
      for id in due {
        if let waiter = state.waiters.removeValue(forKey: id) { release(waiter.handle) }
      }
      return due.count
    }
  }

  /// Lets every request go and holds none from now on (the server stops).
  func close(release: (Handle) -> Void) {
    state.withLock { state in
      state.closed = true
      for waiter in state.waiters.values { release(waiter.handle) }
      state.waiters = [:]
    }
  }

  /// The waiters whose wait is over, in the order they came: those past their deadline,
  /// and as `look` says, those that saw another mark than the current one, or all.
  static func due(_ waiters: [UInt64: Waiter], now: Double, look: MarkLook) -> [UInt64] {
    waiters.filter { _, waiter in
      guard now < waiter.deadline else { return true }
      switch look {
      case .deadlines: return false
      case .mark(let current): return current != waiter.mark
      case .everyone: return true
      }
    }.keys.sorted()
  }
}
