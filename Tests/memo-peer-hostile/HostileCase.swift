import Foundation
import MemoCore
import MemoCrypto
import MemoProtocol
import MemoTestSupport

/// The cases of issue 13 that a trusted device sends to a running `serve`, each a scripted
/// sync (`ScriptedSyncPeer`) over a real TLS connection.
enum HostileCase {
  /// Random bytes of this run: its replica index, and the tail of the ids it makes up.
  static let runBytes = (try? SystemRandom.bytes(16)) ?? [UInt8](repeating: 0xEE, count: 16)

  /// A replica of this run's own, derived from the device's key as a version-3 device's
  /// are (the device pretends to be a fresh database; an id it merely claimed would be
  /// refused as a squat before reaching the checks under test).
  static func mine(_ author: TestAuthor?) -> String {
    let index = runBytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
    return author?.replica(index).rawValue ?? Hex.encode(runBytes)
  }

  /// `count` replica ids nobody uses (claimed in knowledge, never written under).
  static func madeUp(_ count: Int) -> [String] {
    let tail = Hex.encode(Array(runBytes.dropFirst(4)))
    return (0..<count).map { String(format: "%08x", $0) + tail }
  }

  /// `origin` and the clock's replicas are hex ids of this tool's own making (`mine`,
  /// `madeUp`) or the daemon's: valid replica ids.
  static func memo(origin: String, seq: UInt64, clock: [String: UInt64]? = nil, revision: Int64 = 1) -> SyncRevision {
    let entries = (clock ?? [origin: seq]).compactMap { text, seq in ReplicaID(text).map { ($0, seq) } }
    return SyncRevision(
      memo: MemoID(),
      head: HeadSummary(
        dot: Dot(origin: ReplicaID(origin)!, seq: seq), clock: VersionVector(Dictionary(uniqueKeysWithValues: entries)),
        revision: revision, isDeleted: false),
      created: 1_700_000_000_000, updated: 1_700_000_000_000, isPrivate: false, title: "junk",
      body: "junk \(origin.prefix(4)) \(seq)", tags: [])
  }

  /// `notebook`: the one the device shares with the daemon (its batches are sealed in it).
  static func run(_ name: String, over channel: any FrameChannel, notebook: ScriptedSyncPeer.Notebook?) throws
    -> [String: Any]
  {
    let mine = mine(notebook?.author)
    let plain = ScriptedSyncPeer.hello(replica: mine, notebook: notebook)
    if notebook == nil && ["revision-max", "own-origin", "future-clock", "mass-delete"].contains(name) {
      throw MemoPeerError(.notFound, "this device shares no notebook with the daemon: share one first")
    }
    func batch(_ revisions: [SyncRevision]) -> Frame {
      notebook.map { ScriptedSyncPeer.batch(revisions, position: 0, in: $0) } ?? Frame(.syncBatch, payload: [])
    }
    let answer: ScriptedSyncPeer.Answer
    switch name {
    case "ping":
      try channel.send(Frame(.ping, payload: [42]))
      let pong = try channel.receive()
      return ["case": name, "answer": pong == Frame(.pong, payload: [42]) ? "pong" : "closed"]
    case "pending":
      answer = try ScriptedSyncPeer.ask(over: channel, hello: ScriptedSyncPeer.hello(replica: mine, pending: .max)) {
        _ in []
      }
    case "knowledge-range":
      answer = try ScriptedSyncPeer.ask(
        over: channel, hello: ScriptedSyncPeer.hello(replica: mine, knowledge: [madeUp(1)[0]: .max])
      ) { _ in [] }
    case "knowledge-wide":
      let wide = Dictionary(uniqueKeysWithValues: madeUp(10_000).map { ($0, UInt64(1)) })
      answer = try ScriptedSyncPeer.ask(over: channel, hello: ScriptedSyncPeer.hello(replica: mine, knowledge: wide)) {
        _ in []
      }
    case "knowledge-poison":
      // Knowledge of 2^53 for every replica the daemon knows (but itself) and for 100 it
      // never saw: in range, so accepted, and adopted only as far as the daemon has seen.
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { answerer in
        var knowledge = Dictionary(uniqueKeysWithValues: madeUp(100).map { ($0, SyncLimits.maximumSequence) })
        for replica in answerer.hello.knowledgeInAll.keys where replica != answerer.hello.replica.rawValue {
          knowledge[replica] = SyncLimits.maximumSequence
        }
        return [ScriptedSyncPeer.done(position: 0, knowledge: knowledge, in: notebook)]
      }
    case "revision-max":
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { _ in
        [batch([memo(origin: mine, seq: 1), memo(origin: mine, seq: 2, revision: .max)])]
      }
    case "own-origin":
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { answerer in
        let daemon = answerer.hello.replica
        let next = (answerer.hello.knowledgeInAll[daemon.rawValue] ?? 0) + 1000
        // Completed with sync-done, so the daemon reports (and logs) what it kept aside.
        return [
          batch([memo(origin: mine, seq: 1), memo(origin: daemon.rawValue, seq: next)]),
          ScriptedSyncPeer.done(position: 0, knowledge: [mine: 1], in: notebook),
        ]
      }
    case "future-clock":
      // A clock inflated for every replica the daemon knows, itself included: a lie about
      // the daemon, which it keeps aside (completed with sync-done, so it reports that).
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { answerer in
        var clock = answerer.hello.knowledgeInAll.mapValues { $0 + 1000 }
        clock[mine] = 1
        return [
          batch([memo(origin: mine, seq: 1, clock: clock)]),
          ScriptedSyncPeer.done(position: 0, knowledge: [:], in: notebook),
        ]
      }
    case "mass-delete":
      // 100 junk memos and a tombstone of every memo the daemon sent, in one sync.
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { answerer in
        var revisions = (1...100).map { memo(origin: mine, seq: UInt64($0)) }
        for (index, live) in answerer.revisions.enumerated() where !live.head.isDeleted {
          let dot = Dot(origin: ReplicaID(mine)!, seq: UInt64(101 + index))
          var clock = live.head.clock
          clock.add(dot)
          revisions.append(
            SyncRevision(
              memo: live.memo,
              head: HeadSummary(dot: dot, clock: clock, revision: live.head.revision + 1, isDeleted: true),
              created: live.created, updated: live.updated + 1, isPrivate: live.isPrivate, title: "", body: "",
              tags: []))
        }
        return [
          batch(revisions),
          ScriptedSyncPeer.done(position: 0, knowledge: [mine: UInt64(revisions.count)], in: notebook),
        ]
      }
    default:
      throw MemoPeerError(.usage, "unknown case \(name)")
    }
    var result: [String: Any] = ["case": name]
    switch answer {
    case .refused(let reason): result["answer"] = "refused \(reason?.rawValue ?? "unknown")"
    case .acknowledged(let ack):
      result["answer"] = "acknowledged"
      result["held_deletes"] = ack.outcome?.heldDeletes ?? 0
      result["quarantined"] = ack.outcome?.quarantined ?? 0
      result["applied"] = ack.outcome?.applied ?? 0
    case .closed: result["answer"] = "closed"
    }
    return result
  }
}
