import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore

/// What a trusted but broken device can send into a store through a sync (issue 13, cases
/// 2–5), applied with the production `SyncSink`: every bad batch is refused with its reason
/// and commits nothing; knowledge is adopted only as far as this node has seen; the
/// mass-delete guard weighs removals against the memos there were and adds them up over a
/// day; the limits hold.
final class SyncHostileStoreTests: XCTestCase {
  var nodes: [TemporaryNode] = []
  let peer = TestDevices.id(named: "HOSTILE")
  let made = TestAuthor.shared.replica(0)

  func store() throws -> MemoStore {
    let node = try TemporaryNode()
    nodes.append(node)
    return try node.open()
  }

  func sink(_ store: MemoStore, guard deleteGuard: MassDeleteGuard? = MassDeleteGuard(), maximumHeld: Int? = nil)
    throws -> RevisionSink
  {
    try RevisionSink(
      store: store, peer: peer, peerReplica: made, deleteGuard: deleteGuard,
      maximumHeld: maximumHeld ?? SyncLimits.maximumHeldPerPeer)
  }

  /// A revision as a store holds it, as the peer would send it.
  func revision(_ memo: Memo) -> SyncRevision {
    SyncRevision(
      memo: memo.conflictOf ?? memo.id,
      head: HeadSummary(dot: memo.dot!, clock: memo.clock, revision: memo.revision, isDeleted: memo.isDeleted),
      created: memo.created, updated: memo.updated, isPrivate: memo.isPrivate, title: memo.title, body: memo.body,
      tags: memo.tags)
  }

  /// A new revision by replica `origin` (sequence `seq`) that has seen `memo`.
  func edit(_ memo: Memo, origin: ReplicaID, seq: UInt64, body: String = "", deleted: Bool = false) -> SyncRevision {
    var clock = memo.clock
    clock.add(Dot(origin: origin, seq: seq))
    return SyncRevision(
      memo: memo.id,
      head: HeadSummary(
        dot: Dot(origin: origin, seq: seq), clock: clock, revision: memo.revision + 1, isDeleted: deleted),
      created: memo.created, updated: memo.updated + 1, isPrivate: false, title: deleted ? "" : memo.title,
      body: deleted ? "" : body, tags: deleted ? [] : memo.tags)
  }

  func fresh(_ index: Int, origin: ReplicaID, seq: UInt64) -> SyncRevision {
    SyncRevision(
      memo: MemoID(),
      head: HeadSummary(
        dot: Dot(origin: origin, seq: seq), clock: VersionVector([origin: seq]), revision: 1, isDeleted: false),
      created: 1, updated: 1, isPrivate: false, title: "junk \(index)", body: "junk", tags: [])
  }

