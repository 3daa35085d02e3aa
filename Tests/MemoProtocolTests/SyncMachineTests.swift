import MemoCore
import MemoTestSupport
import XCTest

@testable import MemoProtocol

/// The sync session with no I/O and no store: an asker machine and an answerer machine on
/// one thread, each with a small model of a store (a feed of records to send, the records
/// received), wired together by the test, which decides what arrives when: whole frames,
/// single bytes, random pieces, the two directions interleaved at random, frames of one
/// direction swapped, and a lying peer that sends what no correct peer sends.
final class SyncMachineTests: XCTestCase {
  // MARK: - A model of each side

  /// One side: its machine, the records it has to send, what it received, how it ended.
  struct Side {
    var machine: SyncMachine
    /// The parser `TLSConnection` reads with: bytes fed here are framed as in production.
    var decoder = FrameDecoder(maximumPayload: Frame.defaultMaximumPayload)
    let replica: ReplicaID
    var feed: [SyncRecord]
    var received: [SyncRecord] = []
    var batchSize = 2
    var readUpTo = 0
    var outbox: [Frame] = []
    var sent: [Frame] = []
    var ending: SyncMachine.Ending?
    var progress: [SyncMachine.Progress] = []
    var recordedAcknowledged: UInt64?
    /// Whether its receiving direction finished (its store adopted the peer's `sync-done`).
    var finishedReceiving = false
    /// The store work answers: tests make one of them a refusal or a failure.
    var onPlan: SyncMachine.Event?
    var onTakeOps: SyncMachine.Event?
    var onApply: ((SyncRecordBatch.Batch) -> SyncMachine.Event)?
    /// The membership ops this side sends (what its store finds the peer lacks), and those
    /// the peer's `sync-ops` brought, as the store was handed them.
    var ops: [SyncOps.Notebook] = []
    var opsReceived: [[SyncOps.Notebook]] = []

    init(_ role: SyncMachine.Role, replica: ReplicaID, feed: [SyncRecord]) {
      machine = SyncMachine(role: role)
      self.replica = replica
      self.feed = feed
    }

    var hello: SyncMessage.Hello {
      SyncMessage.Hello(replica: replica, knowledge: VersionVector(), cursor: nil, pending: UInt64(feed.count))
    }

    /// Carries out actions, answering store work at once, as a driver does.
    mutating func run(_ actions: [SyncMachine.Action]) {
      var pending = actions
      var next = 0
      while next < pending.count {
        let action = pending[next]
        next += 1
        switch action {
        case .send(let frame):
          outbox.append(frame)
          sent.append(frame)
        case .progress(let step): progress.append(step)
        case .finish(let ending):
          XCTAssertNil(self.ending, "a machine finishes once")
          self.ending = ending
        default:
          pending += machine.handle(answer(action))
        }
      }
    }

    mutating func answer(_ action: SyncMachine.Action) -> SyncMachine.Event {
      switch action {
      case .plan(_, _, let peerOps):
        if let peerOps { opsReceived.append(peerOps) }
        return onPlan ?? .planned(reply: machine.role == .answerer ? hello : nil, ops: ops)
      case .takeOps(let peerOps):
        opsReceived.append(peerOps)
        return onTakeOps ?? .opsTaken
      case .prepareReceiving, .prepareSending:
        return .prepared(estimate: feed.count)
      case .apply(let batch):
        if let onApply { return onApply(batch) }
        received += batch.records
        return .applied(position: batch.position)
      case .finishReceiving:
        finishedReceiving = true
        return .received(SyncMessage.Outcome(applied: received.count))
      case .readBatch:
        guard readUpTo < feed.count else {
          return .exhausted(SyncMessage.Done(position: UInt64(feed.count), knowledge: VersionVector()))
        }
        let end = min(feed.count, readUpTo + batchSize)
        defer { readUpTo = end }
        return .read(SyncRecordBatch.Batch(position: UInt64(end), records: Array(feed[readUpTo..<end])))
      case .recordProgress(let acknowledged):
        recordedAcknowledged = acknowledged
        return .recorded
      case .send, .progress, .finish:
        XCTFail("not store work: \(action)")
        return .failed
      }
    }

