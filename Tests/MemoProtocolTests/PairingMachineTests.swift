import Foundation
import MemoCrypto
import XCTest

@testable import MemoCore
@testable import MemoProtocol

/// The pairing exchange with no I/O: a host machine and a guest machine wired together by the
/// test, which decides what arrives when (whole frames, single bytes, out of order, tampered).
/// The hash and KDF are OpenSSL's, as in the product.
final class PairingMachineTests: XCTestCase {
  let crypto = OpenSSLPairingCryptography()
  let hostID = DeviceID(bytes: [UInt8](repeating: 0xAA, count: 32))!
  let guestID = DeviceID(bytes: [UInt8](repeating: 0xBB, count: 32))!
  let hostKey = PeerMessage.PairKey(
    discoveryKey: Data(repeating: 1, count: 32).base64EncodedString(), rotationSeconds: 900)
  let guestKey = PeerMessage.PairKey(
    discoveryKey: Data(repeating: 2, count: 32).base64EncodedString(), rotationSeconds: 60)

  func bytes(_ range: Range<UInt8>) -> [UInt8] { Array(range) }

  func machines(exporter: [UInt8] = Array(UInt8(0)..<32), guestExporter: [UInt8]? = nil) -> (
    PairingMachine, PairingMachine
  ) {
    let host = PairingMachine(
      .init(
        role: .host, exporter: exporter, nonce: bytes(32..<64), ownID: hostID, peerID: guestID, ownName: "ay",
        ownKey: hostKey), crypto: crypto)
    let guest = PairingMachine(
      .init(
        role: .guest, exporter: guestExporter ?? exporter, nonce: bytes(64..<96), ownID: guestID, peerID: hostID,
        ownName: "bee", ownKey: guestKey), crypto: crypto)
    return (host, guest)
  }

  /// One side of a simulated connection: its machine, what it sent, what it was told to do.
  struct Side {
    var machine: PairingMachine
    /// The parser `TLSConnection` reads with: bytes fed here are framed as in production.
    var decoder = FrameDecoder(maximumPayload: PairingProtocol.maximumFrame)
    var outbox: [Frame] = []
    var codes: [String] = []
    var stored: PairingMachine.Paired?
    var failure: PairingFailure?
    /// Frames sent, in order, over the whole exchange.
    var sent: [Frame] = []

    init(_ machine: PairingMachine) { self.machine = machine }

    mutating func apply(_ actions: [PairingMachine.Action]) {
      for action in actions {
        switch action {
        case .send(let frame):
          outbox.append(frame)
          sent.append(frame)
        case .askPerson(let code): codes.append(code)
        case .store(let paired):
          XCTAssertNil(stored, "stored once")
          stored = paired
        case .fail(let failure):
          XCTAssertNil(self.failure, "failed once")
          self.failure = failure
        }
      }
    }

    mutating func take() -> [Frame] {
      defer { outbox = [] }
      return outbox
    }
  }

  /// Delivers every pending frame both ways until nothing moves, whole frames or `chunk`
  /// bytes at a time.
  func pump(_ a: inout Side, _ b: inout Side, chunk: Int? = nil) {
    while !(a.outbox.isEmpty && b.outbox.isEmpty) {
      deliver(a.take(), to: &b, chunk: chunk)
      deliver(b.take(), to: &a, chunk: chunk)
    }
  }

  func deliver(_ frames: [Frame], to side: inout Side, chunk: Int?) {
    guard let chunk else {
      for frame in frames { side.apply(side.machine.handle(.frame(frame))) }
      return
    }
    let bytes = frames.flatMap { $0.encoded() }
    var index = 0
    while index < bytes.count {
      side.apply(side.machine.receive(bytes: bytes[index..<min(index + chunk, bytes.count)], through: &side.decoder))
      index += chunk
    }
  }

  func started() -> (Side, Side) {
    let (hostMachine, guestMachine) = machines()
    var host = Side(hostMachine)
    var guest = Side(guestMachine)
    host.apply(host.machine.start())
    guest.apply(guest.machine.start())
    return (host, guest)
  }

  func kinds(_ frames: [Frame]) -> [Frame.Kind] { frames.map(\.kind) }

  // MARK: - The exchange