  func refused(
    _ reason: SyncMessage.RefuseReason, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
  ) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
      XCTAssertEqual((error as? SyncViolation)?.reason, reason, "\(error)", file: file, line: line)
    }
  }

  // MARK: - Case 2: knowledge

  /// Knowledge of 2^53 for the sender's replica, of a replica nobody has seen, and for the
  /// receiver itself: only what the receiver has seen is adopted, so a memo made later on
  /// the sender's replica is still asked for and arrives.
  func testAPoisonedKnowledgeIsCappedAtWhatArrivedAndLaterMemosStillArrive() throws {
    let a = try store()
    let b = try store()
    try a.createMany((1...3).map { MemoDraft(title: "m\($0)", body: "b\($0)") }, now: 1)
    let receiving = try sink(b)
    let source = try RevisionSource(store: a, peerKnowledge: VersionVector(), from: 0)
    while let batch = try source.nextBatch() { _ = try receiving.apply(batch, now: 2, owner: a) }
    let poison = VersionVector([
      a.replicaID: SyncLimits.maximumSequence, made: SyncLimits.maximumSequence,
      b.replicaID: SyncLimits.maximumSequence,
    ])
    _ = try receiving.finish(SyncMessage.Done(position: source.position, knowledge: poison), now: 3)
    let knowledge = try b.knowledge(of: receiving.notebook)
    XCTAssertEqual(knowledge[a.replicaID], 3, "what arrived, not 2^53")
    XCTAssertEqual(knowledge[made], 0, "a replica nothing arrived from is ignored")
    XCTAssertEqual(knowledge[b.replicaID], 0, "its own entry is never raised by a peer")
    // A memo made afterwards on a is not hidden by the claim: a's next sync sends it.
    try a.create(MemoDraft(title: "later", body: "made after the poison"), now: 4)
    let next = try RevisionSource(store: a, peerKnowledge: knowledge, from: source.position)
    let batch = try XCTUnwrap(try next.nextBatch())
    XCTAssertEqual(batch.revisions.map(\.body), ["made after the poison"])
  }

  /// Knowledge is per notebook, and so is what bounds it: a member of one notebook cannot
  /// claim for it what this node saw of a replica only in another notebook — honest devices
  /// would then never send that replica's earlier revisions of the first.
  func testKnowledgeOfANotebookIsBoundedByWhatArrivedInThatNotebook() throws {
    let b = try store()
    let family = try b.createNotebook(named: "family", now: 1)
    // Replica `made` wrote revisions 1–40 in b's default notebook, and b received them.
    let personal = try sink(b)
    _ = try personal.apply(
      SyncBatchCodec.Batch(position: 40, revisions: (1...40).map { fresh($0, origin: made, seq: UInt64($0)) }),
      now: 2)
    _ = try personal.finish(SyncMessage.Done(position: 40, knowledge: VersionVector([made: 40])), now: 2)
    XCTAssertEqual(try b.knowledge(of: personal.notebook)[made], 40)
    // A member of family claims made:40 for family, where nothing of made has arrived.
    let hostile = try RevisionSink(
      store: b, peer: peer, peerReplica: made, deleteGuard: MassDeleteGuard(), notebook: family.id)
    _ = try hostile.finish(SyncMessage.Done(position: 0, knowledge: VersionVector([made: 40])), now: 3)
    XCTAssertEqual(try b.knowledge(of: family.id)[made], 0, "nothing of made arrived in family")
    // So made's family revisions stay wanted: one arrives, and then knowledge follows it.
    let honest = try RevisionSink(
      store: b, peer: TestDevices.id(named: "HONEST"), peerReplica: made, deleteGuard: MassDeleteGuard(),
      notebook: family.id)
    _ = try honest.apply(SyncBatchCodec.Batch(position: 1, revisions: [fresh(41, origin: made, seq: 41)]), now: 4)
    _ = try honest.finish(SyncMessage.Done(position: 1, knowledge: VersionVector([made: 41])), now: 4)
    XCTAssertEqual(try b.knowledge(of: family.id)[made], 41)
    XCTAssertEqual(try b.listing(notebook: family.id).count, 1)
  }

  /// Clocks that bring more replicas than the node may track are refused, and nothing of
  /// the batch stays.
  func testABatchThatFloodsTheReplicaCountIsRefusedWhole() throws {
    let b = try store()
    let receiving = try RevisionSink(store: b, peer: peer, peerReplica: made, deleteGuard: nil, maximumReplicas: 10)
    let wide = (0..<12).map { TestAuthor.shared.replica($0 + 1) }
    var revisions = [fresh(0, origin: made, seq: 1)]
    for (index, origin) in wide.enumerated() { revisions.append(fresh(index + 1, origin: origin, seq: 1)) }
    refused(.tooManyReplicas) { _ = try receiving.apply(.init(position: 9, revisions: revisions), now: 1) }
    XCTAssertEqual(try b.count(), 0)
    XCTAssertNil(try b.syncCursor(for: peer), "not even the position moved")
  }

  /// One peer introduces at most its quota of new replicas: what it sends under more is
  /// kept aside with the reason, and another peer's new device still gets its first write
  /// in. Before the quota, one member filled the node's budget (4,096) for everyone, and
  /// from then on every new device's first write was refused, for good (issue 23).
  func testOnePeerCannotFillTheReplicaBudgetForEveryone() throws {
    let b = try store()
    let flooding = try RevisionSink(
      store: b, peer: peer, peerReplica: made, deleteGuard: nil, maximumReplicas: 12, maximumIntroduced: 8)
    let wide = (0..<12).map { TestAuthor.shared.replica($0 + 1) }
    let revisions = wide.enumerated().map { fresh($0.offset, origin: $0.element, seq: 1) }
    _ = try flooding.apply(.init(position: 12, revisions: revisions), now: 1)
    XCTAssertEqual(try b.count(), 8, "the first 8 new replicas of the peer are taken")
    XCTAssertEqual(flooding.outcome.quarantined, 4)
    let kept = try b.quarantined()
    XCTAssertEqual(kept.map(\.peer), [peer], "the flooding peer is named")
    let reason = kept.first?.reason ?? ""
    XCTAssertTrue(reason.contains("beyond the 8 this peer may introduce"), reason)
    XCTAssertEqual(
      try b.syncCursor(for: peer, in: try b.defaultNotebook().id)?.position, 12, "the rest of its sync went on")

    let newcomer = TestDevices.id(named: "NEWCOMER")
    let itsReplica = TestAuthor.shared.replica(9_999)
    let arriving = try RevisionSink(
      store: b, peer: newcomer, peerReplica: itsReplica, deleteGuard: nil, maximumReplicas: 12, maximumIntroduced: 8)
    _ = try arriving.apply(.init(position: 1, revisions: [fresh(99, origin: itsReplica, seq: 1)]), now: 2)
    XCTAssertEqual(try b.count(), 9, "another peer's new replica still lands")
  }

  // MARK: - Case 3: the receiver's own replica, impossible numbers

  func testRevisionsClaimingTheReceiversReplicaAreRefusedOrIgnored() throws {
    let b = try store()
    let memo = try b.create(MemoDraft(title: "mine", body: "my text"), now: 1)
    let receiving = try sink(b, guard: nil)
    // "Made by b" beyond its own sequence: nobody else can sign for b's replica, so it is
    // kept aside, never stored; the rest of the batch is taken.
    let never = SyncRevision(
      memo: MemoID(),
      head: HeadSummary(
        dot: Dot(origin: b.replicaID, seq: 99), clock: VersionVector([b.replicaID: 99]), revision: 1, isDeleted: false),
      created: 1, updated: 1, isPrivate: false, title: "t", body: "forged", tags: [])
    let claiming = try sink(b, guard: nil)
    _ = try claiming.apply(.init(position: 1, revisions: [never]), now: 2)
    XCTAssertEqual(claiming.outcome.quarantined, 1)
    XCTAssertEqual(claiming.outcome.applied, 0)
    // A clock that claims b's revision 50 (b made one): a lie by its signer, which the peer
    // may only pass on, so it is kept aside naming the signer; the rest of the batch is stored.
    var lie = edit(memo, origin: made, seq: 2, body: "x")
    lie.head.clock.merge(VersionVector([b.replicaID: 50]))
    let future = try sink(b, guard: nil)
    _ = try future.apply(.init(position: 1, revisions: [lie, fresh(1, origin: made, seq: 3)]), now: 2)
    XCTAssertEqual(future.outcome.quarantined, 1)
    XCTAssertEqual(future.outcome.applied, 1)
    XCTAssertTrue(
      try b.quarantined().contains {
        $0.reason == "a revision signed by \(future.author.device.short) claiming edits this device never made"
      })
    XCTAssertEqual(try b.memo(memo.id).body, "my text")
    XCTAssertEqual(try b.count(), 2, "nothing of the forged revisions; the other one stored")
    // b's own revision, forged with another text and a clock claiming more: never stored.
    var forged = revision(memo)
    forged.body = "forged text"
    forged.head.clock = VersionVector([b.replicaID: 1, made: 7])
    XCTAssertEqual(try receiving.apply(.init(position: 1, revisions: [forged]), now: 2), 1)
    XCTAssertEqual(try b.memo(memo.id).body, "my text")
    XCTAssertEqual(receiving.outcome.applied, 0)
    XCTAssertEqual(receiving.outcome.quarantined, 1, "its signature is not b's")
    // Edits, deletes and resolutions go on as before.
    try b.update(memo.id, MemoChange(body: "edited"), now: 3)
    try b.delete(memo.id, now: 4)
  }

  /// A batch large enough that its signatures are checked while it is stored (more than
  /// 8), with one forged edit of a memo here among 20: nothing commits until every check
  /// is in, so the forged edit is kept aside, the memo keeps its text, and the other 19
  /// are stored.
  func testAForgeryAmongManyIsKeptAsideAndTheRestOfTheBatchStored() throws {
    let b = try store()
    let receiving = try sink(b, guard: nil)
    let first = fresh(0, origin: made, seq: 1)
    _ = try receiving.apply(.init(position: 1, revisions: [first]), now: 2)
    let memo = try b.memo(first.memo)
    var revisions = (1...19).map { fresh($0, origin: made, seq: UInt64($0 + 1)) }
    revisions.insert(edit(memo, origin: made, seq: 21, body: "forged edit"), at: 10)
    let records = try revisions.map { revision in
      var revision = revision
      revision.notebook = receiving.notebook
      return try b.sealRecord(revision)
    }
    var (signed, bindings) = receiving.author.signed(records)
    signed[10].signature?[0] ^= 1
    _ = try receiving.sink.apply(SyncRecordBatch.Batch(position: 2, bindings: bindings, records: signed), now: 3)
    XCTAssertEqual(receiving.outcome.quarantined, 1)
    XCTAssertEqual(receiving.outcome.applied, 20)
    XCTAssertEqual(try b.memo(first.memo).body, "junk")
    XCTAssertEqual(try b.count(), 20)
    // The same batch with every signature right stores the edit too.
    let honest = try sink(b, guard: nil)
    let (resigned, rebindings) = honest.author.signed(records)
    _ = try honest.sink.apply(SyncRecordBatch.Batch(position: 3, bindings: rebindings, records: resigned), now: 4)
    XCTAssertEqual(try b.memo(first.memo).body, "forged edit")
  }

  /// A batch writes the feed's counter and the horizons once, before it commits
  /// (`StagedWrites`): a batch rolled back for a forgery and applied again raises the
  /// horizon only to what it stored, never to the forged record's dot, and the next batch's
  /// rows follow the last row written on the feed.
  func testABatchAppliedAgainAfterAForgeryRaisesTheHorizonOnlyToWhatItStored() throws {
    let b = try store()
    let receiving = try sink(b, guard: nil)
    let feedBefore = try b.feedEnd()
    var revisions = (1...19).map { fresh($0, origin: made, seq: UInt64($0)) }
    revisions.append(fresh(20, origin: made, seq: 40))
    let records = try revisions.map { revision in
      var revision = revision
      revision.notebook = receiving.notebook
      return try b.sealRecord(revision)
    }
    var (signed, bindings) = receiving.author.signed(records)
    signed[19].signature?[0] ^= 1
    _ = try receiving.sink.apply(SyncRecordBatch.Batch(position: 1, bindings: bindings, records: signed), now: 2)
    XCTAssertEqual(receiving.outcome.quarantined, 1)
    XCTAssertEqual(try b.horizon()[made], 19)
    XCTAssertEqual(try b.horizon(of: receiving.notebook)[made], 19)
    XCTAssertEqual(try b.feedEnd(), feedBefore + 19)
    _ = try receiving.apply(.init(position: 2, revisions: [fresh(21, origin: made, seq: 20)]), now: 3)
    XCTAssertEqual(try b.feedEnd(), feedBefore + 20)
    XCTAssertEqual(try b.horizon()[made], 20)
    XCTAssertEqual(try b.count(), 20)
  }

  /// A revision counter of Int64.max (which made a later edit trap) is refused before
  /// anything is stored, whichever way it arrives.
  func testAnImpossibleRevisionNumberIsRefusedAndLaterEditsStillWork() throws {
    let b = try store()
    let memo = try b.create(MemoDraft(title: "t", body: "text"), now: 1)
    var bad = edit(memo, origin: made, seq: 1, body: "new text")
    bad.head.revision = Int64.max
    refused(.outOfRange) { _ = try sink(b, guard: nil).apply(.init(position: 1, revisions: [bad]), now: 2) }
    refused(.outOfRange) { _ = try SyncBatchCodec.decode(SyncBatchCodec.encode(.init(position: 1, revisions: [bad]))) }
    XCTAssertEqual(try b.memo(memo.id).body, "text")
    XCTAssertEqual(try b.update(memo.id, MemoChange(body: "edited"), now: 3).revision, 2)
  }

  // MARK: - Case 4: the mass-delete guard

  /// One sync bringing 100 new junk memos and 100 tombstones of the 100 real ones: weighed
  /// against the 100 live before the sync, the deletes are held; nothing real is deleted.
  func testJunkMemosCannotDiluteAMassDelete() throws {
    let b = try store()
    let memos = try b.createMany((1...100).map { MemoDraft(title: "m\($0)", body: "real \($0)") }, now: 1)
    let receiving = try sink(b)
    let junk = (1...100).map { fresh($0, origin: made, seq: UInt64($0)) }
    let tombstones = memos.enumerated().map { edit($1, origin: made, seq: UInt64(101 + $0), deleted: true) }
    _ = try receiving.apply(.init(position: 1, revisions: junk), now: 2)
    _ = try receiving.apply(.init(position: 2, revisions: tombstones), now: 2)
    let outcome = try receiving.finish(SyncMessage.Done(position: 2, knowledge: VersionVector([made: 200])), now: 3)
    XCTAssertEqual(outcome.heldDeletes, 100)
    XCTAssertEqual(outcome.liveMemos, 100, "the memos there were before the sync")
    XCTAssertEqual(try b.count(), 200, "100 real + 100 junk: no real memo deleted")
    XCTAssertEqual(try b.knowledge(of: receiving.notebook)[made], 0, "nothing claimed while deletes are held")
  }

  /// Nine deletes a sync stay under the minimum one at a time; the second nine from the same
  /// peer within a day are weighed together with the first (18 of the 20 there were).
  func testDeletesFromOnePeerAddUpOverADay() throws {
    let b = try store()
    let memos = try b.createMany((1...20).map { MemoDraft(title: "m\($0)", body: "real \($0)") }, now: 1)
    func deleteSync(_ slice: ArraySlice<Memo>, seq: UInt64, at now: Timestamp) throws -> SyncMessage.Outcome {
      let receiving = try sink(b)
      let tombstones = slice.enumerated().map { edit($1, origin: made, seq: seq + UInt64($0), deleted: true) }
      _ = try receiving.apply(.init(position: seq, revisions: tombstones), now: now)
      return try receiving.finish(SyncMessage.Done(position: seq, knowledge: VersionVector()), now: now)
    }
    let hour: Timestamp = 3_600_000
    XCTAssertEqual(try deleteSync(memos[0..<9], seq: 1, at: 10 * hour).heldDeletes, 0)
    XCTAssertEqual(try b.count(), 11)
    let second = try deleteSync(memos[9..<18], seq: 10, at: 12 * hour)
    XCTAssertEqual(second.heldDeletes, 9, "18 of 20 within a day")
    XCTAssertEqual(try b.count(), 11)
    // The ledger is on disk: the daemon restarting does not forget it.
    let reopened = try nodes[0].open()
    XCTAssertEqual(try reopened.recentRemovals(from: peer, now: 13 * hour), 9)
    // A day after the first nine, the held ones are weighed alone again (9 of 11: fewer than ten).
    XCTAssertEqual(try deleteSync(memos[9..<18], seq: 10, at: 35 * hour).heldDeletes, 0)
    XCTAssertEqual(try b.count(), 2)
  }

  /// Edits that empty memos which had a body are held like deletes; the person's answers
  /// work for them too: keep brings the text back, allow empties them.
  func testEditsThatEmptyMemosAreHeldAndAnsweredLikeDeletes() throws {
    let b = try store()
    let memos = try b.createMany((1...12).map { MemoDraft(title: "m\($0)", body: "text \($0)") }, now: 1)
    let receiving = try sink(b)
    let emptied = memos.enumerated().map { edit($1, origin: made, seq: UInt64(1 + $0), body: "") }
    _ = try receiving.apply(.init(position: 1, revisions: emptied), now: 2)
    XCTAssertEqual(
      try receiving.finish(SyncMessage.Done(position: 1, knowledge: VersionVector()), now: 3).heldDeletes, 12)
    XCTAssertEqual(Set(try b.allHeadRows().map(\.body)), Set((1...12).map { "text \($0)" }), "every body still there")
    XCTAssertEqual(try b.settleHeldDeletes(from: peer, apply: false, now: 4), 12, "keep")
    XCTAssertEqual(Set(try b.allHeadRows().map(\.body)), Set((1...12).map { "text \($0)" }))
    XCTAssertTrue(try b.allHeadRows().allSatisfy { $0.clock[made] > 0 }, "the kept memos have seen the edits")

    let c = try store()
    let others = try c.createMany((1...12).map { MemoDraft(title: "m\($0)", body: "text \($0)") }, now: 1)
    let again = try sink(c)
    _ = try again.apply(
      .init(position: 1, revisions: others.enumerated().map { edit($1, origin: made, seq: UInt64(1 + $0)) }), now: 2)
    _ = try again.finish(SyncMessage.Done(position: 1, knowledge: VersionVector()), now: 3)
    XCTAssertEqual(try c.settleHeldDeletes(from: peer, apply: true, now: 4), 12, "allow")
    XCTAssertEqual(Set(try c.allHeadRows().map(\.body)), [""])
    XCTAssertEqual(try c.count(), 12, "emptied, not deleted")
  }

  // MARK: - Case 5: limits

  func testAMemoGetsAtMost32ConflictCopies() throws {
    let b = try store()
    let memo = try b.create(MemoDraft(title: "t", body: "base"), now: 1)
    let receiving = try sink(b, guard: nil)
    // 33 concurrent edits of one memo: one is the memo, 32 are copies.
    let concurrent = (1...33).map { index in
      edit(memo, origin: TestAuthor.shared.replica(index), seq: 1, body: "copy \(index)")
    }
    _ = try receiving.apply(.init(position: 1, revisions: concurrent), now: 2)
    XCTAssertEqual(try b.conflicts().first?.copies.count, 32)
    refused(.tooManyCopies) {
      _ = try receiving.apply(
        .init(position: 2, revisions: [edit(memo, origin: made, seq: 1, body: "one more")]), now: 2)
    }
    XCTAssertEqual(try b.conflicts().first?.copies.count, 32)
  }

  func testHeldRemovalsAreBoundedPerPeer() throws {
    let b = try store()
    let memos = try b.createMany((1...5).map { MemoDraft(title: "m\($0)", body: "text \($0)") }, now: 1)
    let receiving = try sink(b, maximumHeld: 3)
    let tombstones = memos.enumerated().map { edit($1, origin: made, seq: UInt64(1 + $0), deleted: true) }
    _ = try receiving.apply(.init(position: 1, revisions: Array(tombstones.prefix(3))), now: 2)
    refused(.tooManyHeld) {
      _ = try receiving.apply(.init(position: 2, revisions: Array(tombstones.suffix(2))), now: 2)
    }
    XCTAssertEqual(try b.heldDeleteCount(peer), 3)
  }

  /// A store poisoned before these checks existed (knowledge of 2^63 and of 5,000 made-up
  /// replicas, a row with a revision counter of Int64.max) still syncs: what peers would
  /// refuse is neither claimed nor sent, and the rest arrives.
  func testAStorePoisonedBeforeTheChecksStillSyncs() throws {
    let a = try store()
    let b = try store()
    let notebook = try a.defaultNotebook().id
    try shareNotebook(notebook, among: [(a, nodes[0].device), (b, nodes[1].device)])
    let good = try a.create(MemoDraft(title: "good", body: "fine"), now: 1)
    // Stored as an unchecked sync stored it (the checks of today would refuse it).
    let poisoned = Memo(
      id: MemoID(), title: "bad", body: "poisoned", tags: [], created: 1, updated: 1, isPrivate: false,
      revision: .max, origin: .replica(made), dot: Dot(origin: made, seq: 1), clock: VersionVector([made: 1]),
      notebook: notebook)
    try a.batch { try a.storeHead(poisoned, existing: [], removing: []) }
    let node = nodes[0]
    var values = ["('\(made)', 9223372036854775807)"]
    values += (0..<5000).map { "('\(String(format: "%032x", $0))', 1)" }
    try node.tamper("INSERT INTO knowledge (origin, seq) VALUES " + values.joined(separator: ", "))
    try node.tamper(
      "INSERT INTO notebook_knowledge (notebook, origin, seq) VALUES "
        + values.map { "('\(notebook)', " + $0.dropFirst() }.joined(separator: ", "))
    for knowledge in [try a.knowledge(), try a.knowledge(of: notebook)] {
      XCTAssertEqual(knowledge.entries.count, SyncLimits.maximumReplicas)
      XCTAssertEqual(knowledge[made], 0, "beyond 2^53: left out")
      XCTAssertEqual(knowledge[a.replicaID], 1, "its own entry is always there")
    }
    // b asks a: a's hello and batches pass b's checks; the poisoned row stays behind.
    let run = runSync(b, as: nodes[1].device, with: node.answerer, batch: 4)
    XCTAssertNoThrow(try run.report())
    XCTAssertNoThrow(try run.answerer.get())
    XCTAssertEqual(try b.allHeadRows().map(\.id), [good.id])
  }

  // MARK: - Deliveries

  /// A peer may name an entry with any id of up to 64 bytes: accepting it stores the memo
  /// under one id, derived from the sender and entry id, and returns that memo; the accept
  /// policy stores the same id.
  func testAnInboxEntryWithAnIdThatIsNotAUUIDIsAcceptedUnderOneId() throws {
    let b = try store()
    let content = DeliveryMessage.Content(title: "note", body: "from a peer", tags: [], isPrivate: false, sent: 5)
    XCTAssertEqual(
      try b.receiveDelivery(
        id: "not a uuid", from: TestDevices.id(named: "SENDER"), memo: content, size: 10, policy: .ask,
        limits: ReceiveLimits(), now: 6),
      .stored("inbox", duplicate: false))
    let accepted = try b.acceptInboxEntry("not")
    XCTAssertEqual(try b.memo(accepted.id).body, "from a peer", "the returned id is the stored memo")
    XCTAssertEqual(
      accepted.id, MemoStore.deliveredMemoID(entryID: "not a uuid", sender: TestDevices.id(named: "SENDER")))
    XCTAssertEqual(try b.count(), 1)

    let c = try store()
    _ = try c.receiveDelivery(
      id: "not a uuid", from: TestDevices.id(named: "SENDER"), memo: content, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 6)
    XCTAssertEqual(try c.memo(accepted.id).body, "from a peer", "the accept policy stores the same id")
  }

  func testTheAcceptPolicyTakesABoundedNumberOfMemosADay() throws {
    let b = try store()
    let limits = ReceiveLimits(maximumAcceptedPerDay: 2)
    func deliver(_ index: Int, at now: Timestamp) throws -> DeliveryOutcome {
      try b.receiveDelivery(
        id: MemoID().rawValue, from: TestDevices.id(named: "SENDER"),
        memo: DeliveryMessage.Content(title: "n", body: "memo \(index)", tags: [], isPrivate: false, sent: now),
        size: 10, policy: .accept, limits: limits, now: now)
    }
    XCTAssertEqual(try deliver(1, at: 1000), .stored("memos", duplicate: false))
    XCTAssertEqual(try deliver(2, at: 2000), .stored("memos", duplicate: false))
    XCTAssertEqual(try deliver(3, at: 3000), .refused(.inboxFull))
    XCTAssertEqual(try deliver(4, at: 1000 + SyncLimits.guardWindow + 1), .stored("memos", duplicate: false))
  }

  func testADeliveredRevisionIsCheckedLikeASyncedOne() throws {
    let b = try store()
    let mine = try b.create(MemoDraft(title: "mine", body: "my text"), now: 1)
    // b's own memo, sent back with another text by a device that is no member of its
    // notebook: never stored over b's (it arrives as a memo of its own).
    var echo = DeliveryMessage.SentRevision(memo: mine)
    echo.clock = [b.replicaID.rawValue: 1, made.rawValue: 3]
    let forged = DeliveryMessage.Content(
      title: "mine", body: "forged", tags: [], isPrivate: false, sent: 2, revision: echo)
    _ = try b.receiveDelivery(
      id: MemoID().rawValue, from: TestDevices.id(named: "SENDER"), memo: forged, size: 10, policy: .accept,
      limits: ReceiveLimits(), now: 3)
    XCTAssertEqual(try b.memo(mine.id).body, "my text")
    XCTAssertEqual(try b.count(), 2)
    // A clock out of range is still refused as invalid input, before anything is stored.
    var future = DeliveryMessage.SentRevision(memo: mine)
    future.dotOrigin = made.rawValue
    future.dotSeq = 1
    future.clock = [made.rawValue: 1, b.replicaID.rawValue: 1 << 60]
    let content = DeliveryMessage.Content(title: "t", body: "x", tags: [], isPrivate: false, sent: 2, revision: future)
    XCTAssertThrowsError(
      try b.receiveDelivery(
        id: MemoID().rawValue, from: TestDevices.id(named: "SENDER"), memo: content, size: 10, policy: .accept,
        limits: ReceiveLimits(),
        now: 3)
    ) { error in XCTAssertEqual((error as? MemoPeerError)?.code, .invalidInput) }
    XCTAssertEqual(try b.count(), 2)
  }
}

extension SyncBatchCodec.Batch {
  /// The batch with `extra` merged into every revision's clock.
  func with(clock extra: [ReplicaID: UInt64]) -> SyncBatchCodec.Batch {
    var copy = self
    for index in copy.revisions.indices { copy.revisions[index].head.clock.merge(VersionVector(extra)) }
    return copy
  }
}
