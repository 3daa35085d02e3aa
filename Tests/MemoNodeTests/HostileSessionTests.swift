import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoNode

/// A trusted device that misbehaves, against the real sessions in memory (issue 13): each
/// case is refused with `sync-refuse`, both sides say what was wrong, nothing of the bad
/// data is stored, and the daemon goes on serving.
final class HostileSessionTests: XCTestCase {
  let made = TestAuthor.shared.replica(0)

  func sync(_ a: TestNode, with b: TestNode, serve: @escaping @Sendable (any FrameChannel) -> Void) throws
    -> PeerSync.PeerResult
  {
    let dialer = a.dialer(to: b, serve: serve)
    let runner = a.syncer(dialer)
    let peer = try a.peer("bee")
    let result = try runAsync { await runner.sync(with: peer, timeout: 10, deleteGuard: MassDeleteGuard()) }
    dialer.settle()
    return result
  }

  /// Case 1: an answerer whose `sync-hello` claims 2^64-1 pending revisions (the asker's
  /// `Int(...)` trapped, killing `sync` and a `serve --sync-every` daemon): refused as out
  /// of range, the answerer is told, and the asker says which device sent what.
  func testAnAnswerersImpossiblePendingCountIsRefusedNotATrap() throws {
    let (a, b) = try trustingPair()
    let identity = b.identity
    let made = self.made
    let answers = Recorder<ScriptedSyncPeer.Answer>()
    let result = try sync(a, with: b) { channel in
      _ = try? PeerSession.greet(channel, identity: identity)
      let answer = try? ScriptedSyncPeer.answer(
        over: channel, hello: ScriptedSyncPeer.hello(replica: made, pending: UInt64.max))
      answers.append(answer ?? .closed)
    }
    XCTAssertEqual(result.error?.code, .protocolViolation)
    XCTAssertEqual(
      result.error?.message,
      "bee sent a number above the protocol's maximum; the sync stopped and nothing of that batch was stored")
    XCTAssertEqual(answers.all, [.refused(.outOfRange)], "the answerer was told why")
    XCTAssertEqual(result.error?.exitStatus, 21)
  }

  /// Case 2 at the session: knowledge of 10,000 made-up replicas in a `sync-hello` is
  /// refused before anything else happens.
  func testAHelloWithTensOfThousandsOfReplicasIsRefused() throws {
    let (a, b) = try trustingPair()
    let knowledge = Dictionary(uniqueKeysWithValues: (0..<10_000).map { (String(format: "%032x", $0), UInt64(1)) })
    let answer = try ask(b, from: a, hello: ScriptedSyncPeer.hello(replica: made.rawValue, knowledge: knowledge)) { _ in
      []
    }
    XCTAssertEqual(answer, .refused(.tooManyReplicas))
  }

