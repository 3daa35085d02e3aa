import FoundationEssentials
import MemoCore

/// The pairing exchange, version 2 (docs/PROTOCOL.md, "Pairing"), as a value-type state
/// machine: frames and the person's answer go in, frames to send and what to do come out. It
/// does no I/O, so it is tested host against guest with no network, a byte at a time, out of
/// order, and with a lying host; the driver (MemoNode's `PairingExchange`) only carries frames
/// between it and the connection and asks the person when told to.
///
/// The exchange, after a TLS handshake with ALPN `memo-peer-pair/2`:
///
///     host                                   guest
///     pair-commit {SHA-256(n_h ‖ E ‖ ids)} →
///                                          ← pair-nonce {n_g}
///     pair-reveal {n_h}                    →  (checks the commitment)
///     both show code = HKDF(E, n_h ‖ n_g, ids) mod 10^6 and ask their person
///     pair-confirm {name}                  ↔  pair-confirm {name}   (each after its person)
///     pair-key {discovery key, rotation}   ↔  pair-key               (each after both confirms)
///     both store the other
///
/// A refusal, a mismatched reveal, a malformed or unexpected frame, or a closed connection at
/// any point ends it with nothing stored on either side — except that a connection cut
/// between the two `pair-key` frames leaves only the side that received one trusting the
/// other (both people had confirmed by then). The discovery key never leaves before both
/// people confirmed.
public struct PairingMachine: DrivenMachine, Sendable {
  public enum Role: Sendable, Equatable {
    /// `pair --accept`: the TLS server; commits first.
    case host
    /// `pair`: the TLS client; sends its nonce after the commitment.
    case guest
  }

  /// What this side brings to one exchange.
  public struct Setup: Sendable {
    public var role: Role
    /// SSL_export_keying_material(`PairingProtocol.exporterLabel`, 32 bytes) of this connection.
    public var exporter: [UInt8]
    /// This side's fresh random nonce (`PairingProtocol.nonceLength` bytes).
    public var nonce: [UInt8]
    public var ownID: DeviceID
    /// The device the other side proved it holds the key of (TLS).
    public var peerID: DeviceID
    /// The name this side's person chose for this device (already valid).
    public var ownName: String
    /// This side's discovery key (base64) and rotation, sent only after both confirmed.
    public var ownKey: PeerMessage.PairKey

    public init(
      role: Role, exporter: [UInt8], nonce: [UInt8], ownID: DeviceID, peerID: DeviceID, ownName: String,
      ownKey: PeerMessage.PairKey
    ) {
      self.role = role
      self.exporter = exporter
      self.nonce = nonce
      self.ownID = ownID
      self.peerID = peerID
      self.ownName = ownName
      self.ownKey = ownKey
    }
  }

  /// What the driver feeds in.
  public enum Event: Sendable, Equatable {
    case frame(Frame)
    /// The person's answer to `askPerson`.
    case personAnswered(confirmed: Bool)
    /// The connection ended (cleanly or not).
    case closed
  }

  /// The other device as it is to be stored.
  public struct Paired: Sendable, Equatable {
    public var name: String
    public var discoveryKey: String
    public var rotationSeconds: Int64
  }

  /// What the driver does, in order.
  public enum Action: Sendable, Equatable {
    case send(Frame)
    /// Show the code (with both device IDs) and ask the person whether the other screen shows
    /// the same; answer with `.personAnswered`.
    case askPerson(code: String)
    /// Both people confirmed and both keys crossed: store the other device. The exchange is over.
    case store(Paired)
    /// The exchange is over without a pairing; nothing may be stored.
    case fail(PairingFailure)
  }

  enum State: Sendable, Equatable {
    case notStarted
    /// Guest: waiting for `pair-commit`.
    case awaitingCommit
    /// Host: committed, waiting for `pair-nonce`.
    case awaitingNonce
    /// Guest: sent its nonce, waiting for `pair-reveal`.
    case awaitingReveal(commitment: [UInt8])
    /// The code is shown: waiting for this side's person (`ownConfirmed`) and the other
    /// side's confirmation (`peerName`, the name it offered), then for the other side's key.
    case comparing(ownConfirmed: Bool, peerName: String?)
    case finished
  }

