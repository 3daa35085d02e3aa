import MemoCore
import MemoProtocol
import XCTest

/// The checks every receiver applies to a peer's sync data (SyncRules, SyncLimits): each
/// case of issue 13's list that a trusted but broken device could send, refused with its
/// reason before anything is stored.
final class SyncLimitsTests: XCTestCase {
  let mine = ReplicaID(String(repeating: "a", count: 32))!
  let theirs = ReplicaID(String(repeating: "b", count: 32))!
  let third = ReplicaID(String(repeating: "c", count: 32))!
  let memo = MemoID("8E0F3D4A-1B2C-4D5E-8F90-123456789ABC")!

  func revision(
    origin: ReplicaID? = nil, seq: UInt64 = 3, clock: [ReplicaID: UInt64]? = nil, number: Int64 = 2,
    deleted: Bool = false,
    body: String = "text"
  ) -> SyncRevision {
    let origin = origin ?? theirs
    return SyncRevision(
      memo: memo,
      head: HeadSummary(
        dot: Dot(origin: origin, seq: seq), clock: VersionVector(clock ?? [origin: seq]), revision: number,
        isDeleted: deleted),
      created: 1_700_000_000_000, updated: 1_700_000_000_001, isPrivate: false, title: deleted ? "" : "t",
      body: deleted ? "" : body, tags: [])
  }