    mutating func take() -> [Frame] {
      defer { outbox = [] }
      return outbox
    }

    /// Feeds bytes as they would come off a connection, in pieces of `chunks`' sizes.
    mutating func deliver(_ frames: [Frame], chunks: inout SeededRandom, pieces: Pieces) {
      let bytes = frames.flatMap { $0.encoded() }
      var offset = 0
      while offset < bytes.count, ending == nil {
        let size: Int
        switch pieces {
        case .whole: size = bytes.count
        case .bytes: size = 1
        case .random: size = 1 + Int(chunks.next() % 97)
        }
        let end = min(bytes.count, offset + size)
        run(machine.receive(bytes: bytes[offset..<end], through: &decoder))
        offset = end
      }
    }
  }

  enum Pieces { case whole, bytes, random }

  static let askerReplica = ReplicaID(String(repeating: "a", count: 32))!
  static let answererReplica = ReplicaID(String(repeating: "b", count: 32))!
  static let notebook = NotebookID(String(repeating: "c", count: 32))!
  static let keyID = String(repeating: "d", count: 32)

  static func record(_ origin: ReplicaID, _ seq: UInt64, size: Int = 40) -> SyncRecord {
    SyncRecord(
      notebook: notebook, memo: MemoID(), dot: Dot(origin: origin, seq: seq), clock: VersionVector([origin: seq]),
      keyID: keyID, sealed: Array(repeating: UInt8(truncatingIfNeeded: seq), count: size))
  }

  func sides(askerRecords: Int = 5, answererRecords: Int = 7) -> (Side, Side) {
    func feed(_ replica: ReplicaID, _ count: Int) -> [SyncRecord] {
      (0..<count).map { Self.record(replica, UInt64($0 + 1)) }
    }
    return (
      Side(.asker, replica: Self.askerReplica, feed: feed(Self.askerReplica, askerRecords)),
      Side(.answerer, replica: Self.answererReplica, feed: feed(Self.answererReplica, answererRecords))
    )
  }

  /// Runs a whole session: the asker starts, then frames move both ways, the direction
  /// and piece sizes chosen by `seed`, until nothing moves.
  func session(_ asker: inout Side, _ answerer: inout Side, pieces: Pieces, seed: UInt64 = 1) {
    var random = SeededRandom(state: seed)
    asker.run(asker.machine.ask(asker.hello))
    var rounds = 0
    while !(asker.outbox.isEmpty && answerer.outbox.isEmpty), rounds < 10_000 {
      rounds += 1
      // Either direction may go first: TCP keeps each direction in order, not the two
      // directions relative to each other.
      let askerFirst = random.next() % 2 == 0
      if askerFirst || answerer.outbox.isEmpty {
        let frames = asker.take()
        answerer.deliver(frames, chunks: &random, pieces: pieces)
      } else {
        let frames = answerer.take()
        asker.deliver(frames, chunks: &random, pieces: pieces)
      }
    }
  }

  func assertCompleted(_ asker: Side, _ answerer: Side, file: StaticString = #filePath, line: UInt = #line) {
    guard case .completed(let askerSummary) = asker.ending, case .completed(let answererSummary) = answerer.ending
    else {
      return XCTFail(
        "both complete: \(String(describing: asker.ending)), \(String(describing: answerer.ending))", file: file,
        line: line)
    }
    XCTAssertEqual(asker.received, answerer.feed, "the asker holds the answerer's feed", file: file, line: line)
    XCTAssertEqual(answerer.received, asker.feed, "the answerer holds the asker's feed", file: file, line: line)
    XCTAssertEqual(askerSummary.sentRecords, asker.feed.count, file: file, line: line)
    XCTAssertEqual(askerSummary.receivedRecords, answerer.feed.count, file: file, line: line)
    XCTAssertEqual(askerSummary.sent.applied, asker.feed.count, "the peer's outcome comes back", file: file, line: line)
    XCTAssertEqual(answererSummary.received.applied, asker.feed.count, file: file, line: line)
    XCTAssertEqual(asker.recordedAcknowledged, UInt64(asker.feed.count), file: file, line: line)
    XCTAssertEqual(answerer.recordedAcknowledged, UInt64(answerer.feed.count), file: file, line: line)
  }

