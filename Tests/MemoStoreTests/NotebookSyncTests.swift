import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// Sync with notebooks between real stores, through the production session over in-memory
/// channels: who gets what, the blind relay, an unshare and its key rotation, a record
/// changed on the way, and stores migrated from schema 4 syncing as before.
final class NotebookSyncTests: XCTestCase {
  var nodes: [TemporaryNode] = []

  func device() throws -> (node: TemporaryNode, store: MemoStore) {
    let node = try TemporaryNode()
    nodes.append(node)
    return (node, try node.open())
  }

  /// `asker` syncs with `answerer` (both ways); both sides must succeed.
  @discardableResult
  func sync(
    _ asker: (node: TemporaryNode, store: MemoStore), with answerer: (node: TemporaryNode, store: MemoStore),
    guard deleteGuard: MassDeleteGuard? = nil
  ) throws -> SyncSession.Report {
    let run = runSync(
      asker.store, as: asker.node.device, with: answerer.node.answerer, deleteGuard: deleteGuard, batch: 4)
    let report = try run.report()
    try run.answerer.get()
    return report
  }

  func bodies(_ store: MemoStore) throws -> Set<String> {
    Set(try store.allHeadRows().filter { !$0.isDeleted }.map(\.body))
  }

  /// The ids and content a store holds anywhere in its data files (memos, relayed records,
  /// held deletes, WAL), as raw bytes.
  func holds(_ node: TemporaryNode, _ text: String) throws -> Bool {
    try node.rawDataBytes().contains(bytes: Array(text.utf8))
  }

  func testANewlyTrustedDeviceGetsNothingUntilANotebookIsShared() throws {
    let b = try device()
    let d = try device()
    try b.store.create(MemoDraft(title: "t", body: "mine alone"), now: 1)
    let report = try sync(d, with: b)
    XCTAssertEqual(report.received.applied, 0)
    XCTAssertEqual(try d.store.count(), 0)
    XCTAssertFalse(try holds(d.node, "mine alone"))
  }

  /// A key generation a member made up (2^53) counts for nothing: a key op's generation is
  /// exactly one more than the highest before it in the log. Before, the next rotation here
  /// made generation 2^53 + 1, which every peer refused, and every later sync of this device
  /// failed. Consecutive generations (a member that rotated twice) still arrive.
  func testAMadeUpKeyGenerationCountsForNothingAndLaterRotationsStayValid() throws {
    let b = try device()
    let c = try device()
    let notebook = try b.store.defaultNotebook().id
    try shareNotebook(notebook, among: [(b.store, b.node.device), (c.store, c.node.device)])
    // c, a member, signs a key of generation 2^53 (sealed to nobody) into its log.
    _ = try c.store.batch {
      try c.store.appendOwnOp(notebook, now: 2) { log, signer in
        var op = try log.rotateKey(keyID: Array(repeating: 7, count: 16), sealed: [:], signer: signer)
        op.body = .key(generation: 1 << 53, keyID: Array(repeating: 7, count: 16), sealed: [])
        op.signature = try signer.signature(for: op.signedMessage)
        return op
      }
    }
    try sync(b, with: c)
    let state = try XCTUnwrap(try b.store.membershipState(notebook))
    XCTAssertEqual(state.void.count, 1, "b holds c's op, which counts for nothing")
    XCTAssertLessThan(state.generation, 1 << 53)
    XCTAssertNil(try b.store.keyring(notebook)[String(repeating: "07", count: 16)])
    // b rotates twice: both generations reach c in one sync, and both go on syncing.
    try b.store.batch {
      try b.store.rotateKey(notebook, now: 4)
      try b.store.rotateKey(notebook, now: 5)
    }
    XCTAssertEqual(try b.store.membershipState(notebook)?.generation, state.generation + 2)
    try sync(c, with: b)
    let held = Set(try c.store.keyring(notebook).keys.keys)
    XCTAssertTrue(Set(try b.store.keyring(notebook).keys.keys).isSubset(of: held), "every generation of b's arrived")
    try c.store.create(MemoDraft(title: "t", body: "after the rotations"), now: 6)
    try sync(b, with: c)
    XCTAssertTrue(try bodies(b.store).contains("after the rotations"))
  }

