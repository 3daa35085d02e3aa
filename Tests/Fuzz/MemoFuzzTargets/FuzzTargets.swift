import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol

/// Every decoder of bytes from outside the process, as a fuzz target (Tests/Fuzz/README.md):
/// `memo-peer-fuzz` (libFuzzer) runs one of them
/// per process, and `FuzzRegressionTests` runs every committed corpus and crash input through
/// the same function in the normal suite. A target returns normally for any input, refused
/// or not; it traps (`precondition`) only when an invariant of the decoder breaks, which is
/// how libFuzzer learns of it.
public enum FuzzTargets {
  public typealias Target = @Sendable ([UInt8]) -> Void

  /// Every target by the name `make fuzz` and the corpus folders use.
  public static let all: [String: Target] = [
    "frame": frame,
    "peer-messages": peerMessages,
    "pairing": pairing,
    "sync-control": syncControl,
    "sync-batch": syncBatch,
    "sync-records": syncRecords,
    "record-content": recordContent,
    "notebook-entries": notebookEntries,
    "sync-ops": syncOps,
    "txt-record": txtRecord,
    "avahi-records": avahiRecords,
    "archive": archive,
    "markdown": markdown,
    "key-files": keyFiles,
    "consent-log": consentLog,
    "trust-store": trustStore,
    "state-files": stateFiles,
    "web-api": webAPI,
    "stored-clock": storedClock,
    "notebook-op": notebookOp,
    "membership-log": membershipLog,
    "deliver-batch": deliverBatch,
    "batch-receipt": batchReceipt,
    "signed-statements": signedStatements,
    "history-fetch": historyFetch,
  ]

  public static var names: [String] { all.keys.sorted() }

  // MARK: - Frames

  /// The frame decoder, fed in pieces of 1–17 bytes (the first byte chooses): every frame it
  /// returns is within the maximum and encodes to bytes that decode to itself.
  static func frame(_ data: [UInt8]) {
    guard let first = data.first else { return }
    let chunk = Int(first % 17) + 1
    let maximum = 4096
    var decoder = FrameDecoder(maximumPayload: maximum)
    var frames: [Frame] = []
    var index = 1
    do {
      while index < data.count {
        let end = min(index + chunk, data.count)
        frames += try decoder.push(data[index..<end])
        index = end
      }
    } catch {
      return
    }
    for frame in frames {
      precondition(frame.payload.count <= maximum, "a frame beyond the maximum")
      var again = FrameDecoder(maximumPayload: maximum)
      precondition((try? again.push(frame.encoded())) == [frame], "a frame that does not round-trip")
    }
    precondition(decoder.pending < Frame.headerSize + maximum, "more buffered than one frame")
    _ = try? FrameHeader.parse(data.dropFirst().prefix(Frame.headerSize), maximumPayload: 1 << 20)
  }

  /// The control messages of a trusted connection (the first byte chooses which): hello,
  /// goodbye, and delivery's deliver, receipt and refuse, with the checks the receiver
  /// applies after decoding.
  static func peerMessages(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let payload = Array(data.dropFirst())
    switch selector % 6 {
    case 0:
      if let hello = PeerMessage.decode(PeerMessage.Hello.self, from: payload) {
        try? PeerMessage.check(hello)
        // What a daemon keeps of the announcement: within the limits, or nothing.
        if let kept = try? AnnouncedAddresses.check(hello.listenAddresses, port: hello.announcedPort) {
          precondition(kept.count <= AnnouncedAddresses.maximumCount, "an announcement over the limit kept")
          precondition(kept.allSatisfy { !$0.isName && $0.port != nil }, "a name or portless address kept")
        }
      }
    case 1:
      _ = PeerMessage.decode(PeerMessage.Goodbye.self, from: payload)
    case 2:
      guard let deliver = PeerMessage.decode(DeliveryMessage.Deliver.self, from: payload) else { return }
      if (try? DeliveryMessage.check(deliver)) != nil, let revision = try? DeliveryMessage.revision(of: deliver.memo) {
        precondition((try? SyncRules.checkShape(revision)) != nil, "a checked delivery with a bad revision")
      }
      _ = TerminalText.display(deliver.id)
    case 3:
      _ = PeerMessage.decode(DeliveryMessage.Receipt.self, from: payload)
    case 4:
      if let refuse = PeerMessage.decode(DeliveryMessage.Refuse.self, from: payload) {
        _ = RefusalReason(rawValue: refuse.reason)?.explanation
      }
    default:
      _ = DeliveryMessage.decode(payload)
    }
  }