  /// Runs a scripted asker from `a` against `b`'s daemon (its real responder), with a log.
  func ask(
    _ b: TestNode, from a: TestNode, hello: [UInt8], notebook: ScriptedSyncPeer.Notebook? = nil,
    log: CapturingLog? = nil, script: @escaping (ScriptedSyncPeer.Answerer) -> [Frame]
  ) throws -> ScriptedSyncPeer.Answer {
    let responder = b.responder(logger: log.map { Logger(subsystem: "test", minimumLevel: .info, sink: $0) })
    return try InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel in
        _ = try PeerSession.greet(channel, identity: a.identity)
        return try ScriptedSyncPeer.ask(over: channel, hello: hello, notebook: notebook, script: script)
      },
      second: { responder.serve($0) }
    ).first.get()
  }

  /// Case 3 against the daemon: a revision counter of Int64.max is refused with its
  /// reason, logged with the device, nothing stored; a revision of the daemon's own replica
  /// it never made, and a clock claiming the daemon's future, are kept aside (a lie about
  /// the daemon that a peer may only pass on never stops a sync); the daemon answers a ping
  /// after.
  func testTheDaemonRefusesImpossibleRevisionsStoresNothingAndGoesOnServing() throws {
    let (a, b) = try trustingPair()
    let memo = try b.open().create(MemoDraft(title: "t", body: "b's memo"), now: 1)
    let before = try b.open(.background).allHeadRows()
    let log = CapturingLog()
    let replica = try b.open().replicaID
    let made = self.made
    func revision(dot: Dot, clock: [ReplicaID: UInt64], number: Int64 = 1) -> SyncRevision {
      SyncRevision(
        memo: MemoID(), head: HeadSummary(dot: dot, clock: VersionVector(clock), revision: number, isDeleted: false),
        created: 1, updated: 1, isPrivate: false, title: "t", body: "forged", tags: [])
    }
    let cases: [(SyncRevision, SyncMessage.RefuseReason)] = [
      (revision(dot: Dot(origin: made, seq: 1), clock: [made: 1], number: .max), .outOfRange)
    ]
    // a is a member of b's notebook: its batches are sealed with the notebook's key, so b
    // opens them and refuses what is inside.
    let notebook = try ScriptedSyncPeer.Notebook.shared(by: try b.open(.background), with: a.id)
    for (bad, reason) in cases {
      let hello = ScriptedSyncPeer.hello(replica: made, notebook: notebook)
      let answer = try ask(b, from: a, hello: hello, notebook: notebook, log: log) { answerer in
        [ScriptedSyncPeer.batch([bad], position: 1, in: notebook)]
      }
      XCTAssertEqual(answer, .refused(reason))
      XCTAssertTrue(
        log.lines.contains { $0.contains("sync with \(a.id.compact.prefix(8)): refused its data: \(reason.rawValue)") },
        log.lines.joined(separator: "\n"))
    }
    // A revision claiming b's own replica cannot carry b's signature, and a clock claiming
    // b's future is its signer's lie: b keeps both aside and the sync goes on (the forger
    // cannot make b's own syncs fail).
    let forged = revision(dot: Dot(origin: replica, seq: 99), clock: [replica: 99])
    let future = revision(dot: Dot(origin: made, seq: 2), clock: [made: 2, replica: 1 << 40])
    let kept = try ask(
      b, from: a, hello: ScriptedSyncPeer.hello(replica: made, notebook: notebook), notebook: notebook, log: log
    ) { _ in [ScriptedSyncPeer.batch([forged, future], position: 1, in: notebook)] }
    XCTAssertEqual(kept, .acknowledged(SyncMessage.Ack(position: 1)))
    XCTAssertEqual(try b.open(.background).quarantined().map(\.count), [1, 1])
    XCTAssertEqual(try b.open(.background).allHeadRows(), before, "nothing stored")
    let pong = try InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel -> Frame? in
        _ = try PeerSession.greet(channel, identity: a.identity)
        try channel.send(Frame(.ping, payload: [7]))
        return try channel.receive()
      }, second: { b.responder().serve($0) }
    ).first.get()
    XCTAssertEqual(pong, Frame(.pong, payload: [7]))
    // The daemon's own edits go on as before.
    try b.open().update(memo.id, MemoChange(body: "edited"), now: 2)
  }

  /// Case 4 against the daemon: tombstones of every memo it has (a wiped or hostile peer)
  /// are held; the daemon reports them in its outcome and deletes nothing.
  func testTheDaemonHoldsAMassDeleteFromAScriptedPeer() throws {
    let (a, b) = try trustingPair()
    _ = try b.open().createMany((1...12).map { MemoDraft(title: "m\($0)", body: "text \($0)") }, now: 1)
    let made = self.made
    let notebook = try ScriptedSyncPeer.Notebook.shared(by: try b.open(.background), with: a.id)
    let hello = ScriptedSyncPeer.hello(replica: made, notebook: notebook)
    let answer = try ask(b, from: a, hello: hello, notebook: notebook) { answerer in
      let tombstones = answerer.revisions.enumerated().map { index, live -> SyncRevision in
        var clock = live.head.clock
        clock.add(Dot(origin: made, seq: UInt64(index + 1)))
        return SyncRevision(
          memo: live.memo,
          head: HeadSummary(
            dot: Dot(origin: made, seq: UInt64(index + 1)), clock: clock, revision: live.head.revision + 1,
            isDeleted: true),
          created: live.created, updated: live.updated + 1, isPrivate: false, title: "", body: "", tags: [])
      }
      return [
        ScriptedSyncPeer.batch(tombstones, position: 1, in: notebook),
        ScriptedSyncPeer.done(position: 1, knowledge: [made.rawValue: 12], in: notebook),
      ]
    }
    guard case .acknowledged(let ack) = answer else { return XCTFail("\(answer)") }
    XCTAssertEqual(ack.outcome?.heldDeletes, 12)
    XCTAssertEqual(try b.bodies().count, 12)
  }

  /// The asker shows the answerer's refusal of its data, naming the device and the kind.
  func testARefusalOfThisDevicesDataIsShownAsSuch() throws {
    let (a, b) = try trustingPair()
    _ = try a.open().create(MemoDraft(title: "t", body: "a's memo"), now: 1)
    let identity = b.identity
    let made = self.made
    let result = try sync(a, with: b) { channel in
      _ = try? PeerSession.greet(channel, identity: identity)
      _ = try? channel.receive()
      try? channel.send(Frame(.syncHello, payload: ScriptedSyncPeer.hello(replica: made)))
      try? channel.send(Frame(.syncOps, payload: SyncOps.encode([])))
      _ = try? channel.receive()  // the asker's ops
      try? channel.send(Frame(.syncBatch, payload: SyncRecordBatch.encode(.init(position: 0, records: []))))
      try? channel.send(ScriptedSyncPeer.done(position: 0, knowledge: [:]))
      _ = try? channel.receive()  // the asker's acknowledgement of the position-only batch
      _ = try? channel.receive()  // and of that direction
      _ = try? channel.receive()  // its first batch
      try? channel.send(Frame(.syncRefuse, payload: PeerMessage.encode(SyncMessage.Refuse(reason: .futureClock))))
    }
    XCTAssertEqual(result.error?.code, .protocolViolation)
    XCTAssertEqual(
      result.error?.message,
      "bee refused this device's sync data as a revision claiming to have seen edits the receiving device never made; "
        + "nothing of it was stored there")
  }

  /// `hello`'s protocol field is compared: a peer speaking another protocol is refused.
  func testAHelloOfAnotherProtocolIsRefused() throws {
    let (a, b) = try trustingPair()
    let result = InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel in try PeerSession.greet(channel, identity: a.identity) },
      second: { channel in
        var hello = PeerMessage.Hello(discoveryKey: b.identity.discoveryKeyBase64, rotationSeconds: 900)
        hello.protocolVersion = 2
        try channel.send(Frame(.hello, payload: PeerMessage.encode(hello)))
        _ = try channel.receive()
      })
    XCTAssertThrowsError(try result.first.get()) { error in
      XCTAssertEqual((error as? TransportError)?.kind, .protocolViolation)
      XCTAssertEqual((error as? TransportError)?.detail, "the peer speaks protocol 2, this node 1")
    }
  }
}

/// Log lines, for tests that check what the daemon logged.
final class CapturingLog: LogSink, Sendable {
  private let recorder = Recorder<String>()
  func write(level: LogLevel, subsystem: String, message: String) { recorder.append(message) }
  var lines: [String] { recorder.all }
}
