import MemoCore
import MemoProtocol
import XCTest

/// The receive policy without a store: every decision a sink makes of a peer's records,
/// from facts given here as a store would read them.
final class SyncReceivePolicyTests: XCTestCase {
  let member = NotebookID(String(repeating: "a", count: 32))!
  let relayed = NotebookID(String(repeating: "b", count: 32))!
  let other = NotebookID(String(repeating: "c", count: 32))!
  let author = DeviceID(bytes: [UInt8](repeating: 0xAA, count: 32))!
  let me: ReplicaID = "me"

  func policy(
    limits: SyncReceivePolicy.Limits? = nil, firstFill: Set<NotebookID> = [], known: Set<ReplicaID> = ["me", "p"],
    maximumReplicas: Int = 10, held: Int = 0, purged: Set<PurgedMemo> = [], sequence: UInt64 = 5
  ) -> SyncReceivePolicy {
    SyncReceivePolicy(
      limits: limits
        ?? .init(maximumHeld: 3, maximumNewMemos: 100, maximumFirstFill: 100, maximumRelayedBytes: 1_000),
      receiving: [member: .member, relayed: .relay], firstFill: firstFill,
      receiver: SyncRules.Receiver(replica: me, sequence: sequence),
      budget: ReplicaBudget(known: known, maximum: maximumReplicas), held: held, purged: purged)
  }

  func record(
    _ notebook: NotebookID, memo: MemoID = MemoID(), origin: ReplicaID = "p", seq: UInt64 = 1,
    clock: [ReplicaID: UInt64] = [:], bytes: Int = 10
  ) -> SyncRecord {
    var entries = clock
    entries[origin] = seq
    return SyncRecord(
      notebook: notebook, memo: memo, dot: Dot(origin: origin, seq: seq), clock: VersionVector(entries),
      keyID: String(repeating: "0", count: 32), sealed: [UInt8](repeating: 1, count: bytes))
  }

  func revision(of record: SyncRecord, title: String = "a title") -> SyncRevision {
    SyncRevision(
      memo: record.memo, head: HeadSummary(dot: record.dot, clock: record.clock, revision: 1, isDeleted: false),
      created: 1, updated: 1, isPrivate: false, title: title, body: "", tags: [], notebook: record.notebook)
  }

  func testARecordOfATakenNotebookIsAppliedInItsRole() {
    var policy = policy()
    XCTAssertEqual(policy.decide(record(member), .author(author)), .apply(.member, author: author))
    XCTAssertEqual(policy.decide(record(relayed), .author(nil)), .apply(.relay, author: nil))
  }

  func testRecordsNotOursArePassedOverBeforeAnyCheck() {
    let purgedMemo = MemoID()
    var policy = policy(purged: [PurgedMemo(notebook: member, memo: purgedMemo)])
    // Out of range, but never looked at: the notebook is not taken, or the memo purged.
    XCTAssertEqual(policy.decide(record(other, seq: 0), .author(author)), .skip(.notTaken))
    XCTAssertEqual(policy.decide(record(member, memo: purgedMemo, seq: 0), .author(author)), .skip(.purged))
    XCTAssertEqual(
      policy.decide(record(relayed, memo: purgedMemo), .author(author)), .apply(.relay, author: author),
      "a purge names its notebook")
    XCTAssertEqual(policy.outcome, SyncMessage.Outcome())
  }

  func testNumbersOutOfRangeRefuseTheBatch() {
    var policy = policy()
    XCTAssertEqual(policy.decide(record(member, seq: 0), .author(author)).violation?.reason, .outOfRange)
  }

  func testAForgeryIsKeptAsideAndCountsTowardsNothing() {
    var policy = policy(maximumReplicas: 2)
    XCTAssertEqual(
      policy.decide(record(member, origin: "new"), .refused("a bad signature")), .keepAside("a bad signature"))
    XCTAssertEqual(policy.outcome.quarantined, 1)
    XCTAssertEqual(policy.budget.known, ["me", "p"], "a forged replica takes no place in the budget")
  }

