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

  /// The facts of the log's `records` under `manifest`.
  static func of(_ records: [ConsentRecord], manifest: LocalNetworkManifest) -> ConsentFacts {
    ConsentFacts(
      advertise: LocalNetworkPolicy.evaluate(
        .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType), manifest: manifest, consent: records),
      localNetworkState: ConsentState.of(.localNetwork, in: records).name,
      backgroundSync: ConsentState.of(.backgroundSync, in: records).isGranted)
  }

  /// A log that cannot be read allows nothing.
  static func unreadable(_ error: MemoPeerError) -> ConsentFacts {
    ConsentFacts(advertise: nil, localNetworkState: nil, backgroundSync: false, error: error)
  }

  /// What the daemon waits for before it may be on the network; nil: it may.
  var waitingFor: String? {
    switch advertise {
    case nil: "a readable consent log"
    case .allowed?: nil
    case .needsConsent?: "local-network consent"
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

  init(gate: ConsentGate, discoveryKey: KeyFile, lockState: @escaping @Sendable () -> LockState?) {
    self.gate = gate
    self.discoveryKey = discoveryKey
    self.lockState = lockState
  }

  /// The facts now.
  mutating func read() -> ServeFacts {
    ServeFacts(lock: lockState(), consent: consent(), discoveryKey: discoveryKey.fingerprint())
  }

  /// The consent log's facts now, read again only when its stamp changed. The stamp is taken
  /// before the read: a write between the two leaves a stamp that no longer matches, so
  /// the next wake reads the log again rather than miss it.
  mutating func consent() -> ConsentFacts {
    let stamp = Self.stamp(gate.log.path)
    if let consentRead, consentRead.stamp == stamp { return consentRead.facts }
    consentReads += 1
    let facts: ConsentFacts
    do {
      facts = .of(try gate.log.records(), manifest: gate.manifest)
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
