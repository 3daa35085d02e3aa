import MemoStore

/// The keys `serve` holds while the node is unlocked (or unprotected), dropped when it
/// locks.
struct HeldKeys {
  var identity: NodeIdentity?
  var trusted: TrustedDevices?
  /// The discovery key file as `identity` was loaded from it (`followDiscoveryKey`).
  var discoveryKey: String?
  /// The identity the listener's hellos give.
  var served: CurrentIdentity?
}

/// What `serve` has on the network: its listener and its advertisement's registrations
/// (one per interface).
struct ServedNetwork {
  var server: (any ChannelListener)?
  /// The port this process last listened on, taken again when it listens anew.
  var lastPort: UInt16?
  var registrations: [any StandingAdvertisement] = []
}

/// The rounds `serve` runs apart from its steps: one delivery round and one scheduled
/// sync at a time.
struct ServeRounds {
  var delivery: Task<Void, Never>?
  var sync: Task<Void, Never>?
}

/// How `serve` follows the store's change feed between its sleeps.
struct FeedFollow {
  /// The store live sync reads the feed position from, kept open between reads: opening it
  /// at every wake would cost a key unwrap each time, and the last connection's close makes
  /// SQLite checkpoint (a write, which would wake the daemon again). Dropped when the node
  /// locks or live sync stops.
  var reader: MemoStore?
  /// When the feed is read again after a wake by the store's folder (seconds after each
  /// look): SQLite publishes a commit after the write inotify told of, once the WAL is
  /// synced to disk, which on a busy disk takes milliseconds or more.
  var settleChecks: [Double] = []
  /// At most a few steps per 50 ms for a burst of folder writes (`FolderWakeThrottle`).
  var wakes = FolderWakeThrottle()
}

/// Where this machine is on the network, as the daemon's hellos say it: the addresses it
/// listens on (`NetworkInterfaces.listenAddresses`) and the network it is on.
struct LocalPlace: Equatable {
  var listenPort: UInt16?
  var listenAddresses: [String] = []
  var network: String?
}
