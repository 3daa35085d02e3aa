import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem
import MemoVault
import Synchronization

/// The trusted channels this process holds open, so that locking the node can close them
/// all: a session holds the device's identity (and, for a sync or a delivery, the device key
/// in an open store), and "locked" must mean that nothing of this node proves who it is or
/// reads memos any more. Holds the channels weakly: a session that ended is forgotten.
public final class LiveSessions: Sendable {
  private struct Entry {
    weak var connection: (any FrameChannel)?
  }

  private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

  public init() {}

  /// Registers a channel that is ready (and prunes the ones that are gone).
  public func add(_ connection: any FrameChannel) {
    entries.withLock { entries in
      entries = entries.filter { $0.value.connection != nil }
      entries[ObjectIdentifier(connection)] = Entry(connection: connection)
    }
  }

  /// Closes every registered channel at once (`FrameChannel.interrupt`): the thread driving
  /// each one fails its next wait with `interrupted`.
  public func closeAll() {
    let open = entries.withLock { entries -> [any FrameChannel] in
      defer { entries = [:] }
      return entries.values.compactMap(\.connection)
    }
    for connection in open { connection.interrupt() }
  }

  /// Closes the registered channels to the devices `matches` picks (devices just removed
  /// from the trust store), as `closeAll` does; the others go on.
  public func close(where matches: (DeviceID) -> Bool) {
    let doomed = entries.withLock { entries -> [any FrameChannel] in
      let picked = entries.filter { $0.value.connection?.peer.map(matches) ?? false }
      for key in picked.keys { entries[key] = nil }
      return picked.values.compactMap(\.connection)
    }
    for connection in doomed { connection.interrupt() }
  }

  public var count: Int { entries.withLock { $0.values.filter { $0.connection != nil }.count } }
}

/// Watches the node's lock state while a command holds trusted sessions (`sync`, `ping`,
/// `send --wait`): when `memo-peer lock` runs (or the idle timeout of `complete` passes), it
/// closes them within `interval`. A node without a passphrase has nothing to watch.
public final class LockWatch: Sendable {
  /// How often the keyring is asked: well within the 1 s in which `lock` closes sessions.
  public static let interval = 0.2

  public let sessions = LiveSessions()
  private let state = Mutex((stopped: false, fired: false))

  /// Starts watching `keys` on a thread of its own; `stop` ends it.
  public init(keys: DeviceKeys) {
    guard (try? keys.status().protection.isProtected) == true else { return }
    let watch: @Sendable () -> Void = { [self] in
      while !state.withLock({ $0.stopped }) {
        if keys.isLocked {
          state.withLock { $0.fired = true }
          sessions.closeAll()
        }
        SystemThread.sleep(seconds: Self.interval)
      }
    }
    // Without a thread to watch with, the sessions are closed at once: a lock must never
    // go unnoticed.
    if (try? SystemThread.start(name: "mp.lock-watch", watch)) == nil {
      state.withLock { $0.fired = true }
      sessions.closeAll()
    }
  }

  /// Whether the node was locked while watched (so a broken session means "locked").
  public var fired: Bool { state.withLock { $0.fired } }

  public func stop() { state.withLock { $0.stopped = true } }

  /// The error for a session this watch closed.
  public static func lockedDuring(_ what: String) -> MemoPeerError {
    MemoPeerError(
      .locked, "this node was locked during \(what): its sessions were closed",
      remedy: .unlock(device: nil))
  }
}
