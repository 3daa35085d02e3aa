import FoundationEssentials
import MemoCore
import MemoPresentation
import MemoSystem
import MemoVault
import Synchronization

/// The trusted devices the daemon has had a handshake with, and when: written into
/// `state/serve.json` so the widget can count peers online without touching the network.
/// Connection threads record; the daemon's loop takes the changes.
public final class TrustedContacts: Sendable {
  private struct State {
    var pending: Set<DeviceID> = []
    var seen: [DeviceID: Timestamp] = [:]
  }
  private let state = Mutex(State())

  public init() {}

  func record(_ peer: DeviceID) { state.withLock { _ = $0.pending.insert(peer) } }

  /// Every contact with its latest time, and the devices recorded since the last call, if
  /// any was.
  func takeChanges(clock: () -> Timestamp) -> (all: [DeviceID: Timestamp], fresh: Set<DeviceID>)? {
    state.withLock { state in
      guard !state.pending.isEmpty else { return nil }
      let now = clock()
      for peer in state.pending { state.seen[peer] = now }
      defer { state.pending = [] }
      return (state.seen, state.pending)
    }
  }
}

/// "Peers online" for the widget: trusted devices (still in the trust store) that had a
/// trusted connection with this node's running daemon within the window, or have a live
/// link with it now (also counted as "live"). Reads two local
/// files; never the network. A device that never connects to us counts as offline.
public struct RecentTrustedContacts: TrustedPeerPresence {
  public static let window: Timestamp = 5 * 60 * 1000
  let count: Int
  let live: Int

  public init(paths: NodePaths, now: Timestamp) {
    guard let status = ServeStatus.read(paths), status.isRunning,
      let trusted = try? Set(TrustStore(paths: paths).load().deviceIDs)
    else {
      (count, live) = (0, 0)
      return
    }
    let linked = Set(status.livePeers ?? []).intersection(trusted)
    let recent = (status.trustedContacts ?? [:]).filter { trusted.contains($0.key) && now - $0.value <= Self.window }
    count = linked.union(recent.keys).count
    live = linked.count
  }

  public func onlineCount() -> Int { count }
  public func liveCount() -> Int { live }
}
