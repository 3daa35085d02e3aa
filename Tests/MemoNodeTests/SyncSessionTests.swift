import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// Syncs as `memo-peer sync` runs them (`PeerSync`) against the daemon's own responder,
/// over in-memory channels: both directions, resumption after a cut, every refusal, a
/// corrupted batch, the mass-delete guard on either side, progress and byte counts.
final class SyncSessionTests: XCTestCase {
  func sync(
    _ a: TestNode, with b: TestNode, faults: LinkFaults = LinkFaults(),
    deleteGuard: MassDeleteGuard? = MassDeleteGuard(),
    serve: (@Sendable (any FrameChannel) -> Void)? = nil, progress: SyncSession.ProgressHandler? = nil
  ) throws -> PeerSync.PeerResult {
    let dialer = a.dialer(to: b, faults: faults, serve: serve)
    let runner = a.syncer(dialer)
    let peer = try a.peer("bee")
    let result = try runAsync {
      await runner.sync(with: peer, timeout: 10, deleteGuard: deleteGuard, progress: progress)
    }
    dialer.settle()
    return result
  }

  func create(_ node: TestNode, _ bodies: [String]) throws {
    let store = try node.open()
    for body in bodies { _ = try store.create(MemoDraft(title: "t", body: body), now: 1) }
  }

  func deleteEverything(on node: TestNode) throws {
    let store = try node.open()
    for summary in try store.summaries() { try store.delete(summary.id, now: 3) }
  }

  func testOneSyncBringsBothSidesInStep() throws {
    let (a, b) = try trustingPair()
    try create(a, ["from a 1", "from a 2"])
    try create(b, ["from b 1", "from b 2", "from b 3"])
    let result = try sync(a, with: b)
    let report = try XCTUnwrap(result.report, "\(String(describing: result.error))")
    XCTAssertEqual(report.received.applied, 3)
    XCTAssertEqual(report.sentRevisions, 2)
    XCTAssertEqual(report.sent.applied, 2, "as b reported it")
    XCTAssertEqual(try a.bodies(), try b.bodies())
    XCTAssertEqual(try a.bodies().count, 5)
    XCTAssertEqual(result.summary, "bee: received 3, sent 2, conflicts 0")
    // Each side knows the other now: nothing moves the second time.
    let again = try XCTUnwrap(try sync(a, with: b).report)
    XCTAssertEqual(again.received.applied + again.sentRevisions, 0)
    XCTAssertNotNil(try a.open().syncPeerRecords().first { $0.device == b.id }?.lastSynced)
    XCTAssertNil(try lastRefusal(on: a, of: b), "an honest sync refuses nothing")
    XCTAssertNil(try lastRefusal(on: b, of: a), "an honest sync refuses nothing")
  }

  /// The last sync data `node` refused from `peer`, as `peers` shows it.
  func lastRefusal(on node: TestNode, of peer: TestNode) throws -> SyncRefusalRecord? {
    try node.open().syncPeerRecords().first { $0.device == peer.id }?.lastRefusal
  }

  func testConcurrentEditsBecomeOneConflictCopyOnBothSides() throws {
    let (a, b) = try trustingPair()
    try create(a, ["list"])
    _ = try sync(a, with: b)
    let memo = try XCTUnwrap(try a.open().summaries().first).id
    try a.open().update(memo, MemoChange(body: "list, milk"), now: 2)
    try b.open().update(memo, MemoChange(body: "list, eggs"), now: 2)
    let report = try XCTUnwrap(try sync(a, with: b).report)
    XCTAssertEqual(report.received.conflicts, 1)
    XCTAssertEqual(try a.open().conflicts().count, 1)
    XCTAssertEqual(try b.open().conflicts().count, 1, "b got a's edit in the same session")
    XCTAssertEqual(try a.open().allHeadRows(), try b.open().allHeadRows())
  }

  func testASyncCutMidwayResumesAfterTheLastStoredBatch() throws {
    let (a, b) = try trustingPair()
    try create(b, (1...20).map { "memo \($0)" })
    // b's daemon sends batches of three; the link breaks after the second.
    let cut = try sync(a, with: b, faults: cutAfter(batches: 2))
    XCTAssertNil(cut.report)
    XCTAssertEqual(cut.error?.code, .connection)
    XCTAssertTrue(cut.error?.message.contains("broke off") == true, cut.error?.message ?? "")
    XCTAssertEqual(cut.error?.remedy, .syncAgain)
    XCTAssertEqual(try a.bodies().count, 6, "two batches of three were stored")
    let resumed = try XCTUnwrap(try sync(a, with: b).report)
    XCTAssertEqual(resumed.received.applied, 14, "only what was missing")
    XCTAssertEqual(try a.bodies(), try b.bodies())
  }