  private let setup: Setup
  private let crypto: any PairingCryptography
  private var state = State.notStarted
  /// Whether a code was shown to the person: such an attempt counts towards the limit.
  public private(set) var codeShown = false

  public init(_ setup: Setup, crypto: any PairingCryptography) {
    self.setup = setup
    self.crypto = crypto
  }

  /// Whether the exchange is over (after `store` or `fail`).
  public var isFinished: Bool { state == .finished }

  /// The first actions: the host commits at once; the guest waits.
  public mutating func start() -> [Action] {
    guard state == .notStarted else { return [] }
    guard setup.exporter.count == PairingProtocol.exporterLength, setup.nonce.count == PairingProtocol.nonceLength
    else { return finish(.cryptoFailed) }
    switch setup.role {
    case .guest:
      state = .awaitingCommit
      return []
    case .host:
      guard
        let commitment = try? PairingCode.commitment(
          hostNonce: setup.nonce, exporter: setup.exporter, host: setup.ownID, guest: setup.peerID, crypto: crypto)
      else { return finish(.cryptoFailed) }
      state = .awaitingNonce
      return [.send(message(.pairCommit, PeerMessage.PairCommit(commitment: base64(commitment))))]
    }
  }

  /// Bytes that break the framing: the pairing fails as a protocol violation.
  public mutating func framingFailed(_ error: FrameError) -> [Action] {
    refuse(.protocolViolation(error.description))
  }

  public static func received(_ frame: Frame?) -> Event { frame.map { .frame($0) } ?? .closed }

  public mutating func handle(_ event: Event) -> [Action] {
    guard !isFinished else { return [] }
    switch event {
    case .closed: return finish(.closed)
    case .personAnswered(let confirmed): return personAnswered(confirmed)
    case .frame(let frame): return received(frame)
    }
  }

  // MARK: - Transitions

  private mutating func personAnswered(_ confirmed: Bool) -> [Action] {
    guard case .comparing(ownConfirmed: false, let peerName) = state else { return [] }
    guard confirmed else {
      return [.send(message(.pairRefuse, PeerMessage.PairRefuse(reason: .refused)))] + finish(.refusedHere)
    }
    state = .comparing(ownConfirmed: true, peerName: peerName)
    var actions: [Action] = [.send(message(.pairConfirm, PeerMessage.PairConfirm(name: setup.ownName)))]
    if peerName != nil { actions.append(sendKey()) }
    return actions
  }

  private mutating func received(_ frame: Frame) -> [Action] {
    if frame.kind == .pairRefuse { return finish(.refusedThere) }
    switch (state, frame.kind) {
    case (.awaitingCommit, .pairCommit):
      guard let commit = PeerMessage.decode(PeerMessage.PairCommit.self, from: frame.payload),
        let commitment = PeerMessage.bytes(base64: commit.commitment, count: 32)
      else { return refuse(.protocolViolation("malformed pair-commit")) }
      state = .awaitingReveal(commitment: commitment)
      return [.send(message(.pairNonce, PeerMessage.PairNonce(nonce: base64(setup.nonce))))]
    case (.awaitingNonce, .pairNonce):
      guard let nonce = decodeNonce(frame) else { return refuse(.protocolViolation("malformed pair-nonce")) }
      return showCode(
        hostNonce: setup.nonce, guestNonce: nonce,
        first: [
          .send(message(.pairReveal, PeerMessage.PairNonce(nonce: base64(setup.nonce))))
        ])
    case (.awaitingReveal(let commitment), .pairReveal):
      guard let nonce = decodeNonce(frame) else { return refuse(.protocolViolation("malformed pair-reveal")) }
      guard
        let expected = try? PairingCode.commitment(
          hostNonce: nonce, exporter: setup.exporter, host: setup.peerID, guest: setup.ownID, crypto: crypto)
      else { return finish(.cryptoFailed) }
      guard expected == commitment else {
        return [.send(message(.pairRefuse, PeerMessage.PairRefuse(reason: .commitment)))]
          + finish(.commitmentMismatch)
      }
      return showCode(hostNonce: nonce, guestNonce: setup.nonce, first: [])
    case (.comparing(let ownConfirmed, peerName: nil), .pairConfirm):
      guard let confirm = PeerMessage.decode(PeerMessage.PairConfirm.self, from: frame.payload) else {
        return refuse(.protocolViolation("malformed pair-confirm"))
      }
      guard DeviceName.isValidPairingName(confirm.name) else { return refuse(.invalidName) }
      state = .comparing(ownConfirmed: ownConfirmed, peerName: confirm.name)
      return ownConfirmed ? [sendKey()] : []
    case (.comparing(ownConfirmed: true, let peerName?), .pairKey):
      guard let key = PeerMessage.decode(PeerMessage.PairKey.self, from: frame.payload),
        PeerMessage.isValidDiscoveryKey(key.discoveryKey), Advertisement.rotationRange.contains(key.rotationSeconds)
      else { return refuse(.protocolViolation("malformed pair-key")) }
      state = .finished
      return [.store(Paired(name: peerName, discoveryKey: key.discoveryKey, rotationSeconds: key.rotationSeconds))]
    case (.awaitingCommit, .pairConfirm), (.awaitingNonce, .pairConfirm):
      // Version 1 confirmed (with its discovery key) without any commitment: an older peer
      // that got past the ALPN check. Its key is not kept.
      return refuse(.olderPeer)
    default:
      return refuse(.protocolViolation("unexpected \(frame.kind) frame"))
    }
  }

