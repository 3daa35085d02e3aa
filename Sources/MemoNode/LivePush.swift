import MemoCore

/// Which trusted devices `serve`'s live push owes the store's latest changes, and when each
/// may be tried again: the rules of live push, apart from its I/O (tested without a network).
///
/// The store's change feed moves with every revision stored here, made here or received
/// (docs/PROTOCOL.md, "Live push"): when it moved, every trusted device is owed a sync. A
/// sync that received something moves the feed again, so what came from one peer goes on
/// to the others, and the peer it came from gets one more session that finds nothing to
/// send. A peer that could not be reached is owed until a sync with it succeeds, tried
/// again after a jittered backoff (1 s doubling to 30 s), never in a tight loop. At most 4
/// sessions run at once, as for `sync`.
struct LivePush {
  /// The feed position last seen; nil before the first look, when every peer is owed what
  /// changed while the daemon was not running.
  private(set) var feedSeen: UInt64?
  private var owed: Set<DeviceID> = []
  private var failures: [DeviceID: Int] = [:]
  private var notBefore: [DeviceID: Timestamp] = [:]
  let backoff = DeliveryBackoff(base: 1, cap: 30)

  /// The feed is at `position`: when it moved, each of `peers` is owed a sync.
  mutating func feed(at position: UInt64, peers: [DeviceID]) {
    guard position != feedSeen else { return }
    feedSeen = position
    owed.formUnion(peers)
  }

  /// Whether some peer is owed a sync and may be tried at `now`, with a place free.
  func hasDue(now: Timestamp, running: Set<DeviceID>, limit: Int = PeerSync.concurrency) -> Bool {
    running.count < limit && owed.contains { !running.contains($0) && now >= notBefore[$0, default: 0] }
  }

  /// The peers to sync with now, at most `limit` less those running; each is owed nothing
  /// more until the feed moves again or its sync fails. Sorted, so rounds go in one order;
  /// the rest wait for a place.
  mutating func takeDue(now: Timestamp, running: Set<DeviceID>, limit: Int = PeerSync.concurrency) -> [DeviceID] {
    let places = max(limit - running.count, 0)
    let due = owed.filter { !running.contains($0) && now >= notBefore[$0, default: 0] }.sorted().prefix(places)
    owed.subtract(due)
    return Array(due)
  }

  /// A sync with `peer` ended: on failure it is owed again, after a pause that grows with
  /// each failure in a row (`random` in [0, 1) jitters it).
  mutating func finished(_ peer: DeviceID, succeeded: Bool, now: Timestamp, random: Double) {
    if succeeded {
      failures[peer] = nil
      notBefore[peer] = nil
      return
    }
    let count = failures[peer, default: 0] + 1
    failures[peer] = count
    owed.insert(peer)
    notBefore[peer] = now + Timestamp(backoff.delay(afterFailures: count, random: random) * 1000)
  }

  /// Forgets devices no longer trusted.
  mutating func keep(only peers: Set<DeviceID>) {
    owed.formIntersection(peers)
    failures = failures.filter { peers.contains($0.key) }
    notBefore = notBefore.filter { peers.contains($0.key) }
  }

  /// Forgets everything (the node locked): after the unlock every peer is owed again.
  mutating func reset() { self = LivePush() }
}