  func assertRefused(
    _ reason: SyncMessage.RefuseReason, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
  ) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
      XCTAssertEqual((error as? SyncViolation)?.reason, reason, "\(error)", file: file, line: line)
    }
  }

  func decodeOne(_ revision: SyncRevision) throws -> SyncRevision {
    try SyncBatchCodec.decode(SyncBatchCodec.encode(.init(position: 1, revisions: [revision]))).revisions[0]
  }

  func hello(_ json: String) throws -> SyncMessage.Hello { try SyncMessage.decodeHello(Array(json.utf8)) }

  // Case 1: `pending` = 2^64-1 (it trapped in `Int(...)`).
  func testAHelloWithAnImpossiblePendingCountIsRefused() throws {
    assertRefused(.outOfRange) {
      _ = try hello(#"{"version": 3, "replica": "\#(theirs)", "knowledge": {}, "pending": 18446744073709551615}"#)
    }
    assertRefused(.outOfRange) {
      _ = try hello(#"{"version": 3, "replica": "\#(theirs)", "knowledge": {}, "pending": 9007199254740993}"#)
    }
    let fine = try hello(#"{"version": 3, "replica": "\#(theirs)", "knowledge": {}, "pending": 9007199254740992}"#)
    XCTAssertEqual(fine.pending, SyncLimits.maximumSequence)
    assertRefused(.malformed) {
      _ = try hello(#"{"version": 3, "replica": "\#(theirs)", "knowledge": {}, "pending": -1}"#)
    }
    assertRefused(.version, { _ = try hello(#"{"version": 1, "replica": "x", "knowledge": {}}"#) })
    assertRefused(.malformed, { _ = try hello(#"{"version": 3, "replica": "not a replica", "knowledge": {}}"#) })
    assertRefused(.malformed, { _ = try hello("[]") })
  }

  // Case 2: knowledge of 2^63-1 or 2^64-1, or tens of thousands of made-up replicas.
  func testKnowledgeOutOfRangeOrTooWideIsRefused() throws {
    for value in ["9223372036854775807", "18446744073709551615"] {
      assertRefused(.outOfRange) {
        _ = try hello(#"{"version": 3, "replica": "\#(theirs)", "knowledge": {"\#(third)": \#(value)}}"#)
      }
      assertRefused(.outOfRange) {
        _ = try SyncMessage.decodeDone(Array(#"{"position": 1, "knowledge": {"\#(third)": \#(value)}}"#.utf8))
      }
    }
    let wide = (0..<10_000).map { String(format: "%032x", $0) }
    let knowledge = Dictionary(uniqueKeysWithValues: wide.map { ($0, UInt64(1)) })
    assertRefused(.tooManyReplicas) {
      _ = try SyncMessage.decodeDone(
        PeerMessage.encode(
          SyncMessage.Done(
            position: 1,
            knowledge: VersionVector(Dictionary(uniqueKeysWithValues: knowledge.map { (ReplicaID($0.key)!, $0.value) }))
          )))
    }
    assertRefused(.malformed) {
      _ = try SyncMessage.decodeDone(Array(#"{"position": 1, "knowledge": {"short": 1}}"#.utf8))
    }
  }

  func testAdoptedKnowledgeNeverExceedsWhatThisNodeHasSeen() {
    let horizon = VersionVector([theirs: 40, third: 7, mine: 12])
    let claimed = VersionVector([
      theirs: SyncLimits.maximumSequence, third: 5, mine: 999, ReplicaID(String(repeating: "d", count: 32))!: 3,
    ])
    let adopted = SyncRules.adoptable(claimed, horizon: horizon, own: mine)
    XCTAssertEqual(adopted, VersionVector([theirs: 40, third: 5]), "capped, unknown ignored, own untouched")
  }

  // Case 3: an impossible revision number, the receiver's own origin, an inflated clock.
  func testRevisionsWithImpossibleNumbersAreRefusedAtDecode() {
    assertRefused(.outOfRange) { _ = try decodeOne(revision(number: Int64.max)) }
    assertRefused(.outOfRange) { _ = try decodeOne(revision(number: -1)) }
    assertRefused(.outOfRange) { _ = try decodeOne(revision(seq: UInt64.max)) }
    assertRefused(.outOfRange) { _ = try decodeOne(revision(seq: 3, clock: [theirs: 3, third: UInt64.max])) }
    var late = revision()
    late.updated = Int64.max
    assertRefused(.outOfRange) { _ = try decodeOne(late) }
    assertRefused(.invalidRevision, { _ = try decodeOne(revision(seq: 3, clock: [theirs: 4])) })
    assertRefused(.malformed, { _ = try decodeOne(revision(origin: "r1", seq: 1)) })
    var unnormalised = revision()
    unnormalised.tags = ["Upper", "upper"]
    assertRefused(.invalidRevision, { _ = try decodeOne(unnormalised) })
    let flooded = Dictionary(
      uniqueKeysWithValues: (0...4096).map { (ReplicaID(String(format: "%032x", $0))!, UInt64(1)) })
    assertRefused(.tooManyReplicas) {
      _ = try decodeOne(revision(origin: ReplicaID(String(format: "%032x", 0))!, seq: 1, clock: flooded))
    }
  }

  func testOnlyTheReceiverMakesItsOwnRevisions() throws {
    let receiver = SyncRules.Receiver(replica: mine, sequence: 10)
    XCTAssertTrue(try SyncRules.admit(revision(), into: receiver))
    XCTAssertFalse(try SyncRules.admit(revision(origin: mine, seq: 9), into: receiver), "its own: skipped, not stored")
    assertRefused(.ownOrigin) { _ = try SyncRules.admit(revision(origin: mine, seq: 11), into: receiver) }
    XCTAssertTrue(try SyncRules.admit(revision(seq: 3, clock: [theirs: 3, mine: 10]), into: receiver))
    assertRefused(.futureClock) {
      _ = try SyncRules.admit(revision(seq: 3, clock: [theirs: 3, mine: 11, third: 1 << 40]), into: receiver)
    }
  }

  func testTheReplicaCapCountsEveryReplicaANodeTracks() throws {
    var budget = ReplicaBudget(known: [mine, theirs], maximum: 3)
    try budget.admit(theirs)
    try budget.admit(third)
    XCTAssertEqual(budget.known.count, 3)
    assertRefused(.tooManyReplicas) { try budget.admit(ReplicaID(String(repeating: "d", count: 32))!) }
    try budget.admit(mine)
  }

  func testAcknowledgementsAreCheckedAgainstWhatWasSent() throws {
    let ack = { (json: String) in try SyncMessage.decodeAck(Array(json.utf8), sentUpTo: 10) }
    XCTAssertEqual(try ack(#"{"position": 10}"#).position, 10)
    assertRefused(.outOfRange) { _ = try ack(#"{"position": 11}"#) }
    assertRefused(.outOfRange) {
      _ = try ack(#"{"position": 1, "outcome": {"applied": -5, "conflicts": 0, "held_deletes": 0, "live_memos": 0}}"#)
    }
    assertRefused(.malformed) { _ = try ack(#"{"position": "x"}"#) }
  }

  func testAHelloOfAnotherProtocolOrAnImpossibleRotationIsRefused() throws {
    let key = Data(repeating: 1, count: 32).base64EncodedString()
    var hello = PeerMessage.Hello(discoveryKey: key, rotationSeconds: 900)
    XCTAssertNoThrow(try PeerMessage.check(hello))
    hello.protocolVersion = 2
    XCTAssertThrowsError(try PeerMessage.check(hello)) { error in
      XCTAssertEqual((error as? TransportError)?.kind, .protocolViolation)
      XCTAssertEqual((error as? TransportError)?.detail, "the peer speaks protocol 2, this node 1")
    }
    for rotation: Int64 in [0, 604_801, .max] {
      XCTAssertThrowsError(try PeerMessage.check(PeerMessage.Hello(discoveryKey: key, rotationSeconds: rotation)))
    }
    // A rotation that reached a trust store anyway cannot make the tag arithmetic trap.
    XCTAssertGreaterThan(Advertisement.periodEnd(at: 1_800_000_000_000, rotationSeconds: .max), 0)
  }

  func testADeliveryIsCheckedLikeASyncRevision() throws {
    let stored = Memo(
      id: memo, title: "t", body: "text", tags: [], created: 1, updated: 2, isPrivate: false, revision: 1,
      origin: .replica(theirs), dot: Dot(origin: theirs, seq: 4), clock: VersionVector([theirs: 4]))
    var content = DeliveryMessage.Content(
      title: "t", body: "text", tags: [], isPrivate: false, sent: 5,
      revision: DeliveryMessage.SentRevision(memo: stored))
    XCTAssertNoThrow(try DeliveryMessage.check(DeliveryMessage.Deliver(id: "some-id", memo: content)))
    assertRefused(.malformed) {
      try DeliveryMessage.check(DeliveryMessage.Deliver(id: String(repeating: "x", count: 65), memo: content))
    }
    content.revision?.revision = Int64.max
    assertRefused(.outOfRange) { try DeliveryMessage.check(DeliveryMessage.Deliver(id: "x", memo: content)) }
    content.revision?.revision = 1
    content.revision?.clock = [theirs.rawValue: 4, third.rawValue: 1 << 60]
    assertRefused(.outOfRange) { try DeliveryMessage.check(DeliveryMessage.Deliver(id: "x", memo: content)) }
    content.revision = nil
    content.sent = -1
    assertRefused(.outOfRange) { try DeliveryMessage.check(DeliveryMessage.Deliver(id: "x", memo: content)) }
  }

  func testTheNextRevisionNumberNeverOverflows() throws {
    XCTAssertEqual(try MemoRules.nextRevision(after: 3, 7), 8)
    XCTAssertThrowsError(try MemoRules.nextRevision(after: SyncLimits.maximumRevision))
    XCTAssertThrowsError(try MemoRules.nextRevision(after: Int64.max))
  }
}