  func testBothSidesShowTheSameCodeAndStoreEachOtherAfterBothConfirm() {
    for chunk in [nil, 1, 3, 1000] {
      var (host, guest) = started()
      pump(&host, &guest, chunk: chunk)
      XCTAssertEqual(host.codes.count, 1)
      XCTAssertEqual(host.codes, guest.codes, "chunk \(String(describing: chunk))")
      XCTAssertEqual(kinds(host.sent), [.pairCommit, .pairReveal])
      XCTAssertEqual(kinds(guest.sent), [.pairNonce])
      host.apply(host.machine.handle(.personAnswered(confirmed: true)))
      pump(&host, &guest, chunk: chunk)
      XCTAssertFalse(kinds(host.sent).contains(.pairKey), "no key before the other person confirmed")
      XCTAssertNil(host.stored)
      guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
      pump(&host, &guest, chunk: chunk)
      XCTAssertEqual(host.stored, .init(name: "bee", discoveryKey: guestKey.discoveryKey, rotationSeconds: 60))
      XCTAssertEqual(guest.stored, .init(name: "ay", discoveryKey: hostKey.discoveryKey, rotationSeconds: 900))
      XCTAssertTrue(host.machine.isFinished && guest.machine.isFinished)
      XCTAssertNil(host.failure)
      XCTAssertNil(guest.failure)
    }
  }

  func testEveryOrderOfTheTwoConfirmationsEndsTheSame() {
    // guest first; both before any confirm frame moves; host first with frames in between.
    for order in 0..<3 {
      var (host, guest) = started()
      pump(&host, &guest)
      switch order {
      case 0:
        guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
        pump(&host, &guest)
        host.apply(host.machine.handle(.personAnswered(confirmed: true)))
      case 1:
        host.apply(host.machine.handle(.personAnswered(confirmed: true)))
        guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
      default:
        host.apply(host.machine.handle(.personAnswered(confirmed: true)))
        deliver(host.take(), to: &guest, chunk: 1)
        guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
      }
      pump(&host, &guest)
      XCTAssertEqual(host.stored?.name, "bee", "order \(order)")
      XCTAssertEqual(guest.stored?.name, "ay", "order \(order)")
      // The key went out only after both confirm frames existed.
      for side in [host, guest] {
        let kindsSent = kinds(side.sent)
        XCTAssertEqual(kindsSent.last, .pairKey)
        XCTAssertLessThan(kindsSent.firstIndex(of: .pairConfirm)!, kindsSent.firstIndex(of: .pairKey)!)
      }
    }
  }

  func testARefusalOnEitherSideStoresNothingAndNoKeyIsEverSent() {
    for refuser in ["host", "guest"] {
      var (host, guest) = started()
      pump(&host, &guest)
      if refuser == "host" {
        guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
        host.apply(host.machine.handle(.personAnswered(confirmed: false)))
      } else {
        host.apply(host.machine.handle(.personAnswered(confirmed: true)))
        guest.apply(guest.machine.handle(.personAnswered(confirmed: false)))
      }
      pump(&host, &guest)
      XCTAssertNil(host.stored)
      XCTAssertNil(guest.stored)
      XCTAssertEqual(refuser == "host" ? host.failure : guest.failure, .refusedHere)
      XCTAssertEqual(refuser == "host" ? guest.failure : host.failure, .refusedThere)
      XCTAssertFalse((host.sent + guest.sent).contains { $0.kind == .pairKey }, "the discovery key stayed home")
    }
  }

