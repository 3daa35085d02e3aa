import FoundationEssentials
import MemoCore
import MemoDiscovery
import MemoNode
import MemoProtocol
import Synchronization

/// A ping's round trips.
public struct PingResult: Sendable {
  public var peer: TrustedPeer
  /// The device that answered (its pinned key's ID).
  public var deviceID: DeviceID
  /// Milliseconds per answered ping, two decimals.
  public var milliseconds: [Double]
}

/// Using the local network directly: `browse` and `ping`, both behind the consent gate.
public struct NetworkUseCases {
  let app: App

  /// Watches for devices for `timeout` seconds (a service type of the manifest, or with
  /// `allTypes` every type), asking `prompt` for consent first when none is on record.
  /// Each sighting goes to `onSighting`, recognised as this node or a trusted device when
  /// the node is unlocked; while it is locked they come unrecognised, after `onLocked`.
  /// Returns how many were seen.
  public func browse(
    type: String? = nil, allTypes: Bool = false, timeout: Double, prompt: any Prompt, onLocked: () -> Void = {},
    onSighting: @escaping @Sendable (PeerSighting) -> Void
  ) throws -> Int {
    let gate = try app.consent.gate()
    let type = allTypes ? LocalNetworkManifest.allTypesQuery : type ?? LocalNetworkManifest.memoPeerServiceType
    let use: LocalNetworkUse = allTypes ? .browseAllTypes : .browse(serviceType: type)
    try ConsentUseCases.obtain(for: use, gate: gate, prompt: prompt, now: app.now)
    // Recognising this node and trusted devices needs keys that are sealed while the node is
    // locked; browsing itself needs none, so a locked node browses without names.
    var identity: AdvertisementIdentity?
    var trust = TrustList()
    do {
      identity = try AdvertisementIdentity.load(
        paths: app.paths, rotationSeconds: Advertisement.defaultRotationSeconds)
      trust = try app.trustStore.load()
    } catch let error as MemoPeerError where error.code == .locked {
      onLocked()
      identity = nil
    }
    let recognizer = PeerRecognizer(trust: trust)
    let found = Mutex(0)
    let clock = app.clock
    let discovery: GatedDiscovery = gate.discovery
    // Started here, so the first calls to avahi-daemon overlap the start of the task below.
    let sightings = try PeerBrowser.sightings(
      discovery: discovery, type: type, resolve: !allTypes, ownIdentity: identity, clock: clock)
    try runBlocking {
      // Until the timeout, or until the browse fails.
      _ = try await untilDeadline(.after(seconds: timeout)) {
        for try await raw in sightings {
          found.withLock { $0 += 1 }
          onSighting(recognizer.annotate(raw, at: clock()))
        }
      }
    }
    return found.withLock { $0 }
  }

  /// Connects to the trusted device `reference` names (waiting, and telling `onState`, for
  /// consent or the device, up to `timeout` seconds) and sends `count` pings `interval`
  /// seconds apart, each round trip (in milliseconds) to `onPong`. Asks `prompt` for consent first when
  /// someone can answer. `memo-peer lock` meanwhile closes the connection.
  public func ping(
    _ reference: String, count: Int, interval: Double, timeout: Double, prompt: any Prompt,
    onState: @escaping @Sendable (String) -> Void = { _ in }, onPong: (TrustedPeer, Double) -> Void = { _, _ in }
  ) throws -> PingResult {
    try withLink(to: reference, timeout: timeout, prompt: prompt, onState: onState) { peer, link, watch in
      do throws(PeerPing.PingFailure) {
        let times = try PeerPing.run(over: link, count: count, interval: interval) { _, milliseconds in
          onPong(peer, milliseconds)
        }
        return PingResult(peer: peer, deviceID: link.peer.deviceID, milliseconds: times)
      } catch {
        if watch.fired { throw LockWatch.lockedDuring("the pings") }
        throw MemoPeerError(
          .connection, "\(peer.displayName) closed the connection after \(error.answered) of \(count) pings",
          hint: "it may have removed this device from its trusted devices", diagnostics: error.error.description)
      }
    }
  }

  /// Connects to the trusted device `reference` names, as `ping` does (consent asked of
  /// `prompt` when someone can answer, waiting up to `timeout` seconds and telling
  /// `onState`), and runs `body` over the ready link while `memo-peer lock` is watched.
  func withLink<Result>(
    to reference: String, timeout: Double, prompt: any Prompt, onState: @escaping @Sendable (String) -> Void,
    _ body: (TrustedPeer, PeerLink, LockWatch) throws -> Result
  ) throws -> Result {
    let gate = try app.consent.gate()
    let trust = app.trustStore
    let peer = try trust.load().find(reference)
    if prompt.canAsk { try ConsentUseCases.obtain(for: .memoPeerBrowse, gate: gate, prompt: prompt, now: app.now) }
    let watch = LockWatch(keys: app.keys)
    defer { watch.stop() }
    let connector = PeerConnector(
      gate: gate, identity: try NodeIdentity.load(paths: app.paths), trust: trust, sessions: watch.sessions,
      clock: app.clock)
    let name = peer.displayName
    let link = try runBlocking {
      try await connector.connect(to: peer, timeout: timeout) { state in onState("\(name): \(state)") }
    }
    return try body(peer, link, watch)
  }
}