  // MARK: - Two correct machines

  func testTwoMachinesSyncWholeFramesBytesAndRandomPieces() {
    for pieces in [Pieces.whole, .bytes, .random] {
      var (asker, answerer) = sides()
      session(&asker, &answerer, pieces: pieces)
      assertCompleted(asker, answerer)
    }
  }

  func testTheDirectionsInterleaveAnyWayAndTheSessionStillCompletes() {
    for seed in UInt64(1)...200 {
      var random = SeededRandom(state: seed)
      var (asker, answerer) = sides(
        askerRecords: Int(random.next() % 12), answererRecords: Int(random.next() % 12))
      asker.batchSize = 1 + Int(random.next() % 3)
      answerer.batchSize = 1 + Int(random.next() % 3)
      session(&asker, &answerer, pieces: .random, seed: seed)
      assertCompleted(asker, answerer)
    }
  }

  func testTheFramesAreThoseOfTheProtocolInOrder() {
    var (asker, answerer) = sides(askerRecords: 1, answererRecords: 3)
    session(&asker, &answerer, pieces: .whole)
    assertCompleted(asker, answerer)
    // Batches of two: the answerer sends hello and its ops, two batches, done, then acks the
    // asker's one; the asker its hello, its ops (after the answerer's), then acks.
    XCTAssertEqual(
      answerer.sent.map(\.kind), [.syncHello, .syncOps, .syncBatch, .syncBatch, .syncDone, .syncAck, .syncAck])
    XCTAssertEqual(
      asker.sent.map(\.kind), [.syncHello, .syncOps, .syncAck, .syncAck, .syncAck, .syncBatch, .syncDone])
    XCTAssertEqual(asker.progress.filter(\.receiving).map(\.done), [2, 3])
  }

  // MARK: - The membership ops (sync version 3)

  static let opsNotebook = NotebookID(String(repeating: "e", count: 32))!

  func testEachSidesOpsReachTheOthersStoreBeforeAnyRecordMoves() {
    for pieces in [Pieces.whole, .bytes] {
      var (asker, answerer) = sides(askerRecords: 3, answererRecords: 3)
      asker.ops = [SyncOps.Notebook(id: Self.opsNotebook, ops: [[1, 2, 3]])]
      answerer.ops = [SyncOps.Notebook(id: Self.opsNotebook, ops: [[4, 5], [6]])]
      session(&asker, &answerer, pieces: pieces)
      assertCompleted(asker, answerer)
      XCTAssertEqual(asker.opsReceived, [answerer.ops], "the asker's plan gets the answerer's ops")
      XCTAssertEqual(answerer.opsReceived, [asker.ops], "the answerer takes the asker's ops")
      // Nothing of a record before the ops: each side's first frames are its hello and ops.
      XCTAssertEqual(Array(answerer.sent.map(\.kind).prefix(2)), [.syncHello, .syncOps])
      XCTAssertEqual(Array(asker.sent.map(\.kind).prefix(2)), [.syncHello, .syncOps])
    }
  }

