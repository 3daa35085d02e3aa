import MemoCore
import MemoCrypto
import MemoProtocol

/// Batched delivery (delivery version 2) on both sides, a notebook's membership log fed
/// a few ops in a row, and a relay's answer to `history --from`.
extension FuzzTargets {
  /// A `deliver-batch` payload as the receiver reads it before any store: every entry it
  /// sends to the store passed every rule of a single `deliver`, ids are unique, the memo's
  /// sealed form and the sender's encoding read back as they were, and the receipt the
  /// receiver makes for it (whatever the store did) fits in a frame and is one the sender
  /// believes, entry by entry, for exactly this batch.
  static func deliverBatch(_ data: [UInt8]) {
    let items: [DeliveryExchange.BatchItem]
    switch DeliveryExchange.batchRequest(data) {
    case .malformed: return
    case .unsupportedVersion(let version):
      precondition(version != DeliveryMessage.batchVersion, "the own version refused as another")
      return
    case .store(let checked): items = checked
    }
    precondition((1...DeliveryMessage.maximumBatchEntries).contains(items.count), "a batch of a refused size")
    var batch: [(id: String, refused: RefusalReason?)] = []
    var stored: [DeliveryExchange.Stored] = []
    var expected: [DeliveryExchange.Answer] = []
    var accepted: [[UInt8]] = []
    for item in items {
      switch item {
      case .store(let deliver):
        precondition((try? DeliveryMessage.check(deliver)) != nil, "an entry for the store that fails its checks")
        precondition(!deliver.id.isEmpty && deliver.id.utf8.count <= 64, "an entry id out of range")
        if let revision = try? DeliveryMessage.revision(of: deliver.memo) {
          precondition((try? SyncRules.checkShape(revision)) != nil, "a checked entry with a bad revision")
        }
        _ = DeliveryMessage.record(of: deliver.memo)
        _ = TerminalText.display(deliver.id)
        // The inbox keeps the memo in this form, and reads it back with `decode`.
        precondition(
          DeliveryMessage.decode(DeliveryMessage.encode(deliver.memo)) == deliver.memo,
          "a memo whose sealed form does not read back")
        accepted.append(DeliveryMessage.Batch.encodedEntry(id: deliver.id, memo: deliver.memo))
        // What a store may answer, chosen by the entry's place in the batch.
        let outcome: DeliveryExchange.Stored
        switch stored.count % 4 {
        case 0: outcome = .stored(place: "inbox", duplicate: false)
        case 1: outcome = .stored(place: "memos", duplicate: true)
        case 2: outcome = .refused(.inboxFull)
        default: outcome = .refused(.tooLarge)
        }
        stored.append(outcome)
        batch.append((deliver.id, nil))
        switch outcome {
        case .stored(let place, let duplicate): expected.append(.delivered(place: place, duplicate: duplicate))
        case .refused(let reason): expected.append(.refused(reason))
        case .failed: break
        }
      case .refuse(let id, _):
        batch.append((id, .invalid))
        expected.append(.refused(.invalid))
      }
    }
    let ids = batch.map(\.id)
    precondition(Set(ids).count == ids.count, "an id twice in a batch that passed")
    // The entries the store got, as a sender of this version would write them, are read
    // the same way again (when they fit in a frame: escaping can make them longer).
    let encoded = DeliveryMessage.Batch.payload(encodedEntries: accepted)
    if !accepted.isEmpty, encoded.count <= DeliveryMessage.maximumBatchBytes {
      let checked = items.filter { if case .store = $0 { true } else { false } }
      precondition(
        DeliveryExchange.batchRequest(encoded) == .store(checked),
        "entries that do not read back as the sender encodes them")
    }
    // A store that gave one result too few, or failed, gives no receipt at all.
    if !stored.isEmpty {
      precondition(DeliveryExchange.batchReceipt(batch, stored: stored.dropLast()) == nil, "a receipt short of one")
      precondition(DeliveryExchange.batchReceipt(batch, stored: [.failed] + stored.dropFirst()) == nil)
    }
    guard let receipt = DeliveryExchange.batchReceipt(batch, stored: stored) else {
      preconditionFailure("no receipt for a batch the store answered")
    }
    precondition(receipt.kind == .batchReceipt)
    precondition(receipt.payload.count <= Frame.defaultMaximumPayload, "a receipt beyond the frame maximum")
    precondition(
      DeliveryExchange.batchAnswer(receipt, to: ids) == .answered(expected),
      "the sender does not believe the receiver's receipt")
    if ids.count > 1 {
      guard case .protocolError = DeliveryExchange.batchAnswer(receipt, to: ids.reversed()) else {
        preconditionFailure("a receipt believed for the batch in another order")
      }
    }
  }

  /// Entry ids of the batches in flight the `batch-receipt` target answers against: the
  /// first byte of an input chooses how many (1–4) and the frame's kind.
  static let batchInFlight = [
    "6a1f3c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", "0b3e9d41-7c2a-4f6e-8d15-2a9c4e7b1f30",
    "c47a2e90-13d5-4b8f-a6e2-5f0d9c3b7a14", "f2d81b6c-9e4a-4c37-b05d-8a1e6f3c2d97",
  ]

