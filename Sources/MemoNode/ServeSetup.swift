import MemoCore
import MemoStore
import MemoSystem
import MemoVault

/// What `serve` is made of and never changes while it runs: where the node is, what it
/// may do, its collaborators (clock, channels, advertiser, notifier) and the objects it
/// shares with the threads that serve its channels. The actor keeps one of these and its
/// state in values (`ServeEngine`); the accessors below keep the code that uses them short.
struct ServeSetup: Sendable {
  let paths: NodePaths
  let gate: ConsentGate
  /// Loads the identity (and discovery key); fails with `locked` while the node is locked.
  let loadIdentity: @Sendable () throws -> NodeIdentity
  /// The connections this daemon's deliveries, scheduled syncs and live links hold, closed
  /// on lock.
  let sessions = LiveSessions()
  /// Trusted devices that completed a handshake, for `status` and the widget.
  let contacts = TrustedContacts()
  /// When each device was last heard from, on any channel, and whose links to us are open:
  /// the live links' keepalives.
  let activity = PeerActivity()
  let channels: any ChannelFactory
  let advertiser: any ServiceAdvertiser
  /// The daemon's store: never a person's use.
  let store: StoreAccess
  /// The device keys: the store and the trust store are opened with them.
  let keys: DeviceKeys
  let receiptDelay: Double
  /// The TCP port asked for (0: any free port).
  let requestedPort: UInt16
  /// The port the last run listened on (`serve.json`), tried first when none was asked
  /// for: the devices that remember where they reached this one find it there again after
  /// a restart, without DNS-SD.
  let previousPort: UInt16?
  /// Interfaces to advertise on; empty means all.
  let interfaces: [NetworkInterface]
  let logger: Logger
  /// Human-readable state changes (the CLI prints them on stderr).
  let report: @Sendable (String) -> Void
  let clock: @Sendable () -> Timestamp
  /// Told about every state change (systemd's READY, STATUS, RELOADING, STOPPING, WATCHDOG).
  let notifier: any ServiceNotifier
  /// Set by SIGHUP (`systemctl reload`): re-read the trust store now.
  let reloadRequest: ReloadRequest?
  /// What the daemon sleeps on between steps: writes in the store's, state and key folders
  /// (another process saved a memo, granted a consent, edited the trust store, locked the
  /// node) and pokes from the daemon's own tasks when they end. nil when inotify is refused:
  /// the daemon then wakes every `tick` and reads the store's feed each time.
  let wakeup: FolderChangeWatch?
}

extension ServeEngine {
  nonisolated var paths: NodePaths { setup.paths }
  nonisolated var gate: ConsentGate { setup.gate }
  nonisolated var sessions: LiveSessions { setup.sessions }
  nonisolated var contacts: TrustedContacts { setup.contacts }
  nonisolated var activity: PeerActivity { setup.activity }
  nonisolated var channels: any ChannelFactory { setup.channels }
  nonisolated var store: StoreAccess { setup.store }
  nonisolated var logger: Logger { setup.logger }
  nonisolated var report: @Sendable (String) -> Void { setup.report }
  nonisolated var clock: @Sendable () -> Timestamp { setup.clock }
  nonisolated var notifier: any ServiceNotifier { setup.notifier }
  nonisolated var wakeup: FolderChangeWatch? { setup.wakeup }
}