  /// The family story in memory: d gets `family` only, and after the unshare nothing new
  /// from b or from c (which learns the unshare from b with the new key); d keeps the old;
  /// b and c read everything.
  func testFamilyGoesToItsMembersOnlyAndAnUnshareReachesTheOtherMembers() throws {
    let b = try device()
    let c = try device()
    let d = try device()
    let family = try b.store.createNotebook(named: "family", now: 1)
    let secret = try b.store.create(MemoDraft(title: "t", body: "personal secret"), now: 1)
    try b.store.create(MemoDraft(title: "t", body: "family 1"), now: 1, in: family.id)
    try b.store.share(family.id, with: c.node.device, as: .member, now: 1)
    try b.store.share(family.id, with: d.node.device, as: .member, now: 1)
    // Each gets an invitation, which a person accepts; the next sync brings the memos.
    for member in [c, d] {
      let report = try sync(member, with: b)
      XCTAssertEqual(report.ops.invited, [family.id])
      XCTAssertEqual(try bodies(member.store), [], "nothing before a person accepts")
      XCTAssertEqual(try member.store.acceptInvitation("family", now: 1).id, family.id)
      try sync(member, with: b)
    }
    try sync(d, with: c)
    XCTAssertEqual(try bodies(d.store), ["family 1"])
    XCTAssertEqual(try d.store.notebooks().first { $0.id == family.id }?.name, "family")
    XCTAssertFalse(try holds(d.node, secret.id.rawValue), "not a row of a personal memo")
    XCTAssertFalse(try holds(d.node, "personal secret"))

    let result = try b.store.unshare(family.id, from: d.node.device, now: 10)
    XCTAssertTrue(result.rotated)
    try b.store.create(MemoDraft(title: "t", body: "family 2, after"), now: 11, in: family.id)
    try sync(c, with: b)
    XCTAssertEqual(try c.store.keyring(family.id).keys.count, 2, "c has the new generation")
    XCTAssertEqual(
      try c.store.keyring(family.id).current?.id, try b.store.keyring(family.id).current?.id, "and seals with it")
    XCTAssertEqual(
      try c.store.members(of: family.id, includingRemoved: true).first { $0.device == d.node.device }?.role,
      .removed, "c learnt the unshare from b")
    try c.store.create(MemoDraft(title: "t", body: "family 3, from c"), now: 12, in: family.id)
    try sync(b, with: c)
    let toB = try sync(d, with: b)
    let toC = try sync(d, with: c)
    // Neither offers d the notebook any more: d receives nothing from either.
    XCTAssertEqual(toB.received.applied, 0)
    XCTAssertEqual(toC.received.applied, 0)
    XCTAssertEqual(try bodies(d.store), ["family 1"], "d keeps the old and gets nothing new")
    for store in [b.store, c.store] {
      XCTAssertEqual(
        try bodies(store).intersection(["family 1", "family 2, after", "family 3, from c"]),
        ["family 1", "family 2, after", "family 3, from c"])
    }
    // What d writes in family now reaches nobody.
    try d.store.create(MemoDraft(title: "t", body: "d after the unshare"), now: 13, in: family.id)
    try sync(d, with: b)
    try sync(d, with: c)
    XCTAssertFalse(try bodies(b.store).contains("d after the unshare"))
    XCTAssertFalse(try bodies(c.store).contains("d after the unshare"))
  }

  /// Laptops b and c, members of b's `personal`, and s, its relay.
  func hub() throws -> (
    b: (node: TemporaryNode, store: MemoStore), c: (node: TemporaryNode, store: MemoStore),
    s: (node: TemporaryNode, store: MemoStore), personal: NotebookID
  ) {
    let b = try device()
    let c = try device()
    let s = try device()
    let personal = try b.store.defaultNotebook().id
    try shareNotebook(
      personal, among: [(b.store, b.node.device), (c.store, c.node.device), (s.store, s.node.device)],
      roles: [.member, .member, .relay])
    return (b, c, s, personal)
  }