  /// A `batch-receipt` (or whatever frame came instead) against a batch in flight, as the
  /// sender reads it: it is believed only when it answers exactly this batch (its version,
  /// one result per entry in order, ids in their places, known fates, a known place for
  /// what was stored), and then each answer says what its result says.
  static func batchReceipt(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let ids = Array(batchInFlight.prefix(Int(selector & 3) + 1))
    let payload = Array(data.dropFirst())
    let kind: Frame.Kind = selector & 0x0C == 0x0C ? .goodbye : selector & 0x0C == 0x08 ? .receipt : .batchReceipt
    let answer = DeliveryExchange.batchAnswer(Frame(kind, payload: payload), to: ids)
    switch answer {
    case .answered(let answers):
      precondition(kind == .batchReceipt, "a \(kind) frame believed as a receipt")
      guard let receipt = PeerMessage.decode(DeliveryMessage.BatchReceipt.self, from: payload) else {
        preconditionFailure("a receipt believed that does not decode")
      }
      precondition(receipt.version == DeliveryMessage.batchVersion, "a receipt of another version believed")
      precondition(receipt.results.count == ids.count && answers.count == ids.count, "a receipt of another size")
      for (index, (result, answer)) in zip(receipt.results, answers).enumerated() {
        precondition(result.id == ids[index], "a result believed for another entry")
        switch answer {
        case .delivered(let place, let duplicate):
          precondition(place == "inbox" || place == "memos", "stored in a place that is none")
          let fate = duplicate ? DeliveryMessage.BatchResult.duplicateFate : DeliveryMessage.BatchResult.storedFate
          precondition(result.fate == fate, "delivered by another fate")
        case .refused(let reason):
          precondition(result.fate == DeliveryMessage.BatchResult.refusedFate, "refused by another fate")
          _ = reason.explanation
        case .protocolError, .unreachable:
          preconditionFailure("an answer of a believed receipt that is no answer")
        }
      }
    case .unsupportedVersion, .ended:
      precondition(kind == .goodbye, "a session ended by a frame that is no goodbye")
    case .protocolError:
      break
    case .unreachable:
      preconditionFailure("unreachable with a frame in hand")
    }
  }

  /// At most this many ops per input of `membership-log`: the log's rules are about a few
  /// ops and their order; more only makes each run slower.
  static let maximumLogOps = 8

  /// A notebook's membership log fed up to eight ops from the wire, one after the other,
  /// then asked what it means. The first byte chooses the verifier: the real one (bit 0
  /// clear), or one that takes every signature and key, so that mutated ops get in and
  /// `state` sees histories no signer made. Each op is `[control] [u16 length] [bytes]`; with
  /// the lenient verifier, an odd control byte replaces the op's parents with ops already
  /// in (the bits above choose among the last seven, none chosen: the heads), so siblings
  /// and concurrent removals happen. Whatever got in: replays change nothing, the log's
  /// answer to a peer with nothing is every op, in an order a fresh log admits, and the
  /// state is the same in that order and in another causal one.
  static func membershipLog(_ data: [UInt8]) {
    guard let mode = data.first else { return }
    let verifier: any OpVerifier = mode & 1 == 0 ? MembershipCrypto() : LenientOpVerifier()
    var log: MembershipLog?
    var admitted: [OpID] = []
    var index = 1
    var count = 0
    while index + 3 <= data.count, count < maximumLogOps {
      let control = data[index]
      let length = Int(data[index + 1]) << 8 | Int(data[index + 2])
      let end = min(index + 3 + length, data.count)
      let bytes = Array(data[(index + 3)..<end])
      index = end
      count += 1
      if log == nil {
        guard let first = try? NotebookOp.decode(bytes) else { continue }
        log = MembershipLog(notebook: first.notebook, verifier: verifier)
      }
      guard var current = log else { continue }
      let outcome: MembershipLog.Outcome?
      if control & 1 == 1, mode & 1 == 1, var op = try? NotebookOp.decode(bytes), op.kind != .create {
        let chosen = admitted.suffix(7).enumerated().filter { control >> ($0.offset + 1) & 1 == 1 }.map(\.element)
        op.parents = Array(Set(chosen.isEmpty ? current.heads : chosen)).sorted()
        outcome = try? current.insert(op)
      } else {
        outcome = try? current.insert(bytes: bytes)
      }
      if case .added(let id) = outcome { admitted.append(id) }
      log = current
    }
    guard let log else { return }
    precondition(log.count == admitted.count && log.count <= maximumLogOps, "ops in the log that were not admitted")
    let state = log.state
    precondition(state.heads == log.heads, "the state's heads are not the log's")
    precondition(state.void.allSatisfy(log.contains), "a void op the log does not hold")
    precondition(Set(state.keys.map(\.op)).isDisjoint(with: state.void), "a key generation from a void op")
    precondition(state.members.keys.allSatisfy { state.cuts[$0] == nil }, "a member with a removal cut")
    var replayed = log
    for op in log.ops {
      guard case .alreadyKnown = try? replayed.insert(op) else { preconditionFailure("a replay that changed the log") }
    }
    precondition(replayed.count == log.count && replayed.heads == log.heads)
    let nothingMissing = log.missing(peerHeads: log.heads)
    precondition(nothingMissing.ops.isEmpty && nothingMissing.complete, "a peer with every head lacks something")
    let everything = log.missing(peerHeads: [])
    precondition(everything.complete && everything.ops.count == log.count, "a peer with nothing is not sent all")
    var canonical = MembershipLog(notebook: log.notebook, verifier: verifier)
    for op in everything.ops {
      guard case .added = try? canonical.insert(op) else { preconditionFailure("ops sent in an order not causal") }
    }
    precondition(canonical.state == state, "a state that depends on the order the ops came in")
    // Another causal order: always the latest-arrived op whose parents are all in.
    var other = MembershipLog(notebook: log.notebook, verifier: verifier)
    var remaining = log.ops
    while let next = remaining.lastIndex(where: { $0.parents.allSatisfy(other.contains) }) {
      guard case .added = try? other.insert(remaining.remove(at: next)) else {
        preconditionFailure("an admitted op refused in another causal order")
      }
    }
    precondition(remaining.isEmpty && other.state == state, "a state that depends on the order the ops came in")
  }
}

