import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoProtocol
import MemoTransport
import MemoVault
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A ready channel to a trusted peer: transport up, pinned key checked, hellos exchanged.
public struct PeerLink: Sendable {
  public let channel: any FrameChannel
  public let peer: TrustedPeer
  /// The peer's hello (nil when the dialler did not keep it): what it speaks, such as
  /// batched delivery. Without it a sender assumes the oldest version.
  public let hello: PeerMessage.Hello?

  public init(channel: any FrameChannel, peer: TrustedPeer, hello: PeerMessage.Hello? = nil) {
    self.channel = channel
    self.peer = peer
    self.hello = hello
  }
}

/// How the engine reaches a trusted peer: the seam between the sessions (sync, delivery,
/// ping) and discovery plus transport. `PeerConnector` is the real one; tests pass one that
/// hands out in-memory channels.
///
/// Contract: returns a ready link or throws a `MemoPeerError` by `deadline` (a dialler may
/// wait for consent and for the peer, but never past it); reports each connection state
/// change through `onState`; never blocks a thread of Swift's cooperative pool.
public protocol PeerDialer: Sendable {
  func connect(
    to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void
  ) async throws -> PeerLink
}

extension PeerDialer {
  /// Connects within `timeout` seconds from now.
  public func connect(
    to peer: TrustedPeer, timeout: Double, onState: @escaping @Sendable (ConnectionState) -> Void = { _ in }
  ) async throws -> PeerLink {
    try await connect(to: peer, deadline: .after(seconds: timeout), onState: onState)
  }
}

/// Connects to a trusted peer the way the connection states say: it waits (for consent, for
/// the peer to appear, for it to answer) rather than failing, until the deadline; it fails
/// at once only when something is wrong that waiting cannot fix — a device advertising as
/// the peer with another key, or the peer refusing us.
///
/// The deadline reaches every wait: the browse, the TCP connect, the TLS handshake (which
/// runs on a thread of its own, `BlockingIO`) and the hellos. A peer that accepts TCP but
/// never answers TLS costs this call its deadline and nothing else.
public struct PeerConnector: PeerDialer {
  /// The sightings of one browse (the consent-gated DNS-SD browse, resolved).
  public typealias Sightings = @Sendable () throws -> AsyncThrowingStream<PeerSighting, any Error>
  /// Opens a channel to one sighting, blocking until it is up or the deadline passed.
  /// Throws a `TransportError`: `untrustedPeer` (with the presented key) when the device's
  /// key is not `expected`.
  public typealias Dial =
    @Sendable (_ sighting: PeerSighting, _ port: UInt16, _ deadline: Deadline, _ expected: DeviceID) throws
    -> any FrameChannel

  public let gate: ConsentGate
  public let identity: NodeIdentity
  public let trust: TrustStore
  public let limits: ConnectionLimits
  /// Where ready channels are registered, so that locking the node closes them.
  public let sessions: LiveSessions?
  let clock: @Sendable () -> Timestamp
  let sightings: Sightings
  let dial: Dial

  /// `sightings` and `dial` default to DNS-SD through the gate and TLS with the node's key.
  public init(
    gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, limits: ConnectionLimits = ConnectionLimits(),
    sessions: LiveSessions? = nil, clock: @escaping @Sendable () -> Timestamp, sightings: Sightings? = nil,
    dial: Dial? = nil
  ) {
    self.gate = gate
    self.identity = identity
    self.trust = trust
    self.limits = limits
    self.sessions = sessions
    self.clock = clock
    self.sightings = sightings ?? Self.browse(gate: gate, identity: identity, clock: clock)
    self.dial = dial ?? Self.tls(identity: identity, limits: limits)
  }

  /// Sightings from a browse through the consent gate, resolved.
  static func browse(gate: ConsentGate, identity: NodeIdentity, clock: @escaping @Sendable () -> Timestamp)
    -> Sightings
  {
    {
      try PeerBrowser.sightings(
        discovery: gate.discovery, type: LocalNetworkManifest.memoPeerServiceType, resolve: true,
        ownIdentity: identity.advertisement, clock: clock)
    }
  }

