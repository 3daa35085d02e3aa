import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoDiscovery
import MemoProtocol
import MemoTransport
import MemoVault
import Synchronization

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

/// Drives one pairing exchange on a fresh channel: a thin loop that feeds the channel's
/// frames and the person's answer into `PairingMachine` (MemoProtocol) and carries out what it
/// says. Nothing is stored unless the machine says so, which it does only once both people
/// confirmed and both keys crossed. Blocking (it waits for a person and for the peer): it
/// runs on the connection's thread or the command's, never on Swift's cooperative pool.
enum PairingExchange {
  /// How one attempt ended, and whether it counts towards the attempts limit.
  struct Outcome {
    var result: Result<TrustedPeer, MemoPeerError>
    var counts: Bool
  }

  /// A TLS connection pairs only when both sides agreed on the pairing protocol (ALPN): an
  /// older peer is named as such.
  static func run(
    _ connection: TLSConnection, role: PairingMachine.Role, identity: NodeIdentity, displayName: String,
    peerName: String?, trust: TrustStore, now: @Sendable () -> Timestamp, confirm: (PairingOffer) throws -> Bool
  ) -> Outcome {
    guard connection.negotiatedProtocol == PairingProtocol.alpn else {
      connection.close()
      return Outcome(result: .failure(PairingFailure.olderPeer.error), counts: false)
    }
    return run(
      channel: connection, role: role, identity: identity, displayName: displayName, peerName: peerName, trust: trust,
      now: now, confirm: confirm)
  }

  /// The exchange over any frame channel (an in-memory one in tests). `beforeCode`: how long
  /// each frame may take before a code is shown.
  static func run(
    channel connection: any FrameChannel, role: PairingMachine.Role, identity: NodeIdentity, displayName: String,
    peerName: String?, trust: TrustStore, now: @Sendable () -> Timestamp, beforeCode: Double = beforeCodeSeconds,
    confirm: (PairingOffer) throws -> Bool
  ) -> Outcome {
    defer { connection.close() }
    guard let peerID = connection.peer else {
      return Outcome(result: .failure(PairingFailure.closed.error), counts: false)
    }
    let exporter: [UInt8]
    let nonce: [UInt8]
    do {
      exporter = try connection.exportKeyingMaterial(
        label: PairingProtocol.exporterLabel, length: PairingProtocol.exporterLength)
      nonce = try SystemRandom.bytes(PairingProtocol.nonceLength)
    } catch {
      return Outcome(result: .failure(PairingFailure.cryptoFailed.error), counts: false)
    }
    var machine = PairingMachine(
      .init(
        role: role, exporter: exporter, nonce: nonce, ownID: identity.deviceID, peerID: peerID, ownName: displayName,
        ownKey: PeerMessage.PairKey(
          discoveryKey: identity.discoveryKeyBase64, rotationSeconds: identity.advertisement.rotationSeconds)),
      crypto: OpenSSLPairingCryptography())
    var promptError: MemoPeerError?
    // Whether a code was shown: the machine's `codeShown`, which it sets exactly as it asks
    // the person (the run holds the machine, so this driver keeps its own note).
    var codeShown = false
    return MachineDriver.run(
      &machine, from: machine.start(),
      perform: { action -> MachineDriver<PairingMachine>.Step<Outcome> in
        switch action {
        case .send(let frame):
          // A send that fails shows as a closed connection on the next read.
          try? connection.send(frame)
          return .done
        case .askPerson(let code):
          codeShown = true
          let answer: Bool
          do {
            answer = try confirm(PairingOffer(code: code, ownID: identity.deviceID, peerID: peerID, peerName: peerName))
          } catch {
            promptError = error as? MemoPeerError ?? MemoPeerError(.cancelled, "no answer; nothing was stored")
            answer = false
          }
          return .answer(.personAnswered(confirmed: answer))
        case .store(let paired):
          do {
            let peer = try trust.update { list in
              let peer = TrustedPeer(
                deviceID: peerID, name: list.availableName(paired.name, for: peerID),
                discoveryKey: paired.discoveryKey, rotationSeconds: paired.rotationSeconds, source: .pairing,
                added: now())
              try list.trust(peer)
              return peer
            }
            return .finish(Outcome(result: .success(peer), counts: true))
          } catch {
            return .finish(
              Outcome(result: .failure(error as? MemoPeerError ?? PairingFailure.closed.error), counts: false))
          }
        case .fail(let failure):
          let counts = codeShown || failure == .commitmentMismatch
          return .finish(Outcome(result: .failure(promptError ?? failure.error), counts: counts))
        }
      },
      receive: { machine in
        // Until a code is shown no person is involved: the other side's frames come at once,
        // so a stranger that connects and says nothing holds the window's one connection
        // for seconds, not for the minutes people get to compare codes.
        let deadline: Deadline? = machine.codeShown ? nil : .after(seconds: beforeCode)
        do throws(TransportError) { return try connection.receive(before: deadline) } catch { return nil }
      })
  }