/// The `membership-log` target's verifier that takes every key and signature: the real
/// hashes (so op ids and a genesis's derivation are what they are), but no Ed25519, so that
/// mutated ops reach `MembershipLog.state`.
struct LenientOpVerifier: OpVerifier {
  let real = MembershipCrypto()
  func isValidPublicKey(_ publicKey: [UInt8]) -> Bool { true }
  func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool { true }
  func sha256(_ bytes: [UInt8]) -> [UInt8]? { real.sha256(bytes) }
  func notebookID(creator: DeviceID, nonce: [UInt8]) -> NotebookID? { real.notebookID(creator: creator, nonce: nonce) }
}

// MARK: - History from a relay

extension FuzzTargets {
  static let historyNotebook = NotebookID(String(repeating: "c", count: 32))!
  static let historyMemo = MemoID(canonical: "8e0f3d4a-1b2c-4d5e-8f90-123456789abc")!

  /// The first byte chooses: even, the rest is a `history-ask` as the relay reads it (an
  /// ask taken names valid ids and re-encodes to an ask of the same); odd, the rest is a
  /// stream of frames the asker reads as the relay's answer, as `HistoryExchange` takes
  /// them: an answer believed holds only records of the memo and notebook asked for, no
  /// more than 256, and nothing is believed after it.
  static func historyFetch(_ data: [UInt8]) {
    guard let selector = data.first else { return }
    let payload = Array(data.dropFirst())
    guard selector & 1 == 1 else {
      if case .answer(let notebook, let memo) = HistoryFetch.request(payload) {
        let again = HistoryFetch.ask(notebook: notebook, memo: memo)
        precondition(
          HistoryFetch.request(again.payload) == .answer(notebook: notebook, memo: memo),
          "an ask that does not round-trip")
      }
      return
    }
    var decoder = FrameDecoder(maximumPayload: Frame.defaultMaximumPayload)
    guard let frames = try? decoder.push(payload) else { return }
    var exchange = HistoryExchange(notebook: historyNotebook, memo: historyMemo)
    var done = false
    for frame in frames {
      let step = exchange.receive(frame)
      if done {
        guard case .failed = step else { preconditionFailure("a frame believed after the answer") }
        continue
      }
      switch step {
      case .more: continue
      case .failed: done = true
      case .done(let records, let bindings):
        done = true
        precondition(records.count <= HistoryFetch.maximumRecords, "more records than an answer may hold")
        precondition(bindings.count <= frames.count * SyncRecordBatch.maximumBindings, "bindings beyond the frames'")
        precondition(
          records.allSatisfy { $0.memo == historyMemo && $0.notebook == historyNotebook },
          "a record of another memo or notebook believed")
      }
    }
  }

  /// An honest answer of 11 records in two frames (with an odd selector), and an ask
  /// (with an even one).
  static func historyFetchSeeds() -> [[UInt8]] {
    let replica = ReplicaID(String(repeating: "a", count: 32))!
    let records = (1...11).map { seq in
      SyncRecord(
        notebook: historyNotebook, memo: historyMemo, dot: Dot(origin: replica, seq: UInt64(seq)),
        clock: VersionVector([replica: UInt64(seq)]), keyID: String(repeating: "d", count: 32),
        sealed: [UInt8](repeating: UInt8(seq), count: 48), signature: [UInt8](repeating: 9, count: 64))
    }
    return [
      [1] + HistoryFetch.answer(records, bindings: []).flatMap { $0.encoded() },
      [1] + HistoryFetch.answer([], bindings: []).flatMap { $0.encoded() },
      [0] + HistoryFetch.ask(notebook: historyNotebook, memo: historyMemo).payload,
    ]
  }
}
