import Foundation
import MemoCore
import MemoDiscovery
import MemoStore
import MemoTransport

/// A ready connection to a trusted peer: TLS up, pinned key checked, hellos exchanged.
public struct PeerLink: Sendable {
  public let connection: TLSConnection
  public let peer: TrustedPeer
}

/// Connects to a trusted peer the way the connection states say: it waits (for consent, for
/// the peer to appear, for it to answer) rather than failing, until the deadline; it fails
/// at once only when something is wrong that waiting cannot fix — a device advertising as
/// the peer with another key, or the peer refusing us.
public struct PeerConnector: Sendable {
  public let gate: ConsentGate
  public let identity: NodeIdentity
  public let trust: TrustStore
  public let limits: ConnectionLimits
  /// Where ready connections are registered, so that locking the node closes them.
  public let sessions: LiveSessions?
  let clock: @Sendable () -> Timestamp

  public init(
    gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, limits: ConnectionLimits = ConnectionLimits(),
    sessions: LiveSessions? = nil, clock: @escaping @Sendable () -> Timestamp
  ) {
    self.gate = gate
    self.identity = identity
    self.trust = trust
    self.limits = limits
    self.sessions = sessions
    self.clock = clock
  }

  static let consentPoll: Duration = .milliseconds(200)
  static let retryPause: Duration = .seconds(1)

  public func connect(
    to peer: TrustedPeer, timeout: Double, onState: @escaping @Sendable (ConnectionState) -> Void
  ) async throws -> PeerLink {
    let deadline = Deadline.after(seconds: timeout)
    let tracker = StateTracker(onState)
    tracker.move(.setup)
    while !deadline.hasPassed {
      try Task.checkCancellation()
      switch try gate.verdict(for: .browse(serviceType: LocalNetworkManifest.memoPeerServiceType)) {
      case .allowed: break
      case .needsConsent:
        tracker.move(.waiting(.localNetworkConsent))
        try await Task.sleep(for: Self.consentPoll)
        continue
      case .refused(let error):
        guard error.code == .policyDenied else { throw fail(tracker, error) }
        tracker.move(.waiting(.localNetworkConsent))
        try await Task.sleep(for: Self.consentPoll)
        continue
      }
      if tracker.current == .setup || tracker.current == .waiting(.localNetworkConsent) {
        tracker.move(.waiting(.peerNotFound))
      }
      if let link = try await browseAndConnect(peer, until: deadline, tracker: tracker) { return link }
      if !deadline.hasPassed { try await Task.sleep(for: Self.retryPause) }
    }
    let reason = tracker.lastWaitReason.map { " (still waiting: \($0))" } ?? ""
    throw fail(
      tracker,
      MemoPeerError(
        .connection, "could not reach \(peer.displayName) within \(Int(timeout)) s\(reason)",
        hint: reason.contains("consent")
          ? "grant local-network consent with `memo-peer consent grant`"
          : "check that memo-peer serve runs on \(peer.displayName) with consent; `memo-peer browse` shows who is visible"
      ))
  }

  /// One browse: every sighting that may be the peer is tried as it comes. Nil when the
  /// deadline passed or a candidate was unreachable (the caller waits and browses again).
  private func browseAndConnect(_ peer: TrustedPeer, until deadline: Deadline, tracker: StateTracker) async throws
    -> PeerLink?
  {
    let recognizer = AdvertisementIdentity.peer(peer)
    let sightings = try PeerBrowser.sightings(
      discovery: gate.discovery, type: LocalNetworkManifest.memoPeerServiceType, resolve: true,
      ownIdentity: identity.advertisement, clock: clock)
    return try await withThrowingTaskGroup(of: PeerLink?.self) { group in
      group.addTask {
        for try await sighting in sightings {
          guard sighting.event == .added, !sighting.own, sighting.pairingName == nil, let port = sighting.port,
            !sighting.addresses.isEmpty
          else {
            continue
          }
          // With the peer's discovery key, only its advertisement is a candidate; without
          // it (added by `trust add`, never met), every memo-peer device is tried and the
          // pinned key picks the right one.
          let recognized = recognizer.map { key in sighting.tag.map { key.recognizes(tag: $0, at: clock()) } ?? false }
          guard recognized ?? true else { continue }
          tracker.move(.preparing)
          switch try attempt(peer, sighting: sighting, port: port, claimsToBe: recognized == true) {
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
      group.addTask {
        try await Task.sleep(for: .milliseconds(Int(deadline.remaining)))
        return nil
      }
      let first = try await group.next() ?? nil
      group.cancelAll()
      return first
    }
  }

  enum Attempt {
    case ready(PeerLink)
    case notThisOne
    case unreachable
  }

  private func attempt(_ peer: TrustedPeer, sighting: PeerSighting, port: UInt16, claimsToBe: Bool) throws -> Attempt {
    guard let expected = peer.id else {
      throw MemoPeerError(.storage, "the trust store entry for \(peer.displayName) has a damaged device ID")
    }
    let client = TLSClient(context: try TLSContext(identity: identity.device, role: .client), limits: limits)
    let interface = if_nametoindex(sighting.interface)
    for address in sighting.addresses.sorted(by: { !$0.contains(":") && $1.contains(":") }) {
      let connection: TLSConnection
      do {
        connection = try client.connect(host: address, port: port, interfaceIndex: interface) { $0 == expected }
      } catch {
        if error.kind == .untrustedPeer, let presented = error.presented {
          guard claimsToBe else { return .notThisOne }
          throw MemoPeerError(
            .untrustedPeer,
            "refused the device advertising as \(peer.displayName): its key (device ID \(presented.short)…) is not the one pinned for \(peer.displayName) (\(expected.short)…)",
            hint:
              "someone may be impersonating \(peer.displayName); if \(peer.displayName) was reinstalled, remove and pair it again"
          )
        }
        continue
      }
      do throws(TransportError) {
        let hello = try PeerSession.greet(connection, identity: identity)
        var known = peer
        let learned = try? trust.update {
          $0.learnDiscoveryKey(hello.discoveryKey, rotationSeconds: hello.rotationSeconds, for: expected)
        }
        if learned == true {
          known.discoveryKey = hello.discoveryKey
          known.rotationSeconds = hello.rotationSeconds
        }
        sessions?.add(connection)
        return .ready(PeerLink(connection: connection, peer: known))
      } catch {
        throw MemoPeerError(
          .untrustedPeer, "\(peer.displayName) refused this device: it does not trust this device (any more)",
          hint: "pair again (`memo-peer pair`), or add this device on \(peer.displayName) with `memo-peer trust add`",
          diagnostics: error.description)
      }
    }
    return .unreachable
  }

  private func fail(_ tracker: StateTracker, _ error: MemoPeerError) -> MemoPeerError {
    tracker.move(.failed(error.message))
    return error
  }
}

/// Reports each state change once, and only changes the state machine allows.
final class StateTracker: @unchecked Sendable {
  private let lock = NSLock()
  private var state: ConnectionState?
  private var waitReason: WaitReason?
  private let report: @Sendable (ConnectionState) -> Void

  init(_ report: @escaping @Sendable (ConnectionState) -> Void) { self.report = report }

  var current: ConnectionState? { lock.withLock { state } }
  var lastWaitReason: WaitReason? { lock.withLock { waitReason } }

  func move(_ next: ConnectionState) {
    let changed = lock.withLock { () -> Bool in
      guard state.map({ $0.allows(next) }) ?? (next == .setup) else { return false }
      state = next
      if case .waiting(let reason) = next { waitReason = reason }
      return true
    }
    if changed { report(next) }
  }
}