  /// The hub in memory: b and c never sync with each other after the key; everything goes
  /// through the relay s, which keeps sealed records only: no key, no memo, no content in
  /// any of its bytes. Concurrent edits become a conflict on both laptops.
  func testARelayCarriesWhatItCannotRead() throws {
    let (b, c, s, personal) = try hub()
    // b and c never sync with each other (an unshare would rotate the key): only through s.
    let texts = (0..<20).map { "canary hub \($0)" }
    let memos = try b.store.createMany(texts.map { MemoDraft(title: "title of \($0)", body: $0) }, now: 3)
    try sync(b, with: s)
    try sync(c, with: s)
    XCTAssertEqual(try bodies(c.store), Set(texts))
    XCTAssertEqual(try s.store.count(), 0)
    XCTAssertEqual(try s.store.relayedRevisionCount(), 20)
    XCTAssertEqual(try s.store.db.scalarInt("SELECT count(*) FROM notebook_keys WHERE notebook = '\(personal)'"), 0)
    for text in texts { XCTAssertFalse(try holds(s.node, text), "s holds \(text)") }
    XCTAssertEqual(try s.store.notebooks().first { $0.id == personal }?.role, .relay)
    XCTAssertNil(try s.store.notebooks().first { $0.id == personal }?.name, "a relay is never told the name")

    try b.store.update(memos[3].id, MemoChange(body: "edited on b"), now: 4)
    try c.store.update(memos[3].id, MemoChange(body: "edited on c"), now: 4)
    for _ in 0..<2 {
      try sync(b, with: s)
      try sync(c, with: s)
    }
    for store in [b.store, c.store] {
      XCTAssertEqual(try store.conflicts().map(\.memo), [memos[3].id])
      XCTAssertTrue(try bodies(store).isSuperset(of: ["edited on b", "edited on c"]))
    }
    XCTAssertEqual(try s.store.relayedHeads(of: memos[3].id).count, 2, "the relay keeps both heads")
    // The guard weighs deletes that come through a relay like any: a relay cannot make a
    // member delete more than it allows.
    for memo in memos.dropFirst(4) { try b.store.delete(memo.id, now: 5) }
    try sync(b, with: s)
    let held = try sync(c, with: s, guard: MassDeleteGuard())
    XCTAssertEqual(held.received.heldDeletes, 16)
    XCTAssertEqual(try c.store.liveMemoCount(), 20, "nothing deleted on c")
  }

  /// A relay keeps the sealed records it forwarded and then replaced (its history of the
  /// memo), still sealed, within the history bounds.
  func testARelayKeepsTheRecordsItReplacedWithinTheBounds() throws {
    let (b, c, s, _) = try hub()
    let memo = try b.store.create(MemoDraft(title: "relayed", body: "canary relayed v1"), now: 3)
    try sync(b, with: s)
    for version in 2...4 {
      try b.store.update(memo.id, MemoChange(body: "canary relayed v\(version)"), now: Int64(3 + version))
      try sync(b, with: s)
    }
    XCTAssertEqual(try s.store.relayedHeads(of: memo.id).count, 1)
    XCTAssertEqual(try s.store.relayedHistory(of: memo.id).map(\.dot.seq).count, 3, "v1, v2 and v3 kept")
    for version in 1...4 { XCTAssertFalse(try holds(s.node, "canary relayed v\(version)"), "sealed on the relay") }
    try sync(c, with: s)
    XCTAssertEqual(try c.store.memo(memo.id).body, "canary relayed v4")
    s.store.setHistoryLimits(HistoryLimits(revisions: 1, days: 365, totalBytes: 1 << 30, trashDays: 30))
    // s asks (its own store receives), so the limits set on it apply.
    try b.store.update(memo.id, MemoChange(body: "canary relayed v5"), now: 9)
    try sync(s, with: b)
    XCTAssertEqual(try s.store.relayedHistory(of: memo.id).count, 1, "only the newest replaced record")
    s.store.setHistoryLimits(HistoryLimits(revisions: 100, days: 365, totalBytes: 0, trashDays: 30))
    try b.store.update(memo.id, MemoChange(body: "canary relayed v6"), now: 10)
    try sync(s, with: b)
    XCTAssertEqual(try s.store.relayedHistory(of: memo.id).count, 0, "nothing past the total")
  }

