import FoundationEssentials
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoVault

/// One use of this node: a command of the CLI, or one request of the web page. It holds what
/// every use case is given — where the node lives, the clock and the logger — and the store,
/// opened (as a person's use) the first time a use case needs it. The use cases hang off it
/// by area (`app.memos`, `app.sync`, `app.consent`, …); none of them reads the environment
/// or a global, so a test builds an `App` on a temporary home and a fixed clock.
///
/// Not shared between threads: the CLI makes one per process, the web backend one per call
/// (so a lock or unlock anywhere shows on the page's next request).
public final class App {
  public let paths: NodePaths
  /// The device keys: the lock state, and the key the store and the trust store open with.
  public let keys: DeviceKeys
  public let logger: Logger
  public let clock: @Sendable () -> Timestamp
  private var openedStore: MemoStore?

  /// `keys` nil: the node's own, with the kernel keyring (tests give a fake keyring).
  public init(
    paths: NodePaths, keys: DeviceKeys? = nil, logger: Logger = .disabled, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.paths = paths
    self.keys = keys ?? DeviceKeys(paths: paths)
    self.logger = logger
    self.clock = clock
  }

  /// The time now, by the injected clock.
  public var now: Timestamp { clock() }

  /// This node's store, opened (on first use, created) as a person's use, once per `App`.
  public func store() throws -> MemoStore {
    if let openedStore { return openedStore }
    let store = try MemoStore.open(paths: paths, logger: logger.scoped("store"), keys: keys)
    openedStore = store
    return store
  }

  /// Refuses (with `MemoStore.lockedError`) while memo content is locked: before any text is
  /// typed for a change that could not be saved, and before the page reads anything but the
  /// list.
  public func requireUnlocked() throws {
    guard try store().lockState.canReadContent else { throw MemoStore.lockedError }
  }

  /// Notebook and device names, read once, for memo and notebook output.
  public func names() throws -> Names { Names(store: try store(), trust: trustStore) }

  /// Trusted devices' names by device ID, for outbox and inbox output (IDs while locked).
  public func peerNames() throws -> PeerNames { try PeerNames(trust: trustStore) }

  /// The trusted devices, opened with the node's keys.
  public var trustStore: TrustStore { TrustStore(paths: paths, keys: keys) }

  /// A notebook by name (or a relayed one by id prefix); nil for nil.
  func notebook(named name: String?) throws -> Notebook? {
    try name.map { try store().findNotebook($0) }
  }

  /// The production clock: milliseconds since the epoch, now. Adapters inject it.
  @Sendable public static func wallClock() -> Timestamp { Clocks.shared.wallNow }

  // MARK: - Use cases

  public var memos: MemoUseCases { MemoUseCases(app: self) }
  public var notebooks: NotebookUseCases { NotebookUseCases(app: self) }
  public var sync: SyncUseCases { SyncUseCases(app: self) }
  public var conflicts: ConflictUseCases { ConflictUseCases(app: self) }
  public var consent: ConsentUseCases { ConsentUseCases(app: self) }
  public var delivery: DeliveryUseCases { DeliveryUseCases(app: self) }
  public var status: StatusUseCases { StatusUseCases(app: self) }
  public var protection: ProtectionUseCases { ProtectionUseCases(app: self) }
  public var trust: TrustUseCases { TrustUseCases(app: self) }
  public var network: NetworkUseCases { NetworkUseCases(app: self) }
  public var networks: NetworkConsentUseCases { NetworkConsentUseCases(app: self) }
  public var pairing: PairingUseCases { PairingUseCases(app: self) }
  public var daemon: DaemonUseCases { DaemonUseCases(app: self) }
  public var transfer: TransferUseCases { TransferUseCases(app: self) }
  public var info: InfoUseCases { InfoUseCases(app: self) }
  public var doctor: DoctorUseCases { DoctorUseCases(app: self) }
}