  /// How long each frame may take before a code is shown (no person waits on them).
  static let beforeCodeSeconds = 10.0

  /// Connection limits for pairing: people take their time to compare codes; every pairing
  /// frame is small.
  static var limits: ConnectionLimits {
    var limits = ConnectionLimits()
    limits.idleSeconds = 300
    limits.maximumPayload = PairingProtocol.maximumFrame
    return limits
  }
}

/// Pairing, from either side: `openWindow` for `memo-peer pair --accept` (advertised with
/// `pair=1` and the chosen display name; one pairing per window, failed attempts allowed up
/// to the attempts limit), `candidates` and `pair` for `memo-peer pair`.
public struct Pairing: Sendable {
  public let gate: ConsentGate
  public let identity: NodeIdentity
  public let trust: TrustStore
  public let attempts: PairingAttemptStore
  let clock: @Sendable () -> Timestamp

  public init(
    gate: ConsentGate, identity: NodeIdentity, trust: TrustStore, attempts: PairingAttemptStore,
    clock: @escaping @Sendable () -> Timestamp
  ) {
    self.gate = gate
    self.identity = identity
    self.trust = trust
    self.attempts = attempts
    self.clock = clock
  }

  /// Refuses to start while the attempts limit holds, saying when pairing reopens.
  func checkAttempts() throws {
    guard let minutes = try attempts.load().minutesUntilReopen(at: clock()) else { return }
    let error = PairingAttempts.tooManyError
    throw MemoPeerError(
      error.code, error.message,
      hint: "pairing reopens in \(minutes) minute\(minutes == 1 ? "" : "s"); a device in the middle may be trying codes"
    )
  }

  /// Opens the window and waits for a pairing. `onNotice` tells the person about an attempt
  /// that failed while the window stays open.
  public func openWindow(
    seconds window: Double, displayName: String, onOpen: @escaping @Sendable (String) -> Void,
    onNotice: @escaping @Sendable (String) -> Void, confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) async throws -> TrustedPeer {
    try DeviceName.validatePairingName(displayName)
    try checkAttempts()
    let state = PairingWindowState()
    let (identity, trust, clock, attempts) = (self.identity, self.trust, self.clock, self.attempts)
    let server = try TLSServer(
      port: 0, context: TLSContext(identity: identity.device, role: .server, purpose: .pairing),
      limits: PairingExchange.limits, maximumConnections: 1, accepts: { _ in true }, events: { _ in },
      handler: { connection in
        guard state.begin() else { return }
        let outcome = PairingExchange.run(
          connection, role: .host, identity: identity, displayName: displayName, peerName: nil, trust: trust,
          now: clock, confirm: confirm)
        let decision: PairingAttempts.Decision
        do {
          decision = try attempts.update {
            $0.decide(paired: (try? outcome.result.get()) != nil, counts: outcome.counts, at: clock())
          }
        } catch {
          state.finish(.failure(error))
          return
        }
        switch (decision, outcome.result) {
        case (.paired, .success(let peer)): state.finish(.success(peer))
        case (.close(let error), _): state.finish(.failure(error))
        case (_, .failure(let error)):
          onNotice(error.message + "; the pairing window stays open")
          state.end()
        default: state.end()
        }
      })
    defer { server.stop() }
    // Its own instance name (not the rotating pseudonym), so a `serve` on the same host
    // keeps its advertisement; random, so it links to nothing.
    let suffix = String(UInt32.random(in: 0x10_0000...0xFF_FFFF), radix: 16)
    let registration = try await gate.discovery.register(
      name: "memo-peer-pairing-" + suffix, type: LocalNetworkManifest.memoPeerServiceType,
      port: server.port, txt: Advertisement.pairingTXTRecord(displayName: displayName))
    onOpen(registration.name)
    let result: Result<TrustedPeer, any Error>
    do {
      result = .success(try await Self.waitForOutcome(state, window: window))
    } catch {
      result = .failure(error)
    }
    // Awaited, not waited for: withdrawing blocks no thread.
    await registration.withdraw()
    return try result.get()
  }

