import MemoCore
import MemoDiscovery
import MemoStore
import MemoVault

#if canImport(Glibc)
  import Glibc
#endif

/// What one step of `serve` decides from, read once per wake (`ServeFactsReader`): the
/// schedules (`AdvertisingSchedule`, `OutboxSchedule`, `SyncSchedule`, `LiveSyncState`)
/// take these, never the files, so they are tested by feeding them facts and times.
struct ServeFacts: Sendable, Equatable {
  /// The node's lock state; nil when it cannot be told.
  var lock: LockState?
  var consent: ConsentFacts
  /// The discovery key file as it is now (`KeyFile.fingerprint`): a new one is a rotation.
  var discoveryKey: String

  /// Whether the node may be on the network.
  enum Access: Sendable, Equatable {
    /// Nothing of it on the network and no key in memory, whatever the consent says.
    case locked
    /// Nothing of it on the network until this is there.
    case waiting(String)
    case allowed
  }

  /// What the facts allow: the lock comes first, then the local-network consent.
  var access: Access {
    if case .locked? = lock { return .locked }
    return consent.waitingFor.map(Access.waiting) ?? .allowed
  }
}

/// What the consent log says the daemon may do.
struct ConsentFacts: Sendable, Equatable {
  /// The verdict for advertising memo-peer's service; nil when the log cannot be read.
  var advertise: LocalNetworkVerdict?
  /// The local-network scope's state (`denied`, `revoked`…), for what the daemon waits for.
  var localNetworkState: String?
  /// Whether the background-sync scope is granted: scheduled and live sync run only then.
  var backgroundSync: Bool
  /// Why the log cannot be read (nil when it can).
  var error: MemoPeerError?
  /// The network this device is on (nil: none); `advertise` says whether it is allowed.
  var network: NetworkPlace? = nil
  /// Read, and no network found: no interface but loopback has an address (a laptop between
  /// networks). The daemon waits for one rather than announce itself on the next before
  /// that one is checked.
  var offNetwork = false

  /// The facts of the log's `records` under `manifest`, on `network`.
  static func of(_ records: [ConsentRecord], manifest: LocalNetworkManifest, network: NetworkPlace? = nil)
    -> ConsentFacts
  {
    ConsentFacts(
      advertise: LocalNetworkPolicy.evaluate(
        .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType), manifest: manifest, consent: records,
        network: network),
      localNetworkState: ConsentState.of(.localNetwork, in: records).name,
      backgroundSync: ConsentState.of(.backgroundSync, in: records).isGranted, network: network)
  }

  /// A log that cannot be read allows nothing.
  static func unreadable(_ error: MemoPeerError) -> ConsentFacts {
    ConsentFacts(advertise: nil, localNetworkState: nil, backgroundSync: false, error: error)
  }

  private var networkName: String { network?.name.terminalSafe ?? "none" }

  /// What the daemon waits for before it may be on the network; nil: it may.
  var waitingFor: String? {
    guard !offNetwork || advertise != .allowed else { return "a network: no interface but loopback has an address" }
    return switch advertise {
    case nil: "a readable consent log"
    case .allowed?: nil
    case .needsConsent(.network)?: "this network (\(networkName)) to be allowed: it is not one a person allowed"
    case .needsConsent?: "local-network consent"
    case .refused(let error)? where error.code == .policyDenied && localNetworkState == "granted":
      "this network (\(networkName)) to be allowed: a person denied it"
    case .refused(let error)?:
      error.code == .policyDenied ? "local-network consent (\(localNetworkState ?? "denied"))" : error.message
    }
  }
}

/// Reads `ServeFacts` at every wake, touching the disk only for what changed: the consent
/// log is read (and parsed) again only when its stamp (inode, mtime, size) is not the one
/// it was read at, so a wake by a peer or a tick costs a `stat`, not a parse of the whole
/// log. The lock state is asked every time: the keyring's idle timeout locks the node
/// without writing any file, so no stamp tells of it.
struct ServeFactsReader {
  let gate: ConsentGate
  let discoveryKey: KeyFile
  let lockState: @Sendable () -> LockState?
  /// The consent log's stamp when it was last read, and what it said.
  private var consentRead: (stamp: String, facts: ConsentFacts)?
  /// How many times the consent log was read (for the tests of "no change, no read").
  private(set) var consentReads = 0
  /// Whether the last read found no network (nil before the first read).
  private var wasOffNetwork: Bool?
  /// Set when a read finds a network after one that found none (`takeArrival`).
  private var arrived = false

  init(gate: ConsentGate, discoveryKey: KeyFile, lockState: @escaping @Sendable () -> LockState?) {
    self.gate = gate
    self.discoveryKey = discoveryKey
    self.lockState = lockState
  }

  /// Whether a read since the last call found this machine arriving on a network (none
  /// before): a link that just came up is configured in steps (an address, then routes,
  /// then the gateway's neighbour entry), so the engine reads again once that settled
  /// rather than take a half-configured network for another one.
  mutating func takeArrival() -> Bool {
    defer { arrived = false }
    return arrived
  }

  /// How long a network just arrived on is given to settle (`takeArrival`).
  static let arrivalSettle: Duration = .milliseconds(300)

  /// The facts now.
  mutating func read() -> ServeFacts {
    ServeFacts(lock: lockState(), consent: consent(), discoveryKey: discoveryKey.fingerprint())
  }

  /// The consent log's facts now, read again only when its stamp changed. The stamp is taken
  /// before the read: a write between the two leaves a stamp that no longer matches, so
  /// the next wake reads the log again rather than miss it.
  mutating func consent() -> ConsentFacts {
    // The network is read every time (a few small kernel tables): a laptop that moved
    // counts at once, and a new network makes the log count afresh.
    let network = gate.networks.current()
    if wasOffNetwork == true, network != nil { arrived = true }
    wasOffNetwork = network == nil
    let stamp = Self.stamp(gate.log.path) + "@" + (network?.id ?? "none")
    if let consentRead, consentRead.stamp == stamp { return consentRead.facts }
    consentReads += 1
    let facts: ConsentFacts
    do {
      var read = ConsentFacts.of(try gate.records(on: network), manifest: gate.manifest, network: network)
      read.offNetwork = network == nil
      facts = read
    } catch {
      facts = .unreadable(
        error as? MemoPeerError ?? MemoPeerError(.storage, "the consent log cannot be read: \(error)"))
    }
    consentRead = (stamp, facts)
    return facts
  }

  /// Changes whenever the file is written or replaced (as `KeyFile.fingerprint`).
  static func stamp(_ path: String) -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { return "absent" }
    return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
  }
}