  /// The pairing state machine, as host or guest (the first byte), fed the rest of the input
  /// as the peer's bytes in pieces, with the person answering yes or no (by the piece's
  /// first byte) whenever asked. It never stores anything before a code was shown and both
  /// confirmed, and nothing ends it twice.
  static func pairing(_ data: [UInt8]) {
    guard let first = data.first else { return }
    let key = PeerMessage.PairKey(
      discoveryKey: Data(repeating: 7, count: 32).base64EncodedString(), rotationSeconds: 900)
    guard let own = DeviceID(bytes: [UInt8](repeating: 1, count: 32)),
      let peer = DeviceID(bytes: [UInt8](repeating: 2, count: 32))
    else { return }
    var decoder = FrameDecoder(maximumPayload: PairingProtocol.maximumFrame)
    var machine = PairingMachine(
      .init(
        role: first & 1 == 0 ? .host : .guest, exporter: [UInt8](repeating: 3, count: 32),
        nonce: [UInt8](repeating: 4, count: 32), ownID: own, peerID: peer, ownName: "fuzz", ownKey: key),
      crypto: OpenSSLPairingCryptography())
    var actions = machine.start()
    var ended = 0
    var stored = 0
    var index = 1
    let piece = Int((first >> 1) % 31) + 1
    while true {
      for action in actions {
        switch action {
        case .store: stored += 1
        case .fail: ended += 1
        case .send, .askPerson: break
        }
      }
      precondition(stored + ended <= 1, "a pairing that ended twice")
      if stored == 1 { precondition(machine.codeShown, "stored without a code shown") }
      if actions.contains(where: { if case .askPerson = $0 { true } else { false } }) {
        actions = machine.handle(.personAnswered(confirmed: index < data.count && data[index] & 1 == 1))
        continue
      }
      guard index < data.count, !machine.isFinished else { break }
      let end = min(index + piece, data.count)
      actions = machine.receive(bytes: data[index..<end], through: &decoder)
      index = end
    }
    _ = machine.handle(.closed)
  }

  // MARK: - Sync

  /// `sync-hello`, `sync-done`, `sync-ack` and `sync-refuse` (the first byte chooses):
  /// whatever decodes has passed the range checks, so the arithmetic the session does on it
  /// cannot overflow.
  static func syncControl(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let payload = Array(data.dropFirst())
    switch selector % 4 {
    case 0:
      guard let hello = try? SyncMessage.decodeHello(payload) else { return }
      precondition((hello.pending ?? 0) <= SyncLimits.maximumSequence)
      precondition(hello.knowledge.count <= SyncLimits.maximumReplicas)
      _ = Int(hello.pending ?? 0)
      _ = hello.start(in: ReplicaID(String(repeating: "a", count: 32))!)
    case 1:
      guard let done = try? SyncMessage.decodeDone(payload) else { return }
      // decodeDone checked the knowledge: every key is a replica id.
      guard let claimed = try? SyncRules.checkedVector(done.knowledge, "fuzz") else {
        preconditionFailure("a checked sync-done whose knowledge does not check")
      }
      let horizon = VersionVector(claimed.entries.mapValues { $0 / 2 })
      let own = ReplicaID(String(repeating: "0", count: 32))!
      let adopted = SyncRules.adoptable(claimed, horizon: horizon, own: own)
      precondition(horizon.covers(adopted), "adopted beyond the horizon")
    case 2:
      guard let ack = try? SyncMessage.decodeAck(payload, sentUpTo: 1000) else { return }
      precondition(ack.position <= 1000)
      if let outcome = ack.outcome { _ = outcome.applied + outcome.conflicts + outcome.heldDeletes + outcome.liveMemos }
    default:
      _ = SyncMessage.decodeRefuse(payload)?.badData
    }
  }

  /// The binary `sync-batch`: a batch that decodes round-trips, every revision passes the
  /// shape checks, and the receiver-side checks and merges run on it without trapping.
  static func syncBatch(_ data: [UInt8]) {
    guard let batch = try? SyncBatchCodec.decode(data) else { return }
    precondition(
      (try? SyncBatchCodec.decode(SyncBatchCodec.encode(batch))) == batch, "a batch that does not round-trip")
    let receiver = SyncRules.Receiver(replica: ReplicaID(String(repeating: "a", count: 32))!, sequence: 1000)
    var budget = ReplicaBudget(known: [], maximum: 64)
    var heads: [HeadSummary] = []
    for revision in batch.revisions {
      precondition((try? SyncRules.checkShape(revision)) != nil, "a decoded revision that fails its checks")
      precondition(revision.head.revision <= SyncLimits.maximumRevision)
      _ = try? budget.admit(revision.head.dot.origin)
      guard (try? SyncRules.admit(revision, into: receiver)) == true else { continue }
      _ = MemoHeads.deletes(heads, incoming: revision.head)
      _ = MemoHeads.empties(heads, incoming: revision.head, winnerHasBody: true)
      heads = MemoHeads.merged(heads, incoming: revision.head)
      _ = MemoHeads.winner(heads)
      _ = MemoHeads.copyCount(heads)
      _ = MemoHeads.clockForLocalRevision(heads, resolvingAll: true)
    }
  }

  /// A clock as the store keeps it (a file another program could have written).
  static func storedClock(_ data: [UInt8]) {
    guard let clock = VersionVector(encoded: data) else { return }
    precondition(VersionVector(encoded: clock.encoded()) == clock, "a clock that does not round-trip")
  }
}