  /// A relay that changes a record it keeps — its clock, to make it cover other revisions,
  /// or a byte of the sealed part — makes the member refuse the batch: nothing of it is
  /// stored, and the error names what happened.
  func testARecordChangedOnTheWayIsRefused() throws {
    let (b, c, s, _) = try hub()
    try b.store.create(MemoDraft(title: "t", body: "untouched"), now: 3)
    try sync(b, with: s)
    try s.node.tamper("UPDATE relayed SET sealed = X'01' || substr(sealed, 2, 12) || X'00' || substr(sealed, 15)")
    // The signature no longer matches: c keeps the record aside and the sync goes on.
    let report = try runSync(c.store, as: c.node.device, with: s.node.answerer, batch: 4).report()
    XCTAssertEqual(report.received.quarantined, 1)
    XCTAssertEqual(try c.store.count(), 0)
    XCTAssertEqual(try c.store.quarantined().first?.peer, s.node.device, "kept aside, naming the relay that sent it")
  }

  /// Two stores of schema 4 that trust each other migrate to the same `personal` (and
  /// share it with each other, trusted at the migration), exchange their first keys at
  /// their first sync, and go on syncing exactly as before.
  func testStoresMigratedFromSchema4SyncAsBefore() throws {
    let first = try TemporaryNode()
    let second = try TemporaryNode()
    nodes += [first, second]
    for (node, other) in [(first, second), (second, first)] {
      _ = try MemoStore.openForFixture(
        paths: node.paths, secrets: VaultStoreSecrets(paths: node.paths), schemaVersion: 4)
      try TrustStore(paths: node.paths).update {
        try $0.trust(TrustedPeer(deviceID: other.device, name: "other", discoveryKey: nil, source: .command, added: 1))
      }
    }
    let a = (first, try first.open())
    let b = (second, try second.open())
    XCTAssertEqual(try a.1.defaultNotebook().id, .migrated)
    XCTAssertEqual(try b.1.defaultNotebook().id, .migrated)
    // (Memos of schema 4 moving into it: NotebookStoreTests' fixture test.)
    try a.1.create(MemoDraft(title: "t", body: "from the first"), now: 1)
    try b.1.create(MemoDraft(title: "t", body: "from the second"), now: 1)
    try sync(a, with: b)
    XCTAssertEqual(try bodies(a.1), ["from the first", "from the second"])
    XCTAssertEqual(try a.1.allHeadRows(), try b.1.allHeadRows())
    // Each signed a genesis of the notebook from before version 3 and a first key of its log,
    // and granted the other its old key: both hold the same four, and seal with the same one.
    XCTAssertEqual(try a.1.keyring(.migrated).keys.count, 4, "both old keys and both keys of the log")
    XCTAssertEqual(Set(try a.1.keyring(.migrated).keys.keys), Set(try b.1.keyring(.migrated).keys.keys))
    XCTAssertEqual(try a.1.membershipState(.migrated)?.creators.count, 2)
    XCTAssertEqual(try a.1.keyring(.migrated).current?.id, try b.1.keyring(.migrated).current?.id)
    try a.1.create(MemoDraft(title: "t", body: "after the upgrade"), now: 2)
    try sync(b, with: a)
    XCTAssertTrue(try bodies(b.1).contains("after the upgrade"))
  }