  func testAWaitingAuthorLeavesItsNotebookIncomplete() {
    var policy = policy()
    XCTAssertEqual(policy.decide(record(member), .waiting), .skip(.waiting))
    XCTAssertEqual(policy.incomplete, [member])
    XCTAssertEqual(policy.decide(record(member), .author(author)), .skip(.incomplete), "nothing more of it")
    XCTAssertEqual(policy.decide(record(relayed), .author(author)), .apply(.relay, author: author))
  }

  func testAClockClaimingThisDevicesFutureIsKeptAsideWithItsSigner() {
    var policy = policy(sequence: 5)
    let signed = policy.decide(record(member, clock: ["me": 6]), .author(author))
    XCTAssertEqual(signed, .keepAside("a revision signed by \(author.short) claiming edits this device never made"))
    let unsigned = policy.decide(record(member, clock: ["me": 6]), .author(nil))
    XCTAssertEqual(unsigned, .keepAside("an unsigned revision claiming edits this device never made"))
    XCTAssertEqual(policy.outcome.quarantined, 2)
    XCTAssertEqual(policy.decide(record(member, clock: ["me": 5]), .author(author)), .apply(.member, author: author))
  }

  func testThisDevicesOwnRevisionComingBackIsAnEchoNeverOwnOrigin() {
    var policy = policy(sequence: 5)
    for role in [member, relayed] {
      XCTAssertEqual(policy.decide(record(role, origin: me, seq: 5), .author(author)), .skip(.echo))
      XCTAssertEqual(policy.decide(record(role, origin: me, seq: 1), .author(nil)), .skip(.echo))
    }
    // One it wrote while the session ran: the receiver is read again for each batch.
    policy.receiver.sequence = 7
    XCTAssertEqual(policy.decide(record(member, origin: me, seq: 7), .author(author)), .skip(.echo))
    XCTAssertEqual(policy.outcome, SyncMessage.Outcome(), "an echo is neither applied nor kept aside")
  }

  func testARevisionOfThisDeviceItNeverMadeIsRefused() {
    var policy = policy(sequence: 5)
    XCTAssertEqual(policy.decide(record(member, origin: me, seq: 6), .author(author)).violation?.reason, .ownOrigin)
  }

  func testNewReplicasBeyondTheBudgetAreRefused() {
    var policy = policy(known: ["me", "p"], maximumReplicas: 3)
    XCTAssertEqual(policy.decide(record(member, origin: "q"), .author(author)), .apply(.member, author: author))
    XCTAssertEqual(policy.decide(record(member, origin: "q", seq: 2), .author(author)), .apply(.member, author: author))
    XCTAssertEqual(policy.decide(record(member, origin: "r"), .author(author)).violation?.reason, .tooManyReplicas)
    XCTAssertEqual(policy.budget.known, ["me", "p", "q"])
  }

  func testARelaysSealedBytesPerAuthorAreBounded() {
    var policy = policy()
    let first = record(relayed, bytes: 600)
    XCTAssertEqual(
      policy.uncountedRelayedAuthors(
        [first, record(member), record(relayed)], [.author(author), .author(author), .author(nil)]),
      [SyncReceivePolicy.RelayedAuthor(notebook: relayed, author: author)], "a relayed, signed record's author alone")
    policy.learnRelayedBytes(300, of: SyncReceivePolicy.RelayedAuthor(notebook: relayed, author: author))
    XCTAssertTrue(policy.uncountedRelayedAuthors([first], [.author(author)]).isEmpty, "read once a session")
    XCTAssertEqual(policy.decide(first, .author(author)), .apply(.relay, author: author))
    let over = policy.decide(record(relayed, seq: 2, bytes: 101), .author(author))
    XCTAssertEqual(over.violation?.reason, .overQuota)
    XCTAssertEqual(policy.decide(record(relayed, seq: 2, bytes: 100), .author(author)), .apply(.relay, author: author))
    XCTAssertEqual(
      policy.decide(record(relayed, seq: 3, bytes: 900), .author(nil)), .apply(.relay, author: nil),
      "an unsigned record has no author to count")
  }