  private mutating func showCode(hostNonce: [UInt8], guestNonce: [UInt8], first: [Action]) -> [Action] {
    let (host, guest) = setup.role == .host ? (setup.ownID, setup.peerID) : (setup.peerID, setup.ownID)
    guard
      let code = try? PairingCode.code(
        exporter: setup.exporter, hostNonce: hostNonce, guestNonce: guestNonce, host: host, guest: guest,
        crypto: crypto)
    else { return finish(.cryptoFailed) }
    state = .comparing(ownConfirmed: false, peerName: nil)
    codeShown = true
    return first + [.askPerson(code: code)]
  }

  private func sendKey() -> Action { .send(message(.pairKey, setup.ownKey)) }

  /// Tells the other side why (best effort) and ends.
  private mutating func refuse(_ failure: PairingFailure) -> [Action] {
    let reason: PeerMessage.PairRefuse.Reason = failure == .commitmentMismatch ? .commitment : .protocolError
    return [.send(message(.pairRefuse, PeerMessage.PairRefuse(reason: reason)))] + finish(failure)
  }

  private mutating func finish(_ failure: PairingFailure) -> [Action] {
    state = .finished
    return [.fail(failure)]
  }

  private func decodeNonce(_ frame: Frame) -> [UInt8]? {
    guard let message = PeerMessage.decode(PeerMessage.PairNonce.self, from: frame.payload) else { return nil }
    return PeerMessage.bytes(base64: message.nonce, count: PairingProtocol.nonceLength)
  }

  private func message(_ kind: Frame.Kind, _ value: some Encodable) -> Frame {
    Frame(kind, payload: PeerMessage.encode(value))
  }

  private func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}

/// Why a pairing ended without storing anything.
public enum PairingFailure: Error, Sendable, Equatable {
  /// This side's person refused.
  case refusedHere
  /// The other side refused (its person, or it found something wrong).
  case refusedThere
  /// The host's revealed nonce does not match its commitment: a device in the middle, or a
  /// broken peer.
  case commitmentMismatch
  /// The other side offered a name that is not printable text of at most 63 bytes.
  case invalidName
  /// The other side speaks pairing version 1 (no commitment).
  case olderPeer
  /// A malformed, oversized or unexpected frame.
  case protocolViolation(String)
  /// The connection ended before the pairing finished.
  case closed
  /// The cryptographic library failed, or the exporter or nonce had the wrong size.
  case cryptoFailed