  func testOpsOutOfPlaceOrMalformedAreRefused() {
    let ops = noOps
    // The asker: ops before the hello, a batch instead of the ops, ops twice, ops that do
    // not decode (another version, a notebook id that is not one, bytes after the end).
    assertRefused(askerFed([ops], opening: false), .unexpectedFrame)
    assertRefused(askerFed([answererHello, batch([], position: 1)], opening: false), .unexpectedFrame)
    assertRefused(askerFed([answererHello, ops, ops], opening: false), .unexpectedFrame)
    for payload in [[2, 0, 0, 0, 0], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0x41], SyncOps.encode([]) + [0]] as [[UInt8]] {
      assertRefused(askerFed([answererHello, Frame(.syncOps, payload: payload)], opening: false), .malformed)
    }
    // More notebooks than a hello may list, and more op bytes than a frame may carry.
    var many = [1] + [0, 0, 1, 1] as [UInt8]
    many += Array(repeating: 0, count: 8)
    assertRefused(askerFed([answererHello, Frame(.syncOps, payload: many)], opening: false), .malformed)
    // The answerer: a batch where the asker's ops belong, a second hello instead of them.
    let hello = frame(
      .syncHello, SyncMessage.Hello(replica: Self.askerReplica, knowledge: VersionVector(), cursor: nil, pending: nil))
    assertRefused(answererFed([hello, batch([], position: 1)], opening: false), .unexpectedFrame)
    assertRefused(answererFed([hello, hello], opening: false), .unexpectedFrame)
    // What the store refuses of the ops ends the session, told to the peer.
    let refused = answererFed([hello]) {
      $0.onTakeOps = .refused(SyncViolation(.malformed, "the store's rule"))
    }
    assertRefused(refused, .malformed)
    XCTAssertFalse(refused.sent.contains { $0.kind == .syncBatch }, "nothing sent after refused ops")
  }

  func testASenderKeepsAtMostAWindowOfBatchesUnacknowledged() {
    var (asker, answerer) = sides(askerRecords: 0, answererRecords: 20)
    answerer.batchSize = 1
    asker.run(asker.machine.ask(asker.hello))
    answerer.deliver(asker.take(), chunks: &dummy, pieces: .whole)
    asker.deliver(answerer.take(), chunks: &dummy, pieces: .whole)
    answerer.deliver(asker.take(), chunks: &dummy, pieces: .whole)
    // Nobody acknowledges yet: the answerer stops after its hello, its ops and four batches.
    XCTAssertEqual(
      answerer.sent.map(\.kind), [.syncHello, .syncOps] + Array(repeating: .syncBatch, count: SyncMachine.window))
    XCTAssertTrue(answerer.machine.needsFrame)
    session(&asker, &answerer, pieces: .whole)
    assertCompleted(asker, answerer)
  }

  var dummy = SeededRandom(state: 0)

  // MARK: - Frames of one direction out of order

  func testSwappedFramesEndInARefusalNeverATrapNorADoubleApply() {
    var refusals = 0
    for seed in UInt64(1)...200 {
      var random = SeededRandom(state: seed)
      var (asker, answerer) = sides(askerRecords: 6, answererRecords: 6)
      asker.run(asker.machine.ask(asker.hello))
      var rounds = 0
      while !(asker.outbox.isEmpty && answerer.outbox.isEmpty), rounds < 1000 {
        rounds += 1
        func swapped(_ frames: [Frame]) -> [Frame] {
          guard frames.count >= 2, random.next() % 3 == 0 else { return frames }
          var frames = frames
          let at = Int(random.next() % UInt64(frames.count - 1))
          frames.swapAt(at, at + 1)
          return frames
        }
        let fromAsker = swapped(asker.take())
        answerer.deliver(fromAsker, chunks: &random, pieces: .whole)
        let fromAnswerer = swapped(answerer.take())
        asker.deliver(fromAnswerer, chunks: &random, pieces: .whole)
      }
      for (side, other) in [(asker, answerer), (answerer, asker)] {
        // Whatever came, nothing was applied twice and nothing unsent was applied.
        XCTAssertEqual(Set(side.received.map(\.dot)).count, side.received.count)
        // A direction that finished has everything sent in it: the sync-done's knowledge
        // claims all of it.
        if side.finishedReceiving {
          XCTAssertEqual(
            Set(side.received.map(\.dot)), Set(other.feed.map(\.dot)), "seed \(seed): all received before sync-done")
        }
        if case .refusedPeer(let violation) = side.ending {
          refusals += 1
          XCTAssertEqual(side.sent.last?.kind, .syncRefuse, "a refusal tells the peer")
          XCTAssertTrue([.unexpectedFrame, .outOfRange].contains(violation.reason), "\(violation)")
        }
      }
      let peerSaw = [asker.ending, answerer.ending]
      XCTAssertTrue(
        peerSaw.allSatisfy { if case .completed = $0 { true } else { false } }
          || peerSaw.contains { if case .refusedPeer = $0 { true } else { false } },
        "seed \(seed): both complete, or one refused: \(peerSaw)")
    }
    XCTAssertGreaterThan(refusals, 20, "swaps happened and were caught")
  }

  // MARK: - A lying peer

  /// The asker's machine after its hello, fed `frames` from a lying answerer. A hello that
  /// opens them is followed by an empty `sync-ops`, as a correct answerer's is (`opening`
  /// false: exactly the frames given).
  func askerFed(_ frames: [Frame], pieces: Pieces = .whole, opening: Bool = true) -> Side {
    var (asker, _) = sides()
    asker.run(asker.machine.ask(asker.hello))
    var random = SeededRandom(state: 7)
    asker.deliver(opening ? withOps(frames) : frames, chunks: &random, pieces: pieces)
    return asker
  }

  /// The answerer's machine fed `frames` from a lying asker (a hello that opens them is
  /// followed by the asker's empty `sync-ops`, unless `opening` is false).
  func answererFed(
    _ frames: [Frame], opening: Bool = true, answerer setup: (inout Side) -> Void = { _ in }
  ) -> Side {
    var (_, answerer) = sides()
    setup(&answerer)
    var random = SeededRandom(state: 7)
    answerer.deliver(opening ? withOps(frames) : frames, chunks: &random, pieces: .whole)
    return answerer
  }

  /// `frames` with an empty `sync-ops` after a `sync-hello` that opens them.
  func withOps(_ frames: [Frame]) -> [Frame] {
    guard let first = frames.first, first.kind == .syncHello else { return frames }
    return [first, noOps] + frames.dropFirst()
  }

  let noOps = Frame(.syncOps, payload: SyncOps.encode([]))

  func frame(_ kind: Frame.Kind, _ value: some Encodable) -> Frame { Frame(kind, payload: PeerMessage.encode(value)) }

  var answererHello: Frame {
    frame(
      .syncHello, SyncMessage.Hello(replica: Self.answererReplica, knowledge: VersionVector(), cursor: nil, pending: 0))
  }

  func batch(_ records: [SyncRecord], position: UInt64) -> Frame {
    Frame(.syncBatch, payload: SyncRecordBatch.encode(.init(position: position, records: records)))
  }

  func assertRefused(
    _ side: Side, _ reason: SyncRefuseReason, file: StaticString = #filePath, line: UInt = #line
  ) {
    guard case .refusedPeer(let violation) = side.ending else {
      return XCTFail("refused as \(reason): \(String(describing: side.ending))", file: file, line: line)
    }
    XCTAssertEqual(violation.reason, reason, violation.detail, file: file, line: line)
    XCTAssertEqual(
      side.sent.last, Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: reason))), file: file,
      line: line)
    XCTAssertTrue(
      side.received.isEmpty || reason == .unexpectedFrame, "nothing of the bad data applied", file: file, line: line)
  }

  func testAHelloOfAnotherVersionIsRefusedAsSuch() {
    for version in [1, 2, 4] {
      var hello = SyncMessage.Hello(replica: Self.askerReplica, knowledge: VersionVector(), cursor: nil, pending: nil)
      hello.version = version
      let answerer = answererFed([frame(.syncHello, hello)])
      assertRefused(answerer, .version)
      guard case .refusedPeer(let violation) = answerer.ending else { continue }
      XCTAssertEqual(violation.peerVersion, version, "the refusal knows the version the peer speaks")
      // The refusal says which version this side speaks, so the other side names both.
      let refusal = try? XCTUnwrap(answerer.sent.last)
      XCTAssertEqual(refusal.flatMap { SyncMessage.refusingVersion($0.payload) }, SyncMessage.version)
      let asker = askerFed(refusal.map { [$0] } ?? [])
      XCTAssertEqual(asker.ending, .refusedVersion(peerVersion: SyncMessage.version))
    }
    // A refusal from a peer of version 2, which does not say its own version.
    let old = askerFed([Frame(.syncRefuse, payload: Array(#"{"reason":"version"}"#.utf8))])
    XCTAssertEqual(old.ending, .refusedVersion(peerVersion: nil))
  }

  func testMalformedMessagesAreRefusedAsMalformed() {
    assertRefused(answererFed([Frame(.syncHello, payload: Array("{not json".utf8))]), .malformed)
    assertRefused(
      answererFed([
        Frame(.syncHello, payload: Array(#"{"version":3,"replica":"not-a-replica","knowledge":{}}"#.utf8))
      ]), .malformed)
    assertRefused(askerFed([answererHello, Frame(.syncBatch, payload: [2, 0, 0])]), .malformed)
    var bytes = SyncRecordBatch.encode(.init(position: 1, records: [Self.record(Self.answererReplica, 1)]))
    bytes.append(0)
    assertRefused(askerFed([answererHello, Frame(.syncBatch, payload: bytes)]), .malformed)
    assertRefused(askerFed([answererHello, Frame(.syncDone, payload: Array("[]".utf8))]), .malformed)
    // Notebooks and keys that break their rules refuse the whole hello: an invitation that
    // claims knowledge, a head that is not an op id, the same notebook twice, a key of 31
    // bytes.
    var invitation = NotebookEntry(id: Self.notebook, heads: [], held: false)
    invitation.knowledge = [Self.askerReplica.rawValue: 1]
    var badHead = NotebookEntry(id: Self.notebook, heads: [], held: true)
    badHead.heads = [String(repeating: "Z", count: 64)]
    let twice = NotebookEntry(id: Self.notebook, heads: [], held: true)
    for notebooks in [[invitation], [badHead], [twice, twice]] {
      var offered = SyncMessage.Hello(
        replica: Self.answererReplica, knowledge: VersionVector(), cursor: nil, pending: 0, notebooks: notebooks)
      assertRefused(askerFed([frame(.syncHello, offered)]), .malformed)
      offered.notebooks = nil
      offered.keys = [String(repeating: "A", count: 40) + "=="]
      assertRefused(askerFed([frame(.syncHello, offered)]), .malformed)
    }
    // A frame that breaks the framing itself: another frame version.
    var (asker, _) = sides()
    asker.run(asker.machine.ask(asker.hello))
    asker.run(asker.machine.receive(bytes: [2, Frame.Kind.syncHello.rawValue, 0, 0, 0, 0], through: &asker.decoder))
    assertRefused(asker, .malformed)
  }

  func testNumbersOutOfRangeAreRefused() {
    let tooBig = (UInt64(1) << 53) + 1
    assertRefused(
      answererFed([
        frame(
          .syncHello,
          SyncMessage.Hello(replica: Self.askerReplica, knowledge: VersionVector(), cursor: nil, pending: tooBig))
      ]), .outOfRange)
    assertRefused(
      askerFed([answererHello, batch([Self.record(Self.answererReplica, tooBig)], position: 1)]), .outOfRange)
    assertRefused(askerFed([answererHello, batch([], position: tooBig)]), .outOfRange)
    assertRefused(
      askerFed([answererHello, frame(.syncDone, SyncMessage.Done(position: tooBig, knowledge: VersionVector()))]),
      .outOfRange)
  }

  func testTooManyReplicasAreRefused() {
    var knowledge: [String: UInt64] = [:]
    for index in 0..<(SyncLimits.maximumReplicas + 1) {
      knowledge[String(format: "%032x", index)] = 1
    }
    var hello = SyncMessage.Hello(replica: Self.askerReplica, knowledge: VersionVector(), cursor: nil, pending: nil)
    hello.knowledge = knowledge
    assertRefused(answererFed([frame(.syncHello, hello)]), .tooManyReplicas)
  }

  func testARecordWhoseClockDoesNotEndAtItsDotIsRefused() {
    var record = Self.record(Self.answererReplica, 3)
    record.clock = VersionVector([Self.answererReplica: 2])
    assertRefused(askerFed([answererHello, batch([record], position: 1)]), .invalidRevision)
  }

  func testFramesOutOfTheSessionsOrderAreRefused() {
    // Before the hello, a batch; instead of a hello, an ack; a pairing frame in a sync.
    assertRefused(askerFed([batch([], position: 1)]), .unexpectedFrame)
    assertRefused(answererFed([frame(.syncAck, SyncMessage.Ack(position: 0))]), .unexpectedFrame)
    assertRefused(askerFed([answererHello, Frame(.pairCommit, payload: [])]), .unexpectedFrame)
    // A second hello in the middle of the answerer's direction.
    assertRefused(askerFed([answererHello, answererHello]), .unexpectedFrame)
  }

  func testBatchesAndSyncDoneOutOfPositionOrderAreRefusedBeforeAnythingIsAdopted() {
    let first = batch([Self.record(Self.answererReplica, 1)], position: 1)
    let second = batch([Self.record(Self.answererReplica, 2)], position: 2)
    let done = frame(.syncDone, SyncMessage.Done(position: 2, knowledge: VersionVector()))
    // A sync-done that overtook the last batch: adopting it would claim a record never received.
    let early = askerFed([answererHello, first, done, second])
    assertRefused(early, .unexpectedFrame)
    XCTAssertFalse(early.finishedReceiving, "nothing adopted")
    XCTAssertEqual(early.received.map(\.dot.seq), [1])
    // A batch from before the last one.
    let back = askerFed([answererHello, second, first])
    assertRefused(back, .unexpectedFrame)
    XCTAssertEqual(back.received.map(\.dot.seq), [2], "the batch that went back is not applied")
    // In order, the same frames complete the direction.
    let inOrder = askerFed([answererHello, first, second, done])
    XCTAssertTrue(inOrder.finishedReceiving)
    XCTAssertNil(inOrder.ending.flatMap { if case .refusedPeer(let why) = $0 { why } else { nil } })
  }

  func testAcknowledgementsThatNoBatchExplainsAreRefused() {
    // The answerer sends first; an asker that acknowledges beyond what was sent, or
    // acknowledges nothing that was sent, or gives its outcome early, is refused.
    let hello = frame(
      .syncHello, SyncMessage.Hello(replica: Self.askerReplica, knowledge: VersionVector(), cursor: nil, pending: nil))
    assertRefused(answererFed([hello, frame(.syncAck, SyncMessage.Ack(position: 99))]), .outOfRange)
    assertRefused(
      answererFed([hello, frame(.syncAck, SyncMessage.Ack(position: 1, outcome: .init()))]), .unexpectedFrame)
    assertRefused(
      answererFed(
        [hello] + Array(repeating: frame(.syncAck, SyncMessage.Ack(position: 2)), count: SyncMachine.window + 1)),
      .unexpectedFrame)
    var outcome = SyncMessage.Outcome()
    outcome.applied = -1
    var (asker, answerer) = sides(askerRecords: 1, answererRecords: 0)
    asker.run(asker.machine.ask(asker.hello))
    // Hellos and ops both ways, then the answerer's (empty) direction: the asker sends.
    for _ in 0..<2 {
      answerer.deliver(asker.take(), chunks: &dummy, pieces: .whole)
      asker.deliver(answerer.take(), chunks: &dummy, pieces: .whole)
    }
    _ = asker.take()
    asker.deliver(
      [frame(.syncAck, SyncMessage.Ack(position: 1)), frame(.syncAck, SyncMessage.Ack(position: 1, outcome: outcome))],
      chunks: &dummy, pieces: .whole)
    assertRefused(asker, .outOfRange)
  }

  func testAFloodBeyondTheWindowIsRefusedWithoutApplyingIt() {
    // Twelve batches in one piece while the asker still plans: no correct answerer does that.
    var asker = askerFed(
      [answererHello] + (1...12).map { batch([Self.record(Self.answererReplica, UInt64($0))], position: UInt64($0)) })
    assertRefused(asker, .unexpectedFrame)
    XCTAssertLessThanOrEqual(asker.received.count, SyncMachine.window + 2)
    asker.run(asker.machine.handle(.frame(answererHello)))
    XCTAssertEqual(asker.sent.last?.kind, .syncRefuse, "nothing more after the end")
  }

  func testWhatTheStoreRefusesIsRefusedAndNothingOfItAcknowledged() {
    for reason in [
      SyncRefuseReason.ownOrigin, .futureClock, .invalidRevision, .tooManyCopies, .tooManyHeld, .tooManyReplicas,
    ] {
      var (asker, answerer) = sides(askerRecords: 0, answererRecords: 3)
      asker.onApply = { _ in .refused(SyncViolation(reason, "the store's rule")) }
      session(&asker, &answerer, pieces: .whole)
      assertRefused(asker, reason)
      XCTAssertFalse(asker.sent.contains { $0.kind == .syncAck }, "no batch acknowledged")
      XCTAssertEqual(answerer.ending, .refusedByPeer(reason), "the sender hears the reason")
    }
  }

  func testALockedOrBrokenAnswererSaysSoAndTheAskerHearsIt() {
    for reason in [SyncRefuseReason.locked, .storage] {
      var (asker, answerer) = sides()
      answerer.onPlan = .unavailable(reason)
      session(&asker, &answerer, pieces: .bytes)
      XCTAssertEqual(answerer.ending, .unavailable(reason))
      XCTAssertEqual(asker.ending, .refusedByPeer(reason))
      XCTAssertTrue(asker.received.isEmpty)
    }
    var (asker, answerer) = sides()
    answerer.onPlan = .failed
    session(&asker, &answerer, pieces: .whole)
    XCTAssertEqual(answerer.ending, .storeFailed)
    XCTAssertEqual(asker.ending, .refusedByPeer(.storage), "an answerer's store failure is told as storage")
  }

  func testAnUnknownRefusalAndAClosedConnectionEndTheSession() {
    let unknown = askerFed([Frame(.syncRefuse, payload: Array(#"{"reason":"from-the-future"}"#.utf8))])
    XCTAssertEqual(unknown.ending, .refusedByPeer(nil))
    var (asker, answerer) = sides()
    asker.run(asker.machine.ask(asker.hello))
    answerer.deliver(asker.take(), chunks: &dummy, pieces: .whole)
    asker.deliver(answerer.take(), chunks: &dummy, pieces: .whole)
    answerer.deliver(asker.take(), chunks: &dummy, pieces: .whole)
    asker.deliver(Array(answerer.take().prefix(1)), chunks: &dummy, pieces: .whole)
    asker.run(asker.machine.handle(.closed))
    XCTAssertEqual(asker.ending, .closed)
    XCTAssertEqual(asker.received.count, 2, "what was committed stays")
  }
}
