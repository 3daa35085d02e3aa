import MemoCore
import MemoCrypto
import MemoNode
import MemoStore
import MemoSystem
import MemoVault

/// The node at a glance: consent per scope, the daemon, the protection.
public struct NodeStatus: Sendable {
  public var consent: [ConsentScope: ConsentState]
  /// The daemon's state, when one runs.
  public var serve: ServeStatus?
  public var protection: DeviceKeys.Status
  /// `MemoStore.changeMark`: the page reloads what it shows when it moves (nil: no store yet).
  public var changes: String?
  /// Revocations held here (made here, applied, or against this device), newest first.
  public var revocations: [RevocationNote] = []
  /// Notebooks shared with this device that a person has not accepted yet.
  public var invitations: [NotebookInvitation] = []
  /// What peers sent that was kept aside (quarantined), per peer and reason.
  public var keptAside: [KeptAside] = []
  /// The network this device is on and whether memo-peer may use it (nil: on none).
  public var network: NetworkFacts?

  /// What `doctor`'s network check says, for `status --json` and the page.
  public struct NetworkFacts: Sendable, Equatable, Encodable {
    public var id: String
    public var name: String
    /// `allowed`, `undetermined` (memo-peer waits: nobody allowed it), `denied`, `revoked`.
    public var state: String
  }

  /// Records, ops or statements one peer passed on that did not pass the checks.
  public struct KeptAside: Sendable, Equatable {
    public var peer: DeviceID
    public var reason: String
    public var count: Int
  }
}

/// The protection after a change (or a look at it): `changed` nil for a look.
public struct ProtectionChange: Sendable {
  public var status: DeviceKeys.Status
  public var changed: Bool?
}

/// `status` and the page's status line.
public struct StatusUseCases {
  let app: App

  public func current() throws -> NodeStatus {
    let gate = try app.consent.gate()
    var consent: [ConsentScope: ConsentState] = [:]
    for scope in ConsentScope.allCases { consent[scope] = try gate.state(scope) }
    let serve = ServeStatus.read(app.paths)
    let store = storeToLookAt()
    var status = NodeStatus(
      consent: consent, serve: serve?.isRunning ?? false ? serve : nil, protection: try app.keys.status(),
      changes: try? store?.changeMark(), revocations: (try? store?.revocations()) ?? [])
    status.invitations = (try? store?.invitations()) ?? []
    if let overview = try? app.networks.overview(), let current = overview.current {
      status.network = NodeStatus.NetworkFacts(
        id: current.id, name: current.name.terminalSafe, state: overview.currentState ?? "undetermined")
    }
    status.keptAside = ((try? store?.quarantined()) ?? []).map {
      NodeStatus.KeptAside(peer: $0.peer, reason: $0.reason, count: $0.count)
    }
    return status
  }

  /// The store's change mark alone (`current()`'s `changes`), for the page's status call
  /// that waits for a change: nil when there is no store or it does not open (locked).
  public func changeMark() -> String? {
    try? storeToLookAt()?.changeMark()
  }

  /// The store opened for the daemon's kind of use: the page asks for the status whenever
  /// something changed, which must not count as a person's use of a `complete` node.
  private func storeToLookAt() -> MemoStore? {
    guard PrivateFiles.exists(app.paths.databasePath) else { return nil }
    return try? MemoStore.open(paths: app.paths, logger: app.logger.scoped("store"), keys: app.keys, use: .background)
  }
}

/// How the device key is kept (`protect`), and memo content locked and unlocked (`lock`,
/// `unlock`, the page's Lock and unlock). Passphrases come through closures, asked only
/// when needed.
public struct ProtectionUseCases {
  let app: App

  public func status() throws -> DeviceKeys.Status { try app.keys.status() }

  /// Changes the class (`target`, nil: keep it), the idle timeout or the passphrase; a
  /// protected key asks for its current passphrase first. With nothing to change, a look.
  public func protect(
    _ target: ProtectionClass?, idleTimeout: UInt32? = nil, changePassphrase: Bool = false,
    currentPassphrase: () throws -> SecureBytes, newPassphrase: () throws -> SecureBytes
  ) throws -> ProtectionChange {
    let keys = app.keys
    guard target != nil || changePassphrase || idleTimeout != nil else {
      return ProtectionChange(status: try keys.status(), changed: nil)
    }
    let outcome = try keys.protect(
      target ?? keys.status().protection, idleTimeout: idleTimeout, changePassphrase: changePassphrase,
      currentPassphrase: currentPassphrase, newPassphrase: newPassphrase)
    app.logger.info("protection changed: \(outcome != .unchanged, privacy: .public)")
    return ProtectionChange(status: try keys.status(), changed: outcome != .unchanged)
  }

  /// Unwraps the device key into the kernel keyring (nothing asked when it is unlocked
  /// already); a key without a passphrase is `not-protected`.
  public func unlock(passphrase: () throws -> SecureBytes) throws -> ProtectionChange {
    let status = try app.keys.status()
    guard status.protection.isProtected else { throw Self.notProtected }
    if status.lockState == .unlocked { return ProtectionChange(status: status, changed: false) }
    return ProtectionChange(status: try app.keys.unlock(passphrase: try passphrase()), changed: true)
  }

  /// Removes the unwrapped key from the keyring: nothing reads memo content until `unlock`.
  public func lock() throws -> ProtectionChange {
    try app.keys.lock()
    return ProtectionChange(status: try app.keys.status(), changed: true)
  }

  /// `unlock` of a node whose key has no passphrase.
  public static let notProtected = MemoPeerError(
    .notProtected, "this node's key has no passphrase (protection none): it is always unlocked",
    remedy: .protectKey)
}