  func testAWrongRevealIsRefusedByTheGuestAndNothingIsStoredOnEitherSide() {
    var (host, guest) = started()
    deliver(host.take(), to: &guest, chunk: nil)  // commit
    deliver(guest.take(), to: &host, chunk: nil)  // nonce
    var frames = host.take()
    XCTAssertEqual(kinds(frames), [.pairReveal])
    // A lying host (or a device in the middle) reveals another nonce than it committed to.
    frames[0] = Frame(
      .pairReveal,
      payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: Data(repeating: 7, count: 32).base64EncodedString())))
    deliver(frames, to: &guest, chunk: nil)
    XCTAssertEqual(guest.failure, .commitmentMismatch)
    XCTAssertTrue(guest.codes.isEmpty, "no code is shown for a broken commitment")
    XCTAssertEqual(kinds(guest.outbox), [.pairRefuse])
    XCTAssertEqual(
      PeerMessage.decode(PeerMessage.PairRefuse.self, from: guest.outbox[0].payload)?.reason, "commitment")
    pump(&host, &guest)
    XCTAssertEqual(host.failure, .refusedThere)
    host.apply(host.machine.handle(.personAnswered(confirmed: true)))
    XCTAssertTrue(host.outbox.isEmpty, "a finished exchange sends nothing more")
    XCTAssertNil(host.stored)
    XCTAssertNil(guest.stored)
    XCTAssertEqual(PairingFailure.commitmentMismatch.error.code, .untrustedPeer)
  }

  func testACommitmentMadeForAnotherSessionDoesNotMatch() {
    // A machine in the middle holds two sessions with two exporters: a commitment (and
    // reveal) relayed from one session cannot pass in the other.
    let (hostMachine, _) = machines(exporter: bytes(0..<32))
    let (_, guestMachine) = machines(exporter: bytes(100..<132))
    var host = Side(hostMachine)
    var guest = Side(guestMachine)
    host.apply(host.machine.start())
    guest.apply(guest.machine.start())
    pump(&host, &guest)
    XCTAssertEqual(guest.failure, .commitmentMismatch)
    XCTAssertNil(guest.stored)
  }

  func testFramesOutOfOrderOrMalformedEndTheExchangeWithARefusal() {
    let stray: [(String, Frame)] = [
      ("nonce to a guest", Frame(.pairNonce, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: "AA==")))),
      ("key before anything", Frame(.pairKey, payload: PeerMessage.encode(guestKey))),
      ("a ping", Frame(.ping)),
      ("a hello", Frame(.hello, payload: Array("{}".utf8))),
      ("reveal before the commit", Frame(.pairReveal, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: "")))),
    ]
    for (name, frame) in stray {
      var (_, guest) = started()
      guest.apply(guest.machine.handle(.frame(frame)))
      guard case .protocolViolation = guest.failure else {
        return XCTFail("\(name): \(String(describing: guest.failure))")
      }
      XCTAssertEqual(kinds(guest.outbox), [.pairRefuse], name)
    }
    // The host: a key before both confirmed, a second nonce, a short nonce.
    for frame in [
      Frame(.pairKey, payload: PeerMessage.encode(guestKey)),
      Frame(
        .pairNonce, payload: PeerMessage.encode(PeerMessage.PairNonce(nonce: Data(count: 31).base64EncodedString()))),
      Frame(.pairCommit, payload: Array("not json".utf8)),
    ] {
      var (host, _) = started()
      _ = host.take()
      host.apply(host.machine.handle(.frame(frame)))
      guard case .protocolViolation = host.failure else { return XCTFail("\(frame.kind)") }
    }
    // A key from a peer whose person confirmed, before this side's person did.
    var (host, guest) = started()
    pump(&host, &guest)
    guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
    pump(&host, &guest)
    host.apply(host.machine.handle(.frame(Frame(.pairKey, payload: PeerMessage.encode(guestKey)))))
    guard case .protocolViolation = host.failure else {
      return XCTFail("early key: \(String(describing: host.failure))")
    }
    XCTAssertNil(host.stored)
  }

  func testABadKeyOrRotationIsRefused() {
    for key in [
      PeerMessage.PairKey(discoveryKey: "c2hvcnQ=", rotationSeconds: 900),
      PeerMessage.PairKey(discoveryKey: guestKey.discoveryKey, rotationSeconds: 0),
      PeerMessage.PairKey(discoveryKey: guestKey.discoveryKey, rotationSeconds: 10_000_000),
    ] {
      var (host, guest) = started()
      pump(&host, &guest)
      host.apply(host.machine.handle(.personAnswered(confirmed: true)))
      guest.apply(guest.machine.handle(.personAnswered(confirmed: true)))
      deliver(guest.take().filter { $0.kind != .pairKey }, to: &host, chunk: nil)
      host.apply(host.machine.handle(.frame(Frame(.pairKey, payload: PeerMessage.encode(key)))))
      guard case .protocolViolation = host.failure else { return XCTFail("\(key)") }
      XCTAssertNil(host.stored)
    }
  }

  func testANameThatIsNotPrintableIsRefusedOnReceipt() {
    for name in ["evil\u{1B}[2K\rcode: 999 999", "rlo\u{202E}", String(repeating: "x", count: 64), ""] {
      var (host, guest) = started()
      pump(&host, &guest)
      host.apply(host.machine.handle(.personAnswered(confirmed: true)))
      _ = host.take()
      host.apply(
        host.machine.handle(
          .frame(Frame(.pairConfirm, payload: PeerMessage.encode(PeerMessage.PairConfirm(name: name))))))
      XCTAssertEqual(host.failure, .invalidName, name.debugDescription)
      XCTAssertEqual(kinds(host.outbox), [.pairRefuse])
      XCTAssertFalse(host.sent.contains { $0.kind == .pairKey })
    }
  }

  func testAnOlderPeerIsRecognisedAndItsKeyIsNotKept() {
    // Version 1 sent its discovery key with its confirmation, before any commitment.
    let old = Array(
      #"{"name":"old","discovery_key":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","rotation_seconds":900}"#.utf8)
    for side in ["host", "guest"] {
      var (host, guest) = started()
      if side == "host" {
        _ = host.take()
        host.apply(host.machine.handle(.frame(Frame(.pairConfirm, payload: old))))
        XCTAssertEqual(host.failure, .olderPeer)
        XCTAssertNil(host.stored)
      } else {
        guest.apply(guest.machine.handle(.frame(Frame(.pairConfirm, payload: old))))
        XCTAssertEqual(guest.failure, .olderPeer)
      }
    }
    XCTAssertTrue(PairingFailure.olderPeer.error.hint?.contains("update memo-peer on the other device") ?? false)
  }

  func testAnOversizedFrameIsRefusedFromItsHeader() {
    var (_, guest) = started()
    // A header announcing 1 MiB: refused before any payload byte arrives.
    guest.apply(
      guest.machine.receive(bytes: [1, Frame.Kind.pairCommit.rawValue, 0, 0x10, 0, 0], through: &guest.decoder))
    guard case .protocolViolation(let detail) = guest.failure else { return XCTFail() }
    XCTAssertTrue(detail.contains("exceeds"), detail)
    var (_, other) = started()
    other.apply(other.machine.receive(bytes: [1, 99, 0, 0, 0, 0], through: &other.decoder))
    guard case .protocolViolation = other.failure else { return XCTFail() }
  }

  func testAClosedConnectionAtAnyPointStoresNothing() {
    // Close after each step of a full exchange: nothing stored where the exchange was cut.
    for cutAfter in 0..<6 {
      var (host, guest) = started()
      var step = 0
      func cut() -> Bool {
        defer { step += 1 }
        return step == cutAfter
      }
      var closed = false
      let moves: [(inout Side, inout Side) -> Void] = [
        { h, g in self.deliver(h.take(), to: &g, chunk: nil) },
        { h, g in self.deliver(g.take(), to: &h, chunk: nil) },
        { h, g in self.deliver(h.take(), to: &g, chunk: nil) },
        { h, g in h.apply(h.machine.handle(.personAnswered(confirmed: true))) },
        { h, g in g.apply(g.machine.handle(.personAnswered(confirmed: true))) },
        { h, g in self.pump(&h, &g) },
      ]
      for move in moves {
        if cut() {
          host.apply(host.machine.handle(.closed))
          guest.apply(guest.machine.handle(.closed))
          closed = true
          break
        }
        move(&host, &guest)
      }
      XCTAssertTrue(closed)
      XCTAssertNil(host.stored, "cut after \(cutAfter)")
      XCTAssertNil(guest.stored, "cut after \(cutAfter)")
      XCTAssertEqual(host.failure, .closed)
      XCTAssertEqual(guest.failure, .closed)
    }
  }

  func testOnlyAttemptsThatShowedACodeOrBrokeTheCommitmentCount() {
    var (host, guest) = started()
    XCTAssertFalse(host.machine.codeShown)
    pump(&host, &guest)
    XCTAssertTrue(host.machine.codeShown && guest.machine.codeShown)
  }

  // MARK: - The code

  /// A known answer computed independently (Python's hashlib and hmac, RFC 5869 by hand).
  func testCommitmentAndCodeKnownAnswer() throws {
    let host = DeviceID(bytes: [UInt8](repeating: 0xAA, count: 32))!
    let guest = DeviceID(bytes: [UInt8](repeating: 0xBB, count: 32))!
    let commitment = try PairingCode.commitment(
      hostNonce: bytes(32..<64), exporter: bytes(0..<32), host: host, guest: guest, crypto: crypto)
    XCTAssertEqual(Hex.encode(commitment), "27efb7052f2c5e31ae6c9b50269229627fb820cd762e894fa1592d75eccd72c0")
    let code = try PairingCode.code(
      exporter: bytes(0..<32), hostNonce: bytes(32..<64), guestNonce: bytes(64..<96), host: host, guest: guest,
      crypto: crypto)
    XCTAssertEqual(code, "778750")
  }

  func testTheCodeDependsOnEveryInput() throws {
    let base = (e: bytes(0..<32), h: bytes(32..<64), g: bytes(64..<96))
    func code(_ e: [UInt8], _ h: [UInt8], _ g: [UInt8], _ a: DeviceID, _ b: DeviceID) throws -> String {
      try PairingCode.code(exporter: e, hostNonce: h, guestNonce: g, host: a, guest: b, crypto: crypto)
    }
    let reference = try code(base.e, base.h, base.g, hostID, guestID)
    var changed = base.e
    changed[31] ^= 1
    XCTAssertNotEqual(try code(changed, base.h, base.g, hostID, guestID), reference)
    XCTAssertNotEqual(try code(base.e, base.g, base.h, hostID, guestID), reference, "the nonces' roles matter")
    XCTAssertNotEqual(try code(base.e, base.h, base.g, guestID, hostID), reference, "the ids' roles matter")
    XCTAssertEqual(try code(base.e, base.h, base.g, hostID, guestID), reference, "and it is deterministic")
  }

  func testCodesAreSixDigitsFromEightBytes() {
    XCTAssertEqual(PairingCode.code(fromBytes: [0, 0, 0, 0, 0, 0, 0, 7]), "000007")
    XCTAssertEqual(PairingCode.code(fromBytes: [0, 0, 0, 0, 0, 0x0F, 0x42, 0x40]), "000000", "10^6 wraps to 0")
    XCTAssertEqual(PairingCode.code(fromBytes: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), "551615")
    XCTAssertEqual(PairingCode.display("123456"), "123 456")
  }

  // MARK: - The attempts limit

  func testThreeCountedFailuresWithinTenMinutesCloseTheWindowUntilTheOldestAges() {
    var attempts = PairingAttempts()
    let minute: Timestamp = 60_000
    XCTAssertEqual(attempts.decide(paired: false, counts: false, at: 0), .keepOpen, "a port scan does not count")
    XCTAssertEqual(attempts.decide(paired: false, counts: true, at: 1 * minute), .keepOpen)
    XCTAssertEqual(attempts.decide(paired: false, counts: true, at: 2 * minute), .keepOpen)
    XCTAssertEqual(attempts.decide(paired: false, counts: true, at: 3 * minute), .close(PairingAttempts.tooManyError))
    XCTAssertTrue(attempts.isBlocked(at: 5 * minute))
    XCTAssertEqual(attempts.reopens(at: 5 * minute), 11 * minute)
    XCTAssertFalse(attempts.isBlocked(at: 11 * minute), "the oldest failure is 10 minutes old")
    XCTAssertEqual(attempts.recent(at: 11 * minute), [2 * minute, 3 * minute])
    XCTAssertEqual(attempts.decide(paired: true, counts: true, at: 12 * minute), .paired)
    // Failures spread over more than 10 minutes never close it.
    var spread = PairingAttempts()
    for index in 0..<10 {
      XCTAssertEqual(spread.decide(paired: false, counts: true, at: Timestamp(index) * 6 * minute), .keepOpen)
    }
    XCTAssertEqual(PairingAttempts(failures: [3, 1, 2]).failures, [1, 2, 3])
  }
}

/// The attempts file is on disk, where another program could have written any times.
final class PairingAttemptsArithmeticTests: XCTestCase {
  func testTimesAtEitherEndOfTheClockNeverTrap() {
    let attempts = PairingAttempts(failures: [.min, .min + 1, .max, .max - 1, .max - 2])
    XCTAssertTrue(attempts.isBlocked(at: 1_800_000_000_000), "three failures in the future still count")
    XCTAssertEqual(attempts.reopens(at: 1_800_000_000_000), .max)
    XCTAssertNotNil(attempts.minutesUntilReopen(at: 1_800_000_000_000))
    XCTAssertFalse(PairingAttempts(failures: [.min, .min, .min]).isBlocked(at: .max), "far past: forgotten")
    XCTAssertEqual(PairingAttempts(failures: [0, 60_000, 120_000]).minutesUntilReopen(at: 120_000), 8)
  }
}