  /// The window's pairing, or a refusal once it closed with none under way.
  private static func waitForOutcome(_ state: PairingWindowState, window: Double) async throws -> TrustedPeer {
    let closes = Deadline.after(seconds: window)
    while true {
      if let result = state.result { return try result.get() }
      if closes.hasPassed && !state.busy {
        throw MemoPeerError(
          .cancelled,
          "the pairing window closed after \(Int(window)) s without a confirmed pairing; nothing was stored",
          remedy: .pairOnOtherDevice)
      }
      try await closes.clock.sleep(for: .milliseconds(100))
    }
  }
}

/// The window's attempts, shared between the connection threads and the waiting command:
/// one attempt at a time, and the window's result once there is one.
final class PairingWindowState: Sendable {
  private struct State {
    var busy = false
    var result: Result<TrustedPeer, any Error>?
  }

  private let state = Mutex(State())

  /// True when no attempt runs and the window is still open: this connection is the attempt.
  func begin() -> Bool {
    state.withLock {
      guard !$0.busy, $0.result == nil else { return false }
      $0.busy = true
      return true
    }
  }

  /// The attempt failed; the window waits for another.
  func end() { state.withLock { $0.busy = false } }

  /// The window's outcome: a pairing, or why it closed.
  func finish(_ result: Result<TrustedPeer, any Error>) {
    state.withLock {
      $0.result = result
      $0.busy = false
    }
  }

  var busy: Bool { state.withLock { $0.busy } }
  var result: Result<TrustedPeer, any Error>? { state.withLock { $0.result } }
}

extension Pairing {
  /// Devices advertising an open pairing window, collected for `timeout` seconds (or until
  /// one named `wanted` shows up). An advertisement whose name is not printable text of at
  /// most 63 bytes is refused here (`onRefused`), never offered to the person.
  public func candidates(
    timeout: Double, wanted: String?, onRefused: @escaping @Sendable (PeerSighting) -> Void = { _ in }
  ) async throws -> [PeerSighting] {
    let sightings = try PeerBrowser.sightings(
      discovery: gate.discovery, type: LocalNetworkManifest.memoPeerServiceType, resolve: true,
      ownIdentity: identity.advertisement, clock: clock)
    let found = SightingList()
    _ = try await untilDeadline(.after(seconds: timeout)) {
      for try await sighting in sightings where sighting.event == .added && !sighting.own {
        guard let name = sighting.pairingName, sighting.port != nil, !sighting.addresses.isEmpty else { continue }
        guard DeviceName.isValidPairingName(name) else {
          onRefused(sighting)
          continue
        }
        found.append(sighting)
        if let wanted, name.lowercased() == wanted.lowercased() { return }
      }
    }
    return found.all
  }

  public func pair(
    with sighting: PeerSighting, displayName: String, confirm: @escaping @Sendable (PairingOffer) throws -> Bool
  ) throws -> TrustedPeer {
    try DeviceName.validatePairingName(displayName)
    try checkAttempts()
    guard let port = sighting.port else { throw MemoPeerError(.connection, "the pairing device has no port") }
    let client = TLSClient(
      context: try TLSContext(identity: identity.device, role: .client, purpose: .pairing),
      limits: PairingExchange.limits)
    let connection: TLSConnection
    do throws(TransportError) {
      connection = try client.connect(
        toFirstOf: sighting.addresses, port: port, interfaceIndex: if_nametoindex(sighting.interface),
        accepts: { _ in true })
    } catch {
      throw MemoPeerError(
        .connection, "could not connect to \((sighting.pairingName ?? sighting.instance).terminalSafe) to pair",
        hint: "check that its pairing window is still open", diagnostics: error.description)
    }
    let outcome = PairingExchange.run(
      connection, role: .guest, identity: identity, displayName: displayName, peerName: sighting.pairingName,
      trust: trust, now: clock, confirm: confirm)
    if case .failure = outcome.result, outcome.counts {
      try attempts.update { $0.recordFailure(at: clock()) }
    }
    return try outcome.result.get()
  }
}

/// Sightings collected by one task and read by another.
final class SightingList: Sendable {
  private let items = Mutex<[PeerSighting]>([])
  func append(_ item: PeerSighting) { items.withLock { $0.append(item) } }
  var all: [PeerSighting] { items.withLock { $0 } }
}
