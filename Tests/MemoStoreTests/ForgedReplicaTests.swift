import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoTestSupport
import MemoVault
import Synchronization
import XCTest

@testable import MemoStore

/// A trusted member that passes on revisions it did not write (issue 24), against the real
/// sync session on both honest sides: b, the target, and c, the device it impersonates,
/// are real stores; a is a member that speaks the protocol as a client of its own would
/// (`ScriptedSyncPeer`, signing with its own key). What a forges under c's replica is kept
/// aside on b naming a, the rest of a's sync goes on, and c's own syncs with b, and c's
/// memo there, are untouched. A signed record sent again later changes nothing.
final class ForgedReplicaTests: XCTestCase {
  var nodes: [TemporaryNode] = []
  /// Device a: its identity key (a member's own, not c's).
  let forger = TestAuthor()
  /// a's own replica (bound to a's key by a's first batch).
  lazy var forgerReplica = forger.replica()

  struct Device {
    let node: TemporaryNode
    let store: MemoStore
    var id: DeviceID { node.device }
  }

  func device() throws -> Device {
    let node = try TemporaryNode()
    nodes.append(node)
    return Device(node: node, store: try node.open())
  }

  /// b owns the notebook; c and a are members of it (a by b's and c's word: it is in the
  /// family), so each of b and c opens what a sends and sends a what it has.
  func family() throws -> (b: Device, c: Device, notebook: NotebookID) {
    let b = try device()
    let c = try device()
    let notebook = try b.store.defaultNotebook().id
    try shareNotebook(notebook, among: [(b.store, b.id), (c.store, c.id)])
    try b.store.share(notebook, with: forger.device, as: .member, now: 1)
    try c.store.share(notebook, with: forger.device, as: .member, now: 1)
    return (b, c, notebook)
  }

