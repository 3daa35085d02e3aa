import Foundation
import MemoCore
import MemoDiscovery
import MemoStore
import MemoTransport

#if canImport(Glibc)
  import Glibc
#endif

/// What each person sees before confirming: the code, and both device IDs.
public struct PairingOffer: Sendable {
  public let code: String
  public let ownID: DeviceID
  public let peerID: DeviceID
  /// The name the other device offered, when known before confirming (the guest reads it
  /// from the host's advertisement).
  public let peerName: String?
}

/// The pairing exchange on a fresh TLS connection (either side; it is symmetric). Nothing
/// is stored unless both people confirmed the same code: a refusal on either side, a
/// closed connection or a malformed answer stores nothing.
enum PairingExchange {
  static func run(
    _ connection: TLSConnection, identity: NodeIdentity, displayName: String, peerName: String?, trust: TrustStore,
    now: @Sendable () -> Timestamp, confirm: (PairingOffer) throws -> Bool
  ) throws -> TrustedPeer {
    guard let peerID = connection.peer else { throw MemoPeerError(.connection, "the pairing connection has no peer") }
    let exporter: [UInt8]
    do {
      exporter = try connection.exportKeyingMaterial(
        label: PairingCode.exporterLabel, length: PairingCode.exporterLength)
    } catch { throw MemoPeerError(.crypto, "could not derive the pairing code", diagnostics: error.description) }
    let offer = PairingOffer(
      code: PairingCode.code(fromExporter: exporter), ownID: identity.deviceID, peerID: peerID, peerName: peerName)
    guard try confirm(offer) else {
      try? connection.send(Frame(.pairRefuse))
      connection.shutdown()
      throw MemoPeerError(.cancelled, "pairing refused here; nothing was stored")
    }
    let answer: Frame?
    do {
      try connection.send(
        Frame(
          .pairConfirm,
          payload: PeerMessage.encode(
            PeerMessage.PairConfirm(
              name: displayName, discoveryKey: identity.discoveryKeyBase64,
              rotationSeconds: identity.advertisement.rotationSeconds))))
      answer = try connection.receive()
    } catch {
      throw MemoPeerError(
        .connection, "the pairing connection broke before the other device answered; nothing was stored",
        diagnostics: error.description)
    }
    guard let answer else {
      throw MemoPeerError(.cancelled, "the other device closed the pairing without confirming; nothing was stored")
    }
    switch answer.kind {
    case .pairConfirm:
      guard let confirmed = PeerMessage.decode(PeerMessage.PairConfirm.self, from: answer.payload),
        PeerMessage.isValidDiscoveryKey(confirmed.discoveryKey)
      else { throw MemoPeerError(.connection, "the other device sent a malformed confirmation; nothing was stored") }
      let offered = (try? TrustList.validate(name: confirmed.name)) != nil ? confirmed.name : "device-\(peerID.short)"
      return try trust.update { list in
        let peer = TrustedPeer(
          deviceID: peerID, name: list.availableName(offered, for: peerID), discoveryKey: confirmed.discoveryKey,
          rotationSeconds: confirmed.rotationSeconds, source: .pairing, added: now())
        try list.trust(peer)
        return peer
      }
    case .pairRefuse:
      throw MemoPeerError(
        .cancelled, "the other device refused the pairing (the codes may not have matched); nothing was stored")
    default:
      throw MemoPeerError(.connection, "the other device broke the pairing protocol; nothing was stored")
    }
  }

  /// Connection limits for pairing: people take their time to compare codes.
  static var limits: ConnectionLimits {
    var limits = ConnectionLimits()
    limits.idleSeconds = 300
    return limits
  }
}

/// Pairing, from either side: `openWindow` for `memo-peer pair --accept` (advertised with
/// `pair=1` and the chosen display name; pairs with the first device whose person confirms
/// the code), `candidates` and `pair` for `memo-peer pair`.
public struct Pairing: Sendable {
  public let gate: ConsentGate
  public let identity: NodeIdentity
  public let trust: TrustStore
  let clock: @Sendable () -> Timestamp

  public init(gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, clock: @escaping @Sendable () -> Timestamp)
  {
    self.gate = gate
    self.identity = identity
    self.trust = trust
    self.clock = clock
  }