  func testAMembersRecordIsDecidedAgainOnceOpened() {
    var policy = policy()
    let sound = record(member)
    XCTAssertEqual(
      policy.decide(opened: .revision(revision(of: sound)), of: sound, author: author), .apply(.member, author: author))
    let unnormalised = policy.decide(opened: .revision(revision(of: sound, title: " padded ")), of: sound, author: nil)
    XCTAssertEqual(unnormalised.violation?.reason, .invalidRevision)
    let unreadable = SyncViolation(.invalidRevision, "a record that does not open")
    XCTAssertEqual(
      policy.decide(opened: .unreadable(unreadable), of: sound, author: nil), .keepAside(unreadable.detail))
    XCTAssertEqual(policy.outcome.quarantined, 1)
    XCTAssertEqual(policy.decide(opened: .missingKey, of: sound, author: nil), .skip(.missingKey))
    XCTAssertEqual(policy.decide(record(member), .author(author)), .skip(.incomplete))
  }

  func testHeldRemovalsAreBoundedWithThoseHeldBefore() throws {
    var policy = policy(held: 2)
    try policy.count(.held, in: member, as: .member)
    XCTAssertThrowsError(try policy.count(.held, in: member, as: .member)) { error in
      XCTAssertEqual((error as? SyncViolation)?.reason, .tooManyHeld)
    }
    XCTAssertEqual(policy.outcome.applied, 0)
  }

  func testStoredRevisionsAreCounted() throws {
    var policy = policy()
    try policy.count(.stored(conflict: true, live: 0), in: member, as: .member)
    try policy.count(.stored(conflict: false, live: -1), in: member, as: .member)
    try policy.count(.stored(conflict: false, live: 1), in: relayed, as: .relay)
    try policy.count(.known, in: member, as: .member)
    XCTAssertEqual(policy.outcome, SyncMessage.Outcome(applied: 3, conflicts: 1))
    XCTAssertEqual(policy.liveChange, -1, "a relay's memos are not live here")
    XCTAssertEqual(policy.added, 1)
  }

  func testNewMemosADayCountWithThoseAddedBefore() throws {
    var policy = policy(limits: .init(maximumHeld: 3, maximumNewMemos: 3, maximumFirstFill: 1, maximumRelayedBytes: 1))
    policy.startDay(20, before: 2)
    try policy.count(.stored(conflict: false, live: 1), in: member, as: .member)
    try policy.count(.stored(conflict: false, live: 0), in: member, as: .member)
    XCTAssertThrowsError(try policy.count(.stored(conflict: false, live: 1), in: relayed, as: .relay)) { error in
      XCTAssertEqual((error as? SyncViolation)?.reason, .overQuota)
    }
  }

  func testAFirstFillIsBoundedPerNotebookAndNotByTheDailyQuota() throws {
    var policy = policy(
      limits: .init(maximumHeld: 3, maximumNewMemos: 1, maximumFirstFill: 2, maximumRelayedBytes: 1),
      firstFill: [member])
    try policy.count(.stored(conflict: false, live: 1), in: member, as: .member)
    try policy.count(.stored(conflict: false, live: 1), in: member, as: .member)
    XCTAssertEqual(policy.added, 0)
    XCTAssertThrowsError(try policy.count(.stored(conflict: false, live: 1), in: member, as: .member)) { error in
      XCTAssertEqual((error as? SyncViolation)?.reason, .overQuota)
      XCTAssertTrue("\(error)".contains("first sync"))
    }
    try policy.count(.stored(conflict: false, live: 1), in: relayed, as: .relay)
    XCTAssertEqual(policy.added, 1, "another notebook counts by the day")
  }
}

extension SyncReceiveDecision {
  /// The refusal, when it is one.
  var violation: SyncViolation? {
    if case .refuse(let violation) = self { return violation }
    return nil
  }
}
