import MemoCore
import MemoStore

/// Which trusted devices `serve` keeps a live link with, and when it may dial one again:
/// the rules of live sync, apart from its I/O (tested without a network).
///
/// Every trusted device gets a link, at most `limit` at once, dialled at most
/// `dialLimit` at a time (a device that is away costs its dial timeout, not everybody's).
/// A dial that fails, or a link that ends before one sync on it succeeded (a peer that
/// refuses what we send), is tried again after a jittered pause that grows with each
/// failure in a row (1 s doubling to 30 s): never a reconnect storm. A link that synced and
/// then broke is dialled again after the first pause (0.5–1 s), so a peer back from sleep
/// is in sync within 2 s of answering. A
/// device that connects to us shows it is reachable: its pause is forgotten. The store's
/// marks (its change feed, and what it may read: `SyncMarks`, `LiveChange`) say when the
/// linked devices are owed a sync (docs/PROTOCOL.md, "Live sync").
struct LiveLinkPlan {
  /// At most this many links, up or being dialled (docs/PROTOCOL.md, "Live sync").
  static let limit = 16
  /// At most this many dials at once.
  static let dialLimit = 4

  /// The store's marks last seen; nil before the first look.
  private(set) var marksSeen: SyncMarks?
  private(set) var dialling: Set<DeviceID> = []
  private(set) var up: Set<DeviceID> = []
  private var failures: [DeviceID: Int] = [:]
  private var notBefore: [DeviceID: Timestamp] = [:]
  /// Network changes (`networkEvent`): the first of the burst, when to check, the last check.
  private var networkBurstStart: Timestamp?
  private var networkCheckAt: Timestamp?
  private var lastNetworkCheck: Timestamp?
  let backoff = DeliveryBackoff(base: 1, cap: 30)

  /// The store's marks are `marks`: what their change since the last look asks of the
  /// links (the first look owes a sync: what changed while the daemon was not running).
  mutating func look(at marks: SyncMarks) -> LiveChange {
    let change = LiveChange.between(marksSeen, marks)
    marksSeen = marks
    return change
  }

  /// The devices of `trusted` to dial at `now`, each marked as being dialled: those without
  /// a link whose pause has passed, in order, within both limits.
  mutating func toDial(trusted: Set<DeviceID>, now: Timestamp) -> [DeviceID] {
    let places = min(Self.limit - up.count - dialling.count, Self.dialLimit - dialling.count)
    guard places > 0 else { return [] }
    let due = trusted.filter { !up.contains($0) && !dialling.contains($0) && now >= notBefore[$0, default: 0] }
      .sorted().prefix(places)
    dialling.formUnion(due)
    return Array(due)
  }

  /// The dial of `device` ended with a link up.
  mutating func linked(_ device: DeviceID) {
    dialling.remove(device)
    up.insert(device)
  }

  /// The dial of `device` failed, or its link ended (`synced`: after a sync on it had
  /// succeeded): it is dialled again after a pause (`random` in [0, 1) jitters it).
  mutating func ended(_ device: DeviceID, synced: Bool, now: Timestamp, random: Double) {
    dialling.remove(device)
    up.remove(device)
    let count = synced ? 1 : failures[device, default: 0] + 1
    failures[device] = count
    notBefore[device] = now + Timestamp(backoff.delay(afterFailures: count, random: random) * 1000)
  }

  /// `device` connected to us: it is reachable now, so it waits for no pause.
  mutating func heardFrom(_ device: DeviceID) {
    failures[device] = nil
    notBefore[device] = nil
  }

  /// The kernel told of a change of this machine's links or addresses. Changes come in
  /// bursts (down, then up, then an address), and a busy machine (containers, VPNs) may
  /// report them all the time: the check they call for (`networkCheckDue`) comes once the
  /// burst has been quiet for 1 s, at most 3 s after its first change, and at most once
  /// every 10 s, so no stream of changes becomes a stream of dials.
  mutating func networkEvent(now: Timestamp) {
    let first = networkBurstStart ?? now
    networkBurstStart = first
    networkCheckAt = max(min(now + 1000, first + 3000), lastNetworkCheck.map { $0 + 10_000 } ?? 0)
  }

  /// Whether the check of a network change is due at `now`; when it is, every device
  /// without a link is dialled now, whatever its pause (the failures behind the pauses may
  /// have been this side's), and it is marked done.
  mutating func networkCheckDue(now: Timestamp) -> Bool {
    guard let at = networkCheckAt, now >= at else { return false }
    (networkCheckAt, networkBurstStart, lastNetworkCheck) = (nil, nil, now)
    failures = [:]
    notBefore = [:]
    return true
  }

  /// Forgets devices no longer trusted; says which of them had a link (to be closed).
  mutating func keep(only trusted: Set<DeviceID>) -> Set<DeviceID> {
    let gone = up.union(dialling).subtracting(trusted)
    up.subtract(gone)
    dialling.subtract(gone)
    failures = failures.filter { trusted.contains($0.key) }
    notBefore = notBefore.filter { trusted.contains($0.key) }
    return gone
  }

  /// Forgets every link and pause (the node locked, a consent was revoked): every link is
  /// closed, and afterwards every device is dialled again; a new link's first sync sends
  /// what changed meanwhile, so the marks are kept.
  mutating func reset() {
    let last = lastNetworkCheck
    self = LiveLinkPlan(marksSeen: marksSeen)
    lastNetworkCheck = last
  }

  init(marksSeen: SyncMarks? = nil) { self.marksSeen = marksSeen }
}
