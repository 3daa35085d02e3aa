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
  /// The address dialled when DNS-SD did not show the peer (nil: it did, or not told).
  public var dialledAt: String?

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
  /// When each address dialled without DNS-SD may be dialled again: shared by every
  /// connector of one daemon (`TLSChannels`), so a stale address costs one attempt per
  /// step across live links, syncs and deliveries.
  public let addressBackoff: AddressBackoffs
  let clock: @Sendable () -> Timestamp
  let sightings: Sightings
  let dial: Dial

  /// `sightings` and `dial` default to DNS-SD through the gate and TLS with the node's key.
  public init(
    gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, limits: ConnectionLimits = ConnectionLimits(),
    sessions: LiveSessions? = nil, addressBackoff: AddressBackoffs = AddressBackoffs(),
    clock: @escaping @Sendable () -> Timestamp, sightings: Sightings? = nil, dial: Dial? = nil
  ) {
    self.gate = gate
    self.identity = identity
    self.trust = trust
    self.limits = limits
    self.sessions = sessions
    self.addressBackoff = addressBackoff
    self.clock = clock
    self.sightings = sightings ?? Self.browse(gate: gate, identity: identity, clock: clock)
    self.dial = dial ?? Self.tls(identity: identity, limits: limits)
  }

  /// The network this device is on now (`NetworkReader`): where a peer is reached is
  /// remembered for it, and only its remembered places are dialled.
  var network: String? { gate.networks.current()?.id }

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
  /// How long a browse looks for a peer that has addresses to dial before they are tried.
  static let browseBeforeAddressesSeconds = 0.5

  public func connect(
    to peer: TrustedPeer, deadline: Deadline, onState: @escaping @Sendable (ConnectionState) -> Void
  ) async throws -> PeerLink {
    let seconds = Int(deadline.secondsLeft.rounded())
    let tracker = StateTracker(onState)
    tracker.move(.setup)
    var triedUnrecognized = false
    // A peer with addresses to dial without DNS-SD gets them tried between short browses.
    let current = (try? trust.load())?.peer(for: peer.deviceID) ?? peer
    let here = network
    let hasAddresses = !current.dialAddresses(on: here, defaultPort: nil).isEmpty
    // Where DNS-SD did not show it the last time it was reached on this network (one that
    // filters multicast), its addresses are dialled before any browse: a browse there
    // would only cost its window.
    var addressesFirst = hasAddresses && current.reached?.first { $0.network == here }?.withoutDNSSD == true
    while !deadline.hasPassed {
      try Task.checkCancellation()
      let verdict = try gate.verdict(for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType))
      switch verdict {
      case .allowed: break
      case .needsConsent(let scope):
        tracker.move(.waiting(scope == .network ? .networkNotAllowed : .localNetworkConsent))
        try await Self.pause(Self.consentPoll, before: deadline)
        continue
      case .refused(let error):
        guard error.code == .policyDenied else { throw fail(tracker, error) }
        tracker.move(.waiting(verdict.isNetworkRefusal ? .networkNotAllowed : .localNetworkConsent))
        try await Self.pause(Self.consentPoll, before: deadline)
        continue
      }
      if tracker.current == .setup || tracker.current == .waiting(.localNetworkConsent)
        || tracker.current == .waiting(.networkNotAllowed)
      {
        tracker.move(.waiting(.peerNotFound))
      }
      if addressesFirst {
        addressesFirst = false
        if let link = try await dialKnownAddresses(of: peer, before: deadline, tracker: tracker) { return link }
      }
      // The first browse looks for the peer's advertisement by its tag; when that does not
      // find it (the peer rotated its discovery key after a revocation this node has not
      // heard of yet), the next ones try every advertisement no trusted device's key
      // recognises, and the pinned key picks the right one.
      let byTagOnly = !triedUnrecognized && peer.discoveryKeyStale != true && peer.discoveryKey != nil
      // With addresses to dial, a browse waits only as long as a local one takes to answer:
      // on a network that filters multicast DNS it never will, and the addresses are as
      // good a way to the peer (whoever answers there proves the pinned key).
      let window = hasAddresses ? Self.browseBeforeAddressesSeconds : Self.tagOnlySeconds
      let until =
        byTagOnly || hasAddresses ? Deadline.after(seconds: min(deadline.secondsLeft, window)) : deadline
      if let link = try await browseAndConnect(peer, until: until, tracker: tracker, byTagOnly: byTagOnly) {
        return link
      }
      // DNS-SD did not show it (a network that filters multicast, another subnet): where a
      // person said it is, and where it was reached before.
      if let link = try await dialKnownAddresses(of: peer, before: deadline, tracker: tracker) { return link }
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
        remedy: reason.contains("network to be allowed")
          ? .grantConsent(.network)
          : reason.contains("consent") ? .grantConsent(nil) : .checkPeerVisible(device: peer.displayName)))
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

  /// Dials only the peer's given and remembered addresses, within `timeout` seconds, each
  /// once (`doctor`: is the device reachable where DNS-SD does not show it?). Nil when none
  /// answered with its key.
  public func connectWithoutDNSSD(to peer: TrustedPeer, timeout: Double) async throws -> PeerLink? {
    try await dialKnownAddresses(of: peer, before: .after(seconds: timeout), tracker: StateTracker { _ in })
  }

  /// How long one address dialled without DNS-SD may take (TCP, TLS, hellos): a stranger
  /// that accepts and never answers costs this, not the whole deadline.
  static let addressSeconds = 4.0

  /// Dials the peer's given and remembered addresses whose back-off allows it, in order.
  /// Whoever answers must prove the pinned key: another key is one refused handshake, and
  /// the address waits its next back-off step.
  private func dialKnownAddresses(of peer: TrustedPeer, before deadline: Deadline, tracker: StateTracker)
    async throws -> PeerLink?
  {
    let current = (try? trust.load())?.peer(for: peer.deviceID) ?? peer
    for address in current.dialAddresses(on: network, defaultPort: nil) {
      guard !deadline.hasPassed else { return nil }
      guard addressBackoff.mayDial(address, at: deadline.clock.monotonicNow) else { continue }
      tracker.move(.preparing)
      let until = min(deadline, Deadline.after(seconds: Self.addressSeconds, clock: deadline.clock))
      let outcome = try await BlockingIO.run("mp.connect") { [self] () throws -> Attempt in
        let numeric: [String]
        do {
          numeric = address.isName ? try TLSClient.addresses(of: address.hostText) : [address.hostText]
        } catch {
          return .unreachable
        }
        let sighting = PeerSighting(
          event: .added, instance: "", type: LocalNetworkManifest.memoPeerServiceType, interface: "",
          addresses: numeric, port: address.port, own: false)
        return try attempt(peer, sighting: sighting, port: address.port ?? 0, claimsToBe: false, deadline: until)
      }
      if case .ready(var link) = outcome {
        addressBackoff.succeeded(address)
        tracker.move(.ready)
        link.dialledAt = address.description
        return link
      }
      addressBackoff.failed(address, at: deadline.clock.monotonicNow)
      tracker.move(.waiting(.peerUnreachable))
    }
    return nil
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
      // Where the channel says it went; a channel that does not say (an in-memory one),
      // dialled at an address without DNS-SD, went to the one numeric address it was given.
      let given =
        sighting.instance.isEmpty && sighting.addresses.count == 1
        ? (try? PeerAddress.parse(sighting.addresses[0])) : nil
      let reachedAt =
        Self.reachedAddress(channel: channel, interface: sighting.interface, port: port)
        ?? given.flatMap { $0.isName || port == 0 ? nil : PeerAddress(host: $0.host, port: port) }
      let now = clock()
      // A sighting without an instance is an address dialled because DNS-SD did not show it.
      let learned = try? PeerHello.record(
        hello, from: expected, reachedAt: reachedAt, withoutDNSSD: sighting.instance.isEmpty ? true : nil,
        network: network, trust: trust, logger: nil, now: now)
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

  /// Where a channel that proved the peer's key reached it: its numeric address (a link-
  /// local IPv6 one with the interface it was seen on) and the port dialled.
  static func reachedAddress(channel: any FrameChannel, interface: String, port: UInt16) -> PeerAddress? {
    guard port != 0, let host = channel.remoteHost, var address = try? PeerAddress.parse(host), !address.isName
    else { return nil }
    // A dual-stack listener sees an IPv4 peer as ::ffff:a.b.c.d: remembered as a.b.c.d.
    if case .ipv6(let text, _) = address.host, text.hasPrefix("::ffff:"),
      let v4 = try? PeerAddress.parse(String(text.dropFirst(7))), case .ipv4 = v4.host
    {
      address = v4
    }
    if case .ipv6(let text, nil) = address.host, !interface.isEmpty,
      let scoped = try? PeerAddress.parse("\(text)%\(interface)"), case .ipv6 = scoped.host
    {
      address = scoped
    }
    return PeerAddress(host: address.host, port: port)
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

/// The back-off of the addresses dialled without DNS-SD, shared by the connectors of one
/// daemon or command.
public final class AddressBackoffs: Sendable {
  private let state = Mutex(AddressBackoff())

  public init() {}

  public func mayDial(_ address: PeerAddress, at now: MonotonicInstant) -> Bool {
    state.withLock { $0.mayDial(address, at: now) }
  }

  public func failed(_ address: PeerAddress, at now: MonotonicInstant) {
    state.withLock { $0.failed(address, at: now) }
  }

  public func succeeded(_ address: PeerAddress) { state.withLock { $0.succeeded(address) } }

  /// How many dials of `address` failed in a row.
  public func failureCount(_ address: PeerAddress) -> Int { state.withLock { $0.failureCount(address) } }
}