  public func openWindow(
    seconds window: Double, displayName: String, onOpen: @escaping @Sendable (String) -> Void,
    confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) async throws -> TrustedPeer {
    let outcome = PairingOutcome()
    let (identity, trust, clock) = (self.identity, self.trust, self.clock)
    let server = try TLSServer(
      port: 0, context: TLSContext(identity: identity.device, role: .server), limits: PairingExchange.limits,
      maximumConnections: 1, accepts: { _ in true }, events: { _ in },
      handler: { connection in
        guard outcome.begin() else { return }
        outcome.finish(
          Result {
            try PairingExchange.run(
              connection, identity: identity, displayName: displayName, peerName: nil, trust: trust, now: clock,
              confirm: confirm)
          })
      })
    defer { server.stop() }
    // Its own instance name (not the rotating pseudonym), so a `serve` on the same host
    // keeps its advertisement; random, so it links to nothing.
    let suffix = String(UInt32.random(in: 0x10_0000...0xFF_FFFF), radix: 16)
    let registration = try await gate.discovery.register(
      name: "memo-peer-pairing-" + suffix, type: LocalNetworkManifest.memoPeerServiceType,
      port: server.port, txt: Advertisement.pairingTXTRecord(displayName: displayName))
    defer { registration.withdraw() }
    onOpen(registration.name)
    let closes = Deadline.after(seconds: window)
    while true {
      if let result = outcome.result { return try result.get() }
      if closes.hasPassed && !outcome.started {
        throw MemoPeerError(
          .cancelled,
          "the pairing window closed after \(Int(window)) s without a confirmed pairing; nothing was stored",
          hint: "run `memo-peer pair` on the other device while this window is open")
      }
      try await Task.sleep(for: .milliseconds(100))
    }
  }
}

/// The first pairing connection's result, handed from its thread to the waiting command.
final class PairingOutcome: @unchecked Sendable {
  private let lock = NSLock()
  private var begun = false
  private var finished: Result<TrustedPeer, any Error>?

  /// True for the first connection only: one pairing per window.
  func begin() -> Bool {
    lock.withLock {
      defer { begun = true }
      return !begun
    }
  }

  func finish(_ result: Result<TrustedPeer, any Error>) { lock.withLock { finished = result } }
  var started: Bool { lock.withLock { begun } }
  var result: Result<TrustedPeer, any Error>? { lock.withLock { finished } }
}

extension Pairing {
  /// Devices advertising an open pairing window, collected for `timeout` seconds (or until
  /// one named `wanted` shows up).
  public func candidates(timeout: Double, wanted: String?) async throws -> [PeerSighting] {
    let sightings = try PeerBrowser.sightings(
      discovery: gate.discovery, type: LocalNetworkManifest.memoPeerServiceType, resolve: true,
      ownIdentity: identity.advertisement, clock: clock)
    let found = SightingList()
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for try await sighting in sightings where sighting.event == .added && !sighting.own {
          guard sighting.pairingName != nil, sighting.port != nil, !sighting.addresses.isEmpty else { continue }
          found.append(sighting)
          if let wanted, sighting.pairingName?.lowercased() == wanted.lowercased() { return }
        }
      }
      group.addTask { try await Task.sleep(for: .milliseconds(Int(timeout * 1000))) }
      try await group.next()
      group.cancelAll()
    }
    return found.all
  }

  public func pair(
    with sighting: PeerSighting, displayName: String, confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) throws -> TrustedPeer {
    guard let port = sighting.port else { throw MemoPeerError(.connection, "the pairing device has no port") }
    let client = TLSClient(
      context: try TLSContext(identity: identity.device, role: .client), limits: PairingExchange.limits)
    var lastError: TransportError?
    for address in sighting.addresses.sorted(by: { !$0.contains(":") && $1.contains(":") }) {
      let connection: TLSConnection
      do throws(TransportError) {
        connection = try client.connect(
          host: address, port: port, interfaceIndex: if_nametoindex(sighting.interface), accepts: { _ in true })
      } catch {
        lastError = error
        continue
      }
      return try PairingExchange.run(
        connection, identity: identity, displayName: displayName, peerName: sighting.pairingName, trust: trust,
        now: clock, confirm: confirm)
    }
    throw MemoPeerError(
      .connection, "could not connect to \((sighting.pairingName ?? sighting.instance).terminalSafe) to pair",
      hint: "check that its pairing window is still open", diagnostics: lastError?.description)
  }
}

/// Sightings collected by one task and read by another.
final class SightingList: @unchecked Sendable {
  private let lock = NSLock()
  private var items: [PeerSighting] = []
  func append(_ item: PeerSighting) { lock.withLock { items.append(item) } }
  var all: [PeerSighting] { lock.withLock { items } }
}