  /// The error a person sees; every one ends with "nothing was stored".
  public var error: MemoPeerError {
    switch self {
    case .refusedHere: MemoPeerError(.cancelled, "pairing refused here; nothing was stored")
    case .refusedThere:
      MemoPeerError(
        .cancelled, "the other device refused the pairing (the codes may not have matched); nothing was stored")
    case .commitmentMismatch:
      MemoPeerError(
        .untrustedPeer,
        "the other device's pairing code does not match the commitment it made first: a device in the middle may be trying to pair; nothing was stored",
        hint: "check that you are pairing with the device you mean, on a network you trust, and try again")
    case .invalidName:
      MemoPeerError(
        .connection,
        "the other device offered a name that is not printable text of at most 63 bytes; nothing was stored",
        remedy: .pairWithName)
    case .olderPeer: PairingFailure.olderPeerError
    case .protocolViolation(let detail):
      MemoPeerError(
        .connection, "the other device broke the pairing protocol; nothing was stored", diagnostics: detail)
    case .closed:
      MemoPeerError(.connection, "the pairing connection closed before the pairing finished; nothing was stored")
    case .cryptoFailed: MemoPeerError(.crypto, "could not derive the pairing code; nothing was stored")
    }
  }

  /// What an older (version 1) peer is told about, from either side.
  public static let olderPeerError = MemoPeerError(
    .connection,
    "the other device runs an older memo-peer that pairs without the commitment step (pairing version 1); nothing was stored",
    hint: "update memo-peer on the other device, then pair again")
}

/// The attempts limit: one pairing per window, and after `limit` refused or failed attempts
/// within `window` a device stops pairing (the window closes and says why) until the oldest
/// of them is older than the window. An attempt counts once a code was shown to the person,
/// or when a commitment did not match: each is one guess for a device in the middle, so the
/// limit bounds its chance at 3 × 10^-6 per 10 minutes. Connections that never got that far
/// (a port scan, an older peer) do not count, so a stranger cannot close a window for free.
public struct PairingAttempts: Codable, Sendable, Equatable {
  public static let limit = 3
  /// Ten minutes, in milliseconds.
  public static let window: Timestamp = 10 * 60 * 1000

  /// When counted attempts failed (ms since the epoch), oldest first.
  public private(set) var failures: [Timestamp]

  public init(failures: [Timestamp] = []) { self.failures = failures.sorted() }

  /// Failures within the window before `now` (a clock set back keeps them). The times come
  /// from a file: differences too large for 64 bits mean far past or far future, never a trap.
  public func recent(at now: Timestamp) -> [Timestamp] {
    failures.filter { failure in
      let (age, overflow) = now.subtractingReportingOverflow(failure)
      return overflow ? failure > now : age < Self.window
    }
  }

  /// Whether pairing is refused now.
  public func isBlocked(at now: Timestamp) -> Bool { recent(at: now).count >= Self.limit }

  /// When pairing is possible again, if it is blocked now.
  public func reopens(at now: Timestamp) -> Timestamp? {
    let recent = recent(at: now)
    guard recent.count >= Self.limit else { return nil }
    let (reopens, overflow) = recent[recent.count - Self.limit].addingReportingOverflow(Self.window)
    return overflow ? Timestamp.max : reopens
  }

  /// Whole minutes until pairing reopens (at least 1), for a person; nil when it is open.
  public func minutesUntilReopen(at now: Timestamp) -> Int? {
    guard let reopens = reopens(at: now) else { return nil }
    let (wait, overflow) = reopens.subtractingReportingOverflow(now)
    guard !overflow else { return Int.max / 60_000 }
    return Int(max(1, (wait / 60_000) + (wait % 60_000 > 0 ? 1 : 0)))
  }

  /// Records a counted failure; old ones are forgotten.
  public mutating func recordFailure(at now: Timestamp) { failures = recent(at: now) + [now] }

  /// What a window does after an attempt.
  public enum Decision: Sendable, Equatable {
    /// Paired: the window's one pairing is made.
    case paired
    /// Keep waiting for another attempt.
    case keepOpen
    /// Too many failures: close the window.
    case close(MemoPeerError)
  }

  /// Records the attempt's outcome (if it counts) and says what the window does next.
  public mutating func decide(paired: Bool, counts: Bool, at now: Timestamp) -> Decision {
    if paired { return .paired }
    guard counts else { return .keepOpen }
    recordFailure(at: now)
    return isBlocked(at: now) ? .close(Self.tooManyError) : .keepOpen
  }

  /// Why pairing stops: said when the window closes and when a new one is refused.
  public static let tooManyError = MemoPeerError(
    .cancelled,
    "\(limit) pairing attempts failed or were refused within 10 minutes, so this device stops pairing for now; nothing was stored",
    hint: "a device in the middle may be trying codes; wait 10 minutes, check who is on the network, and pair again")
}