  func testASyncCutWhileSendingResumesOnTheDaemonsSide() throws {
    let (a, b) = try trustingPair()
    try create(a, (1...10).map { "memo \($0)" })
    let cut = try sync(a, with: b, faults: cutAfter(batches: 1, fromAsker: true))
    XCTAssertNil(cut.report)
    XCTAssertEqual(try b.bodies().count, 3, "b stored the one batch that arrived")
    let resumed = try XCTUnwrap(try sync(a, with: b).report)
    XCTAssertEqual(resumed.sent.applied, 7)
    XCTAssertEqual(try a.bodies(), try b.bodies())
  }

  func testALockedPeerRefusesAndTheAskerSaysWhatToDo() throws {
    let (a, b) = try trustingPair()
    try create(b, ["secret"])
    try b.protectComplete()
    b.expireIdleTimeout()
    let result = try sync(a, with: b)
    XCTAssertEqual(result.error?.code, .locked)
    XCTAssertEqual(result.error?.message, "bee is locked: its memos cannot be synced until it is unlocked there")
    XCTAssertEqual(result.error?.remedy, .unlock(device: "bee"))
    XCTAssertEqual(try a.bodies(), [])
  }

  func testALockedAskerDoesNotSyncAtAll() throws {
    let (a, b) = try trustingPair()
    try a.protectComplete()
    let peer = try a.peer("bee")
    a.expireIdleTimeout()
    XCTAssertThrowsError(try a.peer("bee"), "whom it trusts is sealed while locked")
    let runner = a.syncer(a.dialer(to: b))
    let result = try runAsync { await runner.sync(with: peer, timeout: 10, deleteGuard: MassDeleteGuard()) }
    XCTAssertEqual(result.error?.code, .locked)
  }