  /// A relay is held to the rules of any receiver, without opening a record: numbers and
  /// replica ids at decode, its own replica and a clock beyond its sequence (kept aside),
  /// the replica cap, and at most 33 concurrent records of a memo; a refused batch leaves
  /// nothing; knowledge claimed in a relayed notebook is adopted only as far as the relay
  /// has seen.
  func testARelayRefusesWhatBreaksTheRulesAndKeepsNothingOfIt() throws {
    let b = try device()
    let s = try device()
    let personal = try b.store.defaultNotebook().id
    try shareNotebook(personal, among: [(b.store, b.node.device), (s.store, s.node.device)], roles: [.member, .relay])
    // The records below are signed by a test author that b made a member; s learns so from
    // b's log at the next sync.
    try b.store.share(personal, with: TestAuthor.shared.device, as: .member, now: 1)
    try sync(s, with: b)
    let made = TestAuthor.shared.replica(0)
    let key = String(repeating: "c", count: 32)
    func record(_ origin: ReplicaID, _ seq: UInt64, clock: [ReplicaID: UInt64] = [:], memo: MemoID = MemoID())
      -> SyncRecord
    {
      SyncRecord(
        notebook: personal, memo: memo, dot: Dot(origin: origin, seq: seq),
        clock: VersionVector(clock.merging([origin: seq]) { _, dot in dot }), keyID: key, sealed: [1, 2, 3])
    }
    func sink(maximumReplicas: Int = SyncLimits.maximumReplicas) throws -> SyncSink {
      try SyncSink(
        store: s.store, peer: TestDevices.id(named: "HOSTILE"), peerReplica: made, deleteGuard: MassDeleteGuard(),
        plan: SyncPlan(receiving: [personal: .relay], announced: [personal]), maximumReplicas: maximumReplicas)
    }
    // Signed by the device `made` (and the others) are bound to, so every rule is reached.
    func signed(_ records: [SyncRecord]) -> SyncRecordBatch.Batch {
      let (records, bindings) = TestAuthor.shared.signed(records)
      return .init(position: 1, bindings: bindings, records: records)
    }
    func refused(_ reason: SyncMessage.RefuseReason, _ records: [SyncRecord], maximumReplicas: Int = 4096) {
      XCTAssertThrowsError(try sink(maximumReplicas: maximumReplicas).apply(signed(records), now: 2)) {
        XCTAssertEqual(($0 as? SyncViolation)?.reason, reason, "\($0)")
      }
    }
    let fine = record(made, 1)
    // A record claiming the relay's own replica cannot carry its signature: it is kept
    // aside (never stored, never forwarded), and nothing else of the batch is refused for it.
    let claiming = try sink()
    _ = try claiming.apply(signed([record(s.store.replicaID, 99)]), now: 2)
    XCTAssertEqual(claiming.outcome.quarantined, 1)
    XCTAssertEqual(claiming.outcome.applied, 0)
    // Nor a clock claiming the relay's future: its signer's lie, kept aside as well.
    let future = try sink()
    _ = try future.apply(signed([record(made, 2, clock: [s.store.replicaID: 1 << 40])]), now: 2)
    XCTAssertEqual(future.outcome.quarantined, 1)
    XCTAssertEqual(future.outcome.applied, 0)
    refused(
      .tooManyReplicas, [fine] + (1...4).map { record(TestAuthor.shared.replica($0), 1) }, maximumReplicas: 3)
    let memo = MemoID()
    refused(.tooManyCopies, (1...34).map { record(TestAuthor.shared.replica($0), 1, memo: memo) })
    XCTAssertThrowsError(
      try SyncRecordBatch.decode(SyncRecordBatch.encode(.init(position: 1, records: [record(made, 1 << 54)])))
    ) { XCTAssertEqual(($0 as? SyncViolation)?.reason, .outOfRange) }
    XCTAssertEqual(try s.store.relayedRevisionCount(), 0, "nothing of a refused batch")
    // What is sound is kept; a claim of 2^53 is adopted only up to what arrived.
    let receiving = try sink()
    _ = try receiving.apply(signed([fine, record(made, 2)]), now: 2)
    _ = try receiving.finish(
      SyncMessage.Done(
        position: 1, knowledge: VersionVector(),
        notebooks: [personal: VersionVector([made: SyncLimits.maximumSequence])]),
      now: 3)
    XCTAssertEqual(try s.store.relayedRevisionCount(), 2)
    XCTAssertEqual(try s.store.knowledge(of: personal)[made], 2)
  }
}