  /// TLS with the node's key to the sighting's addresses, IPv4 first.
  static func tls(identity: NodeIdentity, limits: ConnectionLimits) -> Dial {
    { sighting, port, deadline, expected in
      let client = TLSClient(context: try TLSContext(identity: identity.device, role: .client), limits: limits)
      return try client.connect(
        toFirstOf: sighting.addresses, port: port, interfaceIndex: if_nametoindex(sighting.interface),
        deadline: deadline, accepts: { $0 == expected })
    }
  }

  static let consentPoll: Duration = .milliseconds(200)
  static let retryPause: Duration = .seconds(1)
  /// How long the first browse looks for a peer by its tag alone (a local browse answers
  /// within tens of milliseconds) before unrecognised advertisements are tried too.
  static let tagOnlySeconds = 2.0

  public func connect(
    to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void
  ) async throws -> PeerLink {
    let seconds = Int(deadline.secondsLeft.rounded())
    let tracker = StateTracker(onState)
    tracker.move(.setup)
    var triedUnrecognized = false
    while !deadline.hasPassed {
      try Task.checkCancellation()
      switch try gate.verdict(for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType)) {
      case .allowed: break
      case .needsConsent:
        tracker.move(.waiting(.localNetworkConsent))
        try await Self.pause(Self.consentPoll, before: deadline)
        continue
      case .refused(let error):
        guard error.code == .policyDenied else { throw fail(tracker, error) }
        tracker.move(.waiting(.localNetworkConsent))
        try await Self.pause(Self.consentPoll, before: deadline)
        continue
      }
      if tracker.current == .setup || tracker.current == .waiting(.localNetworkConsent) {
        tracker.move(.waiting(.peerNotFound))
      }
      // The first browse looks for the peer's advertisement by its tag; when that does not
      // find it (the peer rotated its discovery key after a revocation this node has not
      // heard of yet), the next ones try every advertisement no trusted device's key
      // recognises, and the pinned key picks the right one.
      let byTagOnly = !triedUnrecognized && peer.discoveryKeyStale != true && peer.discoveryKey != nil
      let until = byTagOnly ? Deadline.after(seconds: min(deadline.secondsLeft, Self.tagOnlySeconds)) : deadline
      if let link = try await browseAndConnect(peer, until: until, tracker: tracker, byTagOnly: byTagOnly) {
        return link
      }
      if byTagOnly {
        triedUnrecognized = true
        continue
      }
      try await Self.pause(Self.retryPause, before: deadline)
    }
    let reason = tracker.lastWaitReason.map { " (still waiting: \($0))" } ?? ""
    throw fail(
      tracker,
      MemoPeerError(
        .connection, "could not reach \(peer.displayName) within \(seconds) s\(reason)",
        remedy: reason.contains("consent") ? .grantConsent(nil) : .checkPeerVisible(device: peer.displayName)))
  }

  /// Sleeps `pause`, or until the deadline if that is sooner.
  private static func pause(_ pause: Duration, before deadline: Deadline) async throws {
    guard !deadline.hasPassed else { return }
    try await deadline.clock.sleep(until: min(deadline.clock.monotonicNow + pause, deadline.instant))
  }

  /// One browse: every sighting that may be the peer is tried as it comes. Nil when the
  /// deadline passed or a candidate was unreachable (the caller waits and browses again).
  private func browseAndConnect(
    _ peer: TrustedPeer, until deadline: Deadline, tracker: StateTracker, byTagOnly: Bool
  ) async throws -> PeerLink? {
    let recognizer = AdvertisementIdentity.peer(peer)
    // Advertisements another trusted device's key recognises are that device's, not this one.
    let others = byTagOnly ? nil : (try? trust.load()).map(PeerRecognizer.init(trust:))
    let sightings = try self.sightings()
    let found = try await untilDeadline(deadline) { () async throws -> PeerLink? in
      for try await sighting in sightings {
        guard sighting.event == .added, !sighting.own, sighting.pairingName == nil, let port = sighting.port,
          !sighting.addresses.isEmpty
        else {
          continue
        }
        // With the peer's discovery key, only its advertisement is a candidate; without
        // it (added by `trust add`, never met), or with a key that may be old (a revocation
        // made every device rotate its own), every memo-peer device is tried and the pinned
        // key picks the right one.
        let recognized = recognizer.map { key in sighting.tag.map { key.recognizes(tag: $0, at: clock()) } ?? false }
        if recognized == false {
          guard !byTagOnly else { continue }
          if let other = others?.peer(forTag: sighting.tag, at: clock()), other.deviceID != peer.deviceID { continue }
        }
        tracker.move(.preparing)
        let outcome = try await BlockingIO.run("mp.connect") { [self] in
          try attempt(peer, sighting: sighting, port: port, claimsToBe: recognized == true, deadline: deadline)
        }
        switch outcome {
        case .ready(let link):
          tracker.move(.ready)
          return link
        case .notThisOne: continue
        case .unreachable:
          tracker.move(.waiting(.peerUnreachable))
          return nil
        }
      }
      return nil
    }
    return found ?? nil
  }

  enum Attempt: Sendable {
    case ready(PeerLink)
    case notThisOne
    case unreachable
  }

  /// Dials one sighting and exchanges hellos, all by `deadline`. Blocking: runs on a thread
  /// of its own.
  private func attempt(_ peer: TrustedPeer, sighting: PeerSighting, port: UInt16, claimsToBe: Bool, deadline: Deadline)
    throws -> Attempt
  {
    let expected = peer.deviceID
    let channel: any FrameChannel
    do {
      channel = try dial(sighting, port, deadline, expected)
    } catch {
      guard let error = error as? TransportError, error.kind == .untrustedPeer, let presented = error.presented else {
        return .unreachable
      }
      guard claimsToBe else { return .notThisOne }
      throw MemoPeerError(
        .untrustedPeer,
        "refused the device advertising as \(peer.displayName): its key (device ID \(presented.short)…) is not the one pinned for \(peer.displayName) (\(expected.short)…)",
        hint:
          "someone may be impersonating \(peer.displayName); if \(peer.displayName) was reinstalled, remove and pair it again"
      )
    }
    do throws(TransportError) {
      let hello = try PeerSession.greet(channel, identity: identity, before: deadline)
      var known = peer
      let learned = try? trust.update {
        $0.learnDiscoveryKey(hello.discoveryKey, rotationSeconds: hello.rotationSeconds, for: expected)
      }
      if learned == true {
        known.discoveryKey = hello.discoveryKey
        known.rotationSeconds = hello.rotationSeconds
      }
      sessions?.add(channel)
      return .ready(PeerLink(channel: channel, peer: known, hello: hello))
    } catch {
      channel.close()
      // Silence until the deadline is a peer that does not answer, not a refusal.
      if error.kind == .idleTimeout { return .unreachable }
      throw MemoPeerError(
        .untrustedPeer, "\(peer.displayName) refused this device: it does not trust this device (any more)",
        remedy: .pairAgain(device: peer.displayName),
        diagnostics: error.description)
    }
  }

  private func fail(_ tracker: StateTracker, _ error: MemoPeerError) -> MemoPeerError {
    tracker.move(.failed(error.message))
    return error
  }
}

/// Reports each state change once, and only changes the state machine allows.
final class StateTracker: Sendable {
  private struct State {
    var state: ConnectionState?
    var waitReason: WaitReason?
  }
  private let state = Mutex(State())
  private let report: @Sendable (ConnectionState) -> Void

  init(_ report: @escaping @Sendable (ConnectionState) -> Void) { self.report = report }

  var current: ConnectionState? { state.withLock { $0.state } }
  var lastWaitReason: WaitReason? { state.withLock { $0.waitReason } }

  func move(_ next: ConnectionState) {
    let changed = state.withLock { state -> Bool in
      guard state.state.map({ $0.allows(next) }) ?? (next == .setup) else { return false }
      state.state = next
      if case .waiting(let reason) = next { state.waitReason = reason }
      return true
    }
    if changed { report(next) }
  }
}