  func testAnAnswererOfAnotherSyncVersionOrWithoutAStoreIsReportedAsSuch() throws {
    let (a, b) = try trustingPair()
    let identity = b.identity
    for (refusal, message) in [
      // A peer of version 2 refuses without saying its own version; one of version 4 says.
      (
        #"{"reason":"version"}"#,
        "bee runs a memo-peer that speaks an older sync version (1 or 2); this one speaks sync version 3 "
          + "(signed membership)"
      ),
      (
        #"{"reason":"version","version":4}"#,
        "bee runs a memo-peer that speaks sync version 4; this one speaks sync version 3 (signed membership)"
      ),
      (#"{"reason":"storage"}"#, "bee could not open its memo store for the sync"),
    ] {
      let result = try sync(
        a, with: b,
        serve: { channel in
          _ = try? PeerSession.greet(channel, identity: identity)
          _ = try? channel.receive()
          try? channel.send(Frame(.syncRefuse, payload: Array(refusal.utf8)))
        })
      XCTAssertEqual(result.error?.code, .connection)
      XCTAssertEqual(result.error?.message, message)
    }
  }

  /// What `SyncSession.answer` replies to `hello` from `a`, with `store` as its store.
  func answer(
    _ hello: SyncMessage.Hello, from a: TestNode, to b: TestNode, store: @escaping @Sendable () throws -> MemoStore
  ) throws -> SyncMessage.Refuse? {
    let reply = InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> Frame? in
        try channel.send(Frame(.syncHello, payload: PeerMessage.encode(hello)))
        return try channel.receive()
      },
      second: { channel in
        let frame = try channel.receiveRequired("sync-hello")
        try SyncSession.answer(
          frame, over: channel, peer: TestDevices.id(named: "ay"), store: store, keys: b.keys,
          stillTrusted: .unchecked, clock: testClock, logger: .disabled)
      }
    ).first
    XCTAssertEqual(try reply.get()?.kind, .syncRefuse)
    return try reply.get().flatMap { PeerMessage.decode(SyncMessage.Refuse.self, from: $0.payload) }
  }

  func testTheDaemonRefusesASyncOfAnotherVersionAndOneItCannotOpenItsStoreFor() throws {
    let (a, b) = try trustingPair()
    var hello = SyncMessage.Hello(
      replica: ReplicaID(String(repeating: "a", count: 32))!, knowledge: VersionVector([:]), cursor: nil, pending: nil)
    XCTAssertEqual(
      try answer(hello, from: a, to: b, store: { throw MemoPeerError(.storage, "disk gone") })?.reason, "storage")
    hello.version = 99
    XCTAssertEqual(try answer(hello, from: a, to: b, store: { try b.open() })?.reason, "version")
  }

  func testAMalformedSyncHelloIsRefusedAsMalformedAndEndsTheChannel() throws {
    let (a, b) = try trustingPair()
    let responder = b.responder()
    let result = InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> [Frame] in
        _ = try PeerSession.greet(channel, identity: a.identity)
        try channel.send(Frame(.syncHello, payload: Array("{\"version\": \"x\"}".utf8)))
        var frames: [Frame] = []
        while let frame = try channel.receive() { frames.append(frame) }
        return frames
      }, second: { responder.serve($0) }
    ).first
    let frames = try result.get()
    XCTAssertEqual(frames.map(\.kind), [.syncRefuse], "one refusal, then the end of the channel")
    XCTAssertEqual(frames.first.flatMap { SyncMessage.decodeRefuse($0.payload) }, .malformed)
    // The daemon keeps the refusal for `peers`, with the rule it broke.
    let refusal = try XCTUnwrap(try lastRefusal(on: b, of: a))
    XCTAssertEqual(refusal.reason, "malformed")
    XCTAssertEqual(refusal.what, "a sync message that does not decode")
    XCTAssertEqual(refusal.at, testClock())
    XCTAssertFalse(refusal.detail.isEmpty)
    XCTAssertNil(try lastRefusal(on: a, of: b), "the side refused keeps nothing against the other")
  }

  func testACorruptedBatchEndsTheSyncAndNothingOfItIsStored() throws {
    let (a, b) = try trustingPair()
    try create(b, (1...9).map { "memo \($0)" })
    // b's frames: hello, sync-hello, sync-ops, then batches; the second batch's codec
    // version byte (the first byte after the frame header) is changed on the way.
    let result = try sync(a, with: b, faults: LinkFaults(fromSecond: .flip(frame: 4, byte: Frame.headerSize)))
    XCTAssertEqual(result.error?.code, .protocolViolation)
    XCTAssertEqual(
      result.error?.message,
      "bee sent a sync message that does not decode; the sync stopped and nothing of that batch was stored")
    XCTAssertEqual(try a.bodies().count, 3, "the batch before it, and nothing of it")
    // The asker keeps the refusal for `peers`: what it received and why that is impossible.
    let refusal = try XCTUnwrap(try lastRefusal(on: a, of: b))
    XCTAssertEqual(refusal.reason, "malformed")
    XCTAssertTrue(refusal.detail.contains("version"), refusal.detail)
    XCTAssertEqual(try XCTUnwrap(try sync(a, with: b).report).received.applied, 6, "the next sync repairs it")
    XCTAssertEqual(try lastRefusal(on: a, of: b), refusal, "kept, with its time, after the repair")
  }

  func testTheAskersGuardHoldsAMassDeleteFromThePeer() throws {
    let (a, b) = try trustingPair()
    try create(b, (1...12).map { "memo \($0)" })
    _ = try sync(a, with: b)
    try deleteEverything(on: b)
    let held = try XCTUnwrap(try sync(a, with: b).report)
    XCTAssertEqual(held.received.heldDeletes, 12)
    XCTAssertEqual(try a.bodies().count, 12, "nothing deleted here")
    XCTAssertTrue(try sync(a, with: b).summary.contains("12 deletes held back here"))
    // Without the guard (--allow-deletes) they apply.
    let allowed = try XCTUnwrap(try sync(a, with: b, deleteGuard: nil).report)
    XCTAssertEqual(allowed.received.heldDeletes, 0)
    XCTAssertEqual(try a.bodies(), [])
  }

  func testTheDaemonsGuardHoldsAMassDeleteItCannotAskAbout() throws {
    let (a, b) = try trustingPair()
    try create(a, (1...12).map { "memo \($0)" })
    _ = try sync(a, with: b)
    try deleteEverything(on: a)
    let result = try sync(a, with: b)
    XCTAssertEqual(result.report?.sent.heldDeletes, 12)
    XCTAssertTrue(result.summary.contains("bee held back 12 of this device's deletes"), result.summary)
    XCTAssertEqual(try b.bodies().count, 12)
  }

  func testProgressAndByteCountsDescribeTheSession() throws {
    let (a, b) = try trustingPair()
    try create(b, (1...9).map { "memo \($0)" })
    try create(a, (1...4).map { "mine \($0)" })
    let steps = Recorder<SyncSession.Progress>()
    let result = try sync(a, with: b, progress: { steps.append($0) })
    XCTAssertEqual(steps.all.filter(\.receiving).map(\.done), [3, 6, 9])
    XCTAssertEqual(steps.all.filter(\.receiving).map(\.estimate), [9, 9, 9], "b's estimate from its sync-hello")
    XCTAssertEqual(steps.all.filter { !$0.receiving }.last?.done, 4)
    let bytes = try XCTUnwrap(result.sessionBytes)
    XCTAssertGreaterThan(bytes, 13 * 40, "every revision crossed")
    XCTAssertNotNil(result.connectSeconds)
    XCTAssertNotNil(result.sessionSeconds)
  }
}