  /// `asker` syncs with `answerer` through the production session on both sides; both
  /// must succeed (a failure here is the exit-21 kind).
  @discardableResult
  func sync(_ asker: Device, with answerer: Device, file: StaticString = #filePath, line: UInt = #line) throws
    -> SyncSession.Report
  {
    let run = runSync(asker.store, as: asker.id, with: answerer.node.answerer, batch: 4)
    XCTAssertNoThrow(try run.answerer.get(), "the answering side", file: file, line: line)
    return try run.report()
  }

  /// `b` asks a, and a answers with its hello and then `frames` (its direction), as a
  /// member would; returns b's report (or its error) and how a saw b's answers.
  func bAsksTheForger(_ b: Device, notebook: ScriptedSyncPeer.Notebook, frames: [Frame]) -> (
    report: Result<SyncSession.Report, any Error>, forger: Result<ScriptedSyncPeer.Answer, any Error>
  ) {
    let hello = ScriptedSyncPeer.hello(replica: forgerReplica, notebook: notebook)
    let (report, answer) = InMemorySession.run(
      firstID: b.id, secondID: forger.device,
      first: { channel in
        try SyncSession.ask(
          channel, peer: self.forger.device, peerName: "a", store: b.store, keys: DeviceKeys(paths: b.store.paths),
          deleteGuard: nil,
          batch: SyncSession.BatchLimits(revisions: 4), stillTrusted: .unchecked, clock: { 5 })
      },
      second: { channel in try ScriptedSyncPeer.answer(over: channel) { _ in (hello, frames) } })
    return (report, answer)
  }

  /// a asks `target` and sends `frames` as its direction; returns how `target` answered
  /// (the last acknowledgement carries the outcome of a's direction).
  func forgerAsks(_ target: Device, notebook: ScriptedSyncPeer.Notebook, frames: [Frame]) throws
    -> ScriptedSyncPeer.Answer
  {
    let hello = ScriptedSyncPeer.hello(replica: forgerReplica, notebook: notebook)
    let answerer = target.node.answerer
    return try InMemorySession.run(
      firstID: forger.device, secondID: target.id,
      first: { channel in try ScriptedSyncPeer.ask(over: channel, hello: hello, notebook: notebook) { _ in frames } },
      second: { channel in try answerer.answer(channel, batch: SyncSession.BatchLimits(revisions: 4)) }
    ).first.get()
  }

  /// A new revision of `memo` under `dot`, with the text `body`, that has seen `memo`.
  func edit(_ memo: Memo, dot: Dot, body: String, clock extra: [ReplicaID: UInt64] = [:]) -> SyncRevision {
    var clock = memo.clock
    clock.merge(VersionVector(extra))
    clock.add(dot)
    return SyncRevision(
      memo: memo.id,
      head: HeadSummary(dot: dot, clock: clock, revision: memo.revision + 1, isDeleted: false),
      created: memo.created, updated: memo.updated + 1, isPrivate: false, title: memo.title, body: body,
      tags: memo.tags)
  }

  /// A memo of its own under `dot`.
  func fresh(_ body: String, dot: Dot) -> SyncRevision {
    SyncRevision(
      memo: MemoID(),
      head: HeadSummary(dot: dot, clock: VersionVector([dot.origin: dot.seq]), revision: 1, isDeleted: false),
      created: 2, updated: 2, isPrivate: false, title: "from a", body: body, tags: [])
  }

  /// A batch frame of `records` with `bindings`.
  func batch(_ records: [SyncRecord], bindings: [ReplicaBinding] = [], position: UInt64) -> Frame {
    Frame(.syncBatch, payload: SyncRecordBatch.encode(.init(position: position, bindings: bindings, records: records)))
  }

  func bodies(_ store: MemoStore) throws -> Set<String> {
    Set(try store.allHeadRows().filter { !$0.isDeleted }.map(\.body))
  }

  // MARK: - A revision under a third device's replica

  /// a passes b three revisions under c's replica with sequences c has not used — an edit
  /// of c's memo signed with a's own key, a memo c never wrote with no signature, and an
  /// edit signed by a with a binding claiming c's replica for a's key — among a memo of its
  /// own. b keeps the three aside naming a, stores a's memo, and finishes the sync; c's
  /// memo on b is as c wrote it, b knows no more of c's replica than c sent, and nothing
  /// of the forgeries reaches c. Afterwards c writes the very sequences a used, and c's
  /// syncs with b, both ways, succeed and carry c's real edit: before signed revisions,
  /// the forged edit overwrote c's memo on b with no conflict and every later sync of c
  /// with b failed (`own-origin`, exit 21).
  func testAMemberPassingOnAThirdDevicesReplicaIsNamedAndTheThirdDeviceSyncsOn() throws {
    let (b, c, notebook) = try family()
    let original = try c.store.create(MemoDraft(title: "c's", body: "as c wrote it"), now: 2)
    try sync(c, with: b)
    let onB = try b.store.memo(original.id)
    XCTAssertEqual(onB.body, "as c wrote it")
    let cReplica = c.store.replicaID
    let cSequence = try XCTUnwrap(onB.dot).seq
    let knownOfC = try b.store.knowledge(of: notebook)[cReplica]
    XCTAssertEqual(knownOfC, cSequence)

    let sealing = try ScriptedSyncPeer.Notebook.shared(by: b.store, with: forger.device)
    let own = forger.sign(sealing.seal(fresh("a's own memo", dot: Dot(origin: forgerReplica, seq: 1))))
    let signedByA = forger.sign(
      sealing.seal(edit(onB, dot: Dot(origin: cReplica, seq: cSequence + 1), body: "forged: signed by a")))
    var unsigned = sealing.seal(fresh("forged: unsigned", dot: Dot(origin: cReplica, seq: cSequence + 2)))
    unsigned.signature = nil
    let claimed = forger.sign(
      sealing.seal(edit(onB, dot: Dot(origin: cReplica, seq: cSequence + 3), body: "forged: c's replica claimed")))
    let frames = [
      batch([own, signedByA, unsigned], bindings: [forger.binding(of: forgerReplica)], position: 1),
      batch([claimed], bindings: [forger.binding(of: cReplica)], position: 2),
      ScriptedSyncPeer.done(position: 2, knowledge: [cReplica.rawValue: cSequence + 3], in: sealing),
    ]
    let (result, answer) = bAsksTheForger(b, notebook: sealing, frames: frames)
    let report = try result.get()
    XCTAssertNoThrow(try answer.get(), "a's side of the sync ran to its end")
    XCTAssertEqual(report.received.quarantined, 3, "every forgery kept aside")
    XCTAssertEqual(report.received.applied, 1, "the rest of a's sync went on: its own memo")
    XCTAssertEqual(report.received.conflicts, 0)

    let kept = try b.store.quarantined()
    XCTAssertEqual(Set(kept.map(\.peer)), [forger.device], "the sender that passed them on is named: a")
    XCTAssertEqual(
      Set(kept.map(\.reason)),
      [
        "a revision whose signature does not match the device that owns its replica",
        "an unsigned revision beyond what this device had seen before signing",
        "a binding of a replica that belongs to another device here",
      ])
    XCTAssertEqual(kept.map(\.count).reduce(0, +), 3)
    XCTAssertEqual(try b.store.memo(original.id), onB, "c's memo on b is as c wrote it")
    XCTAssertEqual(try b.store.knowledge(of: notebook)[cReplica], knownOfC, "a's claim of c's sequence not adopted")
    XCTAssertEqual(try bodies(b.store), ["as c wrote it", "a's own memo"])
    XCTAssertEqual(try b.store.conflicts().count, 0)

    // c syncs with b as before: nothing forged reaches it, a's own memo does.
    let first = try sync(c, with: b)
    XCTAssertEqual(first.received.quarantined, 0, "b passes on nothing it kept aside")
    XCTAssertEqual(try bodies(c.store), ["as c wrote it", "a's own memo"])
    // c now writes the sequences a forged; they reach b, whichever side asks.
    try c.store.update(original.id, MemoChange(body: "c's real edit"), now: 6)
    XCTAssertEqual(try c.store.memo(original.id).dot, Dot(origin: cReplica, seq: cSequence + 1), "a's forged dot")
    let second = try sync(c, with: b)
    XCTAssertEqual(second.sent.applied, 1, "b took c's edit")
    XCTAssertEqual(try b.store.memo(original.id).body, "c's real edit")
    try c.store.create(MemoDraft(title: "c's", body: "c's second memo"), now: 7)
    try c.store.update(original.id, MemoChange(body: "c's third edit"), now: 8)
    let third = try sync(b, with: c)
    XCTAssertEqual(third.received.applied, 2)
    XCTAssertNoThrow(try sync(c, with: b))
    for store in [b.store, c.store] {
      XCTAssertEqual(try bodies(store), ["c's third edit", "c's second memo", "a's own memo"])
      XCTAssertEqual(try store.conflicts().count, 0)
    }
    XCTAssertEqual(try c.store.quarantined().count, 0, "nothing of a's forgeries ever reached c")
    XCTAssertEqual(try b.store.quarantined().map(\.count).reduce(0, +), 3, "and b kept aside nothing more")
  }

  /// a, as the asker, passes b an edit of c's memo under c's replica signed with a's key:
  /// b, answering, keeps it aside naming a and acknowledges the rest of a's direction; c's
  /// next sync with b succeeds.
  func testAForgeryFromAnAskingMemberIsKeptAsideAndTheThirdDeviceSyncsOn() throws {
    let (b, c, _) = try family()
    let original = try c.store.create(MemoDraft(title: "c's", body: "as c wrote it"), now: 2)
    try sync(c, with: b)
    let onB = try b.store.memo(original.id)
    let cSequence = try XCTUnwrap(onB.dot).seq
    let sealing = try ScriptedSyncPeer.Notebook.shared(by: b.store, with: forger.device)
    let forged = forger.sign(
      sealing.seal(edit(onB, dot: Dot(origin: c.store.replicaID, seq: cSequence + 1), body: "forged by a")))
    let own = forger.sign(sealing.seal(fresh("a's own memo", dot: Dot(origin: forgerReplica, seq: 1))))
    let answer = try forgerAsks(
      b, notebook: sealing,
      frames: [
        batch([forged, own], bindings: [forger.binding(of: forgerReplica)], position: 1),
        ScriptedSyncPeer.done(position: 1, knowledge: [:], in: sealing),
      ])
    guard case .acknowledged(let ack) = answer else { return XCTFail("b answered \(answer)") }
    XCTAssertEqual(ack.outcome?.quarantined, 1)
    XCTAssertEqual(ack.outcome?.applied, 1)
    XCTAssertEqual(try b.store.quarantined().map(\.peer), [forger.device])
    XCTAssertEqual(try b.store.memo(original.id), onB)
    try c.store.update(original.id, MemoChange(body: "c's real edit"), now: 6)
    try sync(c, with: b)
    XCTAssertEqual(try b.store.memo(original.id).body, "c's real edit")
    XCTAssertEqual(try bodies(c.store), ["c's real edit", "a's own memo"])
  }

  /// a signs, under its own replica, an edit of c's memo whose clock claims edits of c's
  /// replica c never made: b cannot tell (only c knows its own sequence) and stores it,
  /// and so does b's own next edit of the memo, whose clock takes the claim in. c keeps
  /// each aside when b passes it on — naming b, the peer, and in the reason the device
  /// that signed the lie — and c's syncs with b go on carrying everything else. Before, c
  /// refused b's whole batch (`future-clock`), at every sync from then on: c could not
  /// sync with b again (exit 21), though b had done nothing wrong.
  func testAClockClaimingTheThirdDevicesFutureDoesNotStopItsSyncs() throws {
    let (b, c, _) = try family()
    let original = try c.store.create(MemoDraft(title: "c's", body: "as c wrote it"), now: 2)
    try sync(c, with: b)
    let onB = try b.store.memo(original.id)
    let cSequence = try XCTUnwrap(onB.dot).seq
    let sealing = try ScriptedSyncPeer.Notebook.shared(by: b.store, with: forger.device)
    let claiming = forger.sign(
      sealing.seal(
        edit(
          onB, dot: Dot(origin: forgerReplica, seq: 1), body: "a claims c's future",
          clock: [c.store.replicaID: cSequence + 5])))
    let answer = try forgerAsks(
      b, notebook: sealing,
      frames: [
        batch([claiming], bindings: [forger.binding(of: forgerReplica)], position: 1),
        ScriptedSyncPeer.done(position: 1, knowledge: [:], in: sealing),
      ])
    guard case .acknowledged(let ack) = answer else { return XCTFail("b answered \(answer)") }
    XCTAssertEqual(ack.outcome?.applied, 1, "b cannot tell: only c knows its own sequence")
    try b.store.create(MemoDraft(title: "b's", body: "b's memo"), now: 6)

    let first = try sync(c, with: b)
    XCTAssertEqual(first.received.quarantined, 1)
    XCTAssertEqual(first.received.applied, 1, "b's memo came in the same sync")
    XCTAssertEqual(
      try c.store.quarantined().map { "\($0.peer) \($0.reason)" },
      ["\(b.id) a revision signed by \(forger.device.short) claiming edits this device never made"])
    XCTAssertEqual(try c.store.memo(original.id).body, "as c wrote it")
    XCTAssertNoThrow(try sync(b, with: c))

    // b's person edits the memo: b signs a clock that carries a's claim in.
    try b.store.update(original.id, MemoChange(body: "edited on b"), now: 7)
    try b.store.create(MemoDraft(title: "b's", body: "b's second memo"), now: 8)
    let second = try sync(b, with: c)
    XCTAssertEqual(second.sent.quarantined, 1)
    XCTAssertEqual(second.sent.applied, 1)
    XCTAssertEqual(
      try c.store.quarantined().first { $0.reason.contains(b.id.short) }?.peer, b.id,
      "signed by b, passed on by b")
    XCTAssertNoThrow(try sync(c, with: b))
    XCTAssertEqual(try bodies(c.store), ["as c wrote it", "b's memo", "b's second memo"])
  }

  // MARK: - A signed record sent again

  /// A channel that keeps every frame it receives: what a member gets on the wire,
  /// signatures included, to send again later.
  final class RecordingChannel: FrameChannel {
    let inner: any FrameChannel
    private let frames = Mutex<[Frame]>([])

    init(_ inner: any FrameChannel) { self.inner = inner }

    var received: [Frame] { frames.withLock { $0 } }
    var peer: DeviceID? { inner.peer }
    func send(_ frame: Frame) throws(TransportError) { try inner.send(frame) }
    func receive(before deadline: Deadline?) throws(TransportError) -> Frame? {
      let frame = try inner.receive(before: deadline)
      if let frame { frames.withLock { $0.append(frame) } }
      return frame
    }
    func close() { inner.close() }
    func interrupt() { inner.interrupt() }
    func exportKeyingMaterial(label: String, length: Int) throws(TransportError) -> [UInt8] {
      try inner.exportKeyingMaterial(label: label, length: length)
    }
    var wireBytes: (sent: UInt64, received: UInt64) { inner.wireBytes }
  }

  /// What `source` sends a in a sync, as it came: every record and binding.
  func recordsSent(by source: Device, notebook: ScriptedSyncPeer.Notebook) throws -> SyncRecordBatch.Batch {
    let hello = ScriptedSyncPeer.hello(replica: forgerReplica, notebook: notebook)
    let answerer = source.node.answerer
    let batches = try InMemorySession.run(
      firstID: forger.device, secondID: source.id,
      first: { channel -> [Frame] in
        let recording = RecordingChannel(channel)
        _ = try ScriptedSyncPeer.ask(over: recording, hello: hello, notebook: notebook) { _ in
          [ScriptedSyncPeer.done(position: 0, knowledge: [:], in: notebook)]
        }
        return recording.received.filter { $0.kind == .syncBatch }
      },
      second: { channel in try answerer.answer(channel, batch: SyncSession.BatchLimits(revisions: 4)) }
    ).first.get()
    var all = SyncRecordBatch.Batch(position: 0, records: [])
    for frame in batches {
      let decoded = try SyncRecordBatch.decode(frame.payload)
      all.records += decoded.records
      all.bindings += decoded.bindings
    }
    return all
  }

  /// What a sync may change on a device, to prove a replay changed none of it.
  struct Observed: Equatable {
    var heads: [Memo]
    var history: [MemoRevision]
    var conflicts: Int
    var trash: [TrashEntry]
    var quarantined: Int
  }

  func observe(_ device: Device, _ memo: MemoID) throws -> Observed {
    Observed(
      heads: try device.store.allHeadRows(), history: try device.store.history(of: memo),
      conflicts: try device.store.conflicts().count, trash: try device.store.trash(now: 10),
      quarantined: try device.store.quarantined().map(\.count).reduce(0, +))
  }

  /// c's first revision of a memo, exactly as c signed and sent it, sent again by a after
  /// c edited the memo twice and then deleted it: on b (which has the later revisions) and
  /// on c itself it changes nothing — no head, no history entry, no conflict copy, no
  /// trash entry, nothing kept aside (the record is genuine, only old) — and a's sync
  /// ends normally. The same holds for the current head sent again.
  func testAReplayedSignedRevisionHasNoEffect() throws {
    let (b, c, _) = try family()
    let memo = try c.store.create(MemoDraft(title: "c's", body: "first"), now: 2)
    try c.store.create(MemoDraft(title: "c's", body: "another"), now: 2)
    let sealing = try ScriptedSyncPeer.Notebook.shared(by: c.store, with: forger.device)
    let sent = try recordsSent(by: c, notebook: sealing)
    let first = try XCTUnwrap(sent.records.first { $0.memo == memo.id })
    XCTAssertNotNil(first.signature, "c signed it")
    try sync(c, with: b)
    try c.store.update(memo.id, MemoChange(body: "second"), now: 3)
    try sync(c, with: b)
    let later = try recordsSent(by: c, notebook: sealing)
    let second = try XCTUnwrap(later.records.first { $0.memo == memo.id })
    XCTAssertNotEqual(second.dot, first.dot)

    func replay(_ records: [SyncRecord], to target: Device, file: StaticString = #filePath, line: UInt = #line) throws {
      let before = try observe(target, memo.id)
      let answer = try forgerAsks(
        target, notebook: sealing,
        frames: [
          batch(records, bindings: sent.bindings, position: 1),
          ScriptedSyncPeer.done(position: 1, knowledge: [:], in: sealing),
        ])
      guard case .acknowledged(let ack) = answer else { return XCTFail("answered \(answer)", file: file, line: line) }
      XCTAssertEqual(ack.outcome, SyncMessage.Outcome(), "nothing applied, held or kept aside", file: file, line: line)
      XCTAssertEqual(try observe(target, memo.id), before, "nothing changed", file: file, line: line)
    }
    // The memo edited since: its first revision (and its current one) again.
    XCTAssertEqual(try b.store.memo(memo.id).body, "second")
    try replay([first], to: b)
    try replay([first, second], to: b)
    try replay([first], to: c)
    XCTAssertEqual(try b.store.history(of: memo.id).map(\.memo.body), ["first", "second"])
    // Deleted since: neither brings it back, nor adds a conflict or a second trash entry.
    try c.store.delete(memo.id, now: 4)
    try sync(c, with: b)
    XCTAssertEqual(try b.store.allHeadRows().first { $0.id == memo.id }?.isDeleted, true, "a tombstone")
    XCTAssertEqual(try b.store.trash(now: 10).map(\.memo), [memo.id])
    try replay([first, second], to: b)
    try replay([second], to: c)
    XCTAssertEqual(try b.store.allHeadRows().first { $0.id == memo.id }?.isDeleted, true, "a tombstone")
    // The honest devices go on syncing.
    try c.store.create(MemoDraft(title: "c's", body: "after the replays"), now: 5)
    try sync(b, with: c)
    XCTAssertEqual(try bodies(b.store), ["another", "after the replays"])
  }

  /// a squats x's replica on b before x first reaches b: a legacy binding of x's (derived)
  /// replica to a's key, with a record under it. b keeps both aside naming a and stores no
  /// binding, so it passes nothing on; x's own first sync with b is then applied, and what a
  /// planted never counts. Before, b bound x's replica to a's key, took what a signed under
  /// it, and kept everything x wrote aside while x's `sync` reported success.
  func testASquattedReplicaLeavesItsOwnersNextSyncAppliedAndIsNeverPassedOn() throws {
    let (b, c, notebook) = try family()
    let x = try device()
    try b.store.share(notebook, with: x.id, as: .member, now: 1)
    try sync(x, with: b)
    _ = try x.store.acceptInvitation(notebook.rawValue, now: 1)
    try x.store.setDefaultNotebook(notebook)
    let xReplica = x.store.replicaID
    XCTAssertNil(try b.store.boundDevice(of: xReplica), "x has written nothing b has seen yet")

    let sealing = try ScriptedSyncPeer.Notebook.shared(by: b.store, with: forger.device)
    let planted = forger.sign(sealing.seal(fresh("planted under x's replica", dot: Dot(origin: xReplica, seq: 1))))
    let frames = [
      batch([planted], bindings: [forger.binding(of: xReplica)], position: 1),
      ScriptedSyncPeer.done(position: 1, knowledge: [xReplica.rawValue: 1], in: sealing),
    ]
    let report = try bAsksTheForger(b, notebook: sealing, frames: frames).report.get()
    XCTAssertEqual(report.received.applied, 0)
    XCTAssertEqual(report.received.quarantined, 1)
    XCTAssertNil(try b.store.boundDevice(of: xReplica), "the squat bound nothing")
    let kept = try b.store.quarantined()
    XCTAssertEqual(kept.map(\.peer), [forger.device])
    XCTAssertTrue(kept.contains { $0.reason.hasSuffix("(a squat)") }, "\(kept)")

    // x writes and syncs: b applies it, under x's own key, and passes it on to c.
    let real = try x.store.create(MemoDraft(title: "x's", body: "x's first memo"), now: 3)
    XCTAssertEqual(try x.store.memo(real.id).dot?.origin, xReplica)
    let first = try sync(x, with: b)
    XCTAssertEqual(first.sent.applied, 1, "b took x's memo")
    XCTAssertEqual(try b.store.boundDevice(of: xReplica), x.id)
    try sync(c, with: b)
    for store in [b.store, c.store] {
      XCTAssertTrue(try bodies(store).contains("x's first memo"))
      XCTAssertFalse(try bodies(store).contains("planted under x's replica"))
    }
    XCTAssertEqual(try c.store.quarantined().count, 0, "b passed on nothing of the squat")
  }
}
