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

  /// The arguments each case takes after its name (issue 38's cases name what they attack);
  /// every other case takes none.
  static let argumentNames: [String: [String]] = [
    "purge-other": ["NOTEBOOK", "MEMO"], "squat": ["REPLICA"], "flood-edits": ["MEMO", "COUNT"],
    "flood-new": ["COUNT"],
  ]

  /// The cases that send records, sealed in the notebook the device shares with the daemon.
  static let sealing: Set<String> = [
    "revision-max", "own-origin", "future-clock", "mass-delete", "purge-other", "squat", "flood-edits", "flood-new",
  ]

  /// Edits `flood-edits` sends at most, and new memos `flood-new` sends at most.
  static let maximumEdits = 1000
  static let maximumNewMemos = 10_000
  /// New memos to a `flood-new` batch.
  static let newMemosPerBatch = 10

  /// A count argument within 1...`maximum`, or a usage error naming it.
  static func count(_ text: String, of name: String, maximum: Int) throws -> Int {
    guard let count = Int(text), (1...maximum).contains(count), String(count) == text else {
      throw MemoPeerError(.usage, "\(name): COUNT must be a whole number from 1 to \(maximum), not \(text)")
    }
    return count
  }

  /// A memo id argument (canonical, as `new` prints it), or a usage error naming it.
  static func memoID(_ text: String, of name: String) throws -> MemoID {
    guard let memo = MemoID(canonical: text) else { throw MemoPeerError(.usage, "\(name): \(text) is not a memo id") }
    return memo
  }

  /// Every case `run` knows.
  static let cases: Set<String> = sealing.union([
    "ping", "pending", "knowledge-range", "knowledge-wide", "knowledge-poison",
  ])

  /// A notebook id argument (as `notebook list --json` prints it), or a usage error.
  static func notebookID(_ text: String, of name: String) throws -> NotebookID {
    guard let notebook = NotebookID(text), notebook.rawValue == text else {
      throw MemoPeerError(.usage, "\(name): \(text) is not a notebook id")
    }
    return notebook
  }

  /// A replica id argument, or a usage error.
  static func replicaID(_ text: String, of name: String) throws -> ReplicaID {
    guard let replica = ReplicaID(text), replica.rawValue == text else {
      throw MemoPeerError(.usage, "\(name): \(text) is not a replica id")
    }
    return replica
  }

  /// Throws a usage error unless `name` is a case and `arguments` are exactly what it takes
  /// (`argumentNames`), each well formed: checked before connecting.
  static func validate(_ name: String, _ arguments: [String]) throws {
    guard cases.contains(name) else { throw MemoPeerError(.usage, "unknown case \(name)") }
    let expected = argumentNames[name] ?? []
    guard arguments.count == expected.count else {
      throw MemoPeerError(
        .usage,
        expected.isEmpty
          ? "\(name) takes no arguments" : "\(name) takes \(expected.joined(separator: " ")), not \(arguments)")
    }
    switch name {
    case "purge-other":
      _ = try notebookID(arguments[0], of: name)
      _ = try memoID(arguments[1], of: name)
    case "squat": _ = try replicaID(arguments[0], of: name)
    case "flood-edits":
      _ = try memoID(arguments[0], of: name)
      _ = try count(arguments[1], of: name, maximum: maximumEdits)
    case "flood-new": _ = try count(arguments[0], of: name, maximum: maximumNewMemos)
    default: break
    }
  }

  /// `notebook`: the one the device shares with the daemon (its batches are sealed in it);
  /// `arguments`: what the case takes after its name (`argumentNames`), exactly.
  static func run(
    _ name: String, arguments: [String] = [], over channel: any FrameChannel, notebook: ScriptedSyncPeer.Notebook?
  ) throws -> [String: Any] {
    try validate(name, arguments)
    let mine = mine(notebook?.author)
    let plain = ScriptedSyncPeer.hello(replica: mine, notebook: notebook)
    if notebook == nil && sealing.contains(name) {
      throw MemoPeerError(.notFound, "this device shares no notebook with the daemon: share one first")
    }
    func batch(_ revisions: [SyncRevision], position: UInt64 = 0) -> Frame {
      notebook.map { ScriptedSyncPeer.batch(revisions, position: position, in: $0) } ?? Frame(.syncBatch, payload: [])
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
    case "purge-other":
      // A purge signed by this device (a member of `notebook`), naming the notebook given
      // and a memo that may be in another one on the daemon.
      guard let notebook else { throw MemoPeerError(.notFound, "this device shares no notebook with the daemon") }
      let named = try notebookID(arguments[0], of: name)
      let purge = try sign(
        Purge(
          authorKey: notebook.author.key.publicKey, notebook: named, memo: try memoID(arguments[1], of: name),
          made: Timestamp(Date().timeIntervalSince1970 * 1000), signature: []),
        by: notebook.author)
      let hello = ScriptedSyncPeer.hello(replica: mine, notebook: notebook, purges: [purge])
      answer = try ScriptedSyncPeer.ask(over: channel, hello: hello, notebook: notebook) { _ in
        [ScriptedSyncPeer.done(position: 0, knowledge: [:], in: notebook)]
      }
    case "squat":
      // A legacy binding of another device's replica to this device's key, and a record
      // under it: what a member that saw the replica in records or hellos could send before
      // its owner first reaches the daemon.
      guard let notebook else { throw MemoPeerError(.notFound, "this device shares no notebook with the daemon") }
      let replica = try replicaID(arguments[0], of: name)
      let planted = notebook.seal(memo(origin: replica.rawValue, seq: 1))
      let frame = Frame(
        .syncBatch,
        payload: SyncRecordBatch.encode(
          .init(position: 1, bindings: [notebook.author.binding(of: replica)], records: [planted])))
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { _ in
        [frame, ScriptedSyncPeer.done(position: 1, knowledge: [replica.rawValue: 1], in: notebook)]
      }
    case "flood-edits":
      // COUNT signed edits of MEMO, each on the one before (the first on the daemon's
      // current revision), one batch each, as a member that edits in a loop and syncs.
      let memo = try memoID(arguments[0], of: name)
      let edits = try count(arguments[1], of: name, maximum: maximumEdits)
      var missing = false
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { answerer in
        guard let live = answerer.revisions.first(where: { $0.memo == memo && !$0.head.isDeleted }) else {
          missing = true
          return []
        }
        var frames: [Frame] = []
        var clock = live.head.clock
        for index in 1...edits {
          let dot = Dot(origin: ReplicaID(mine)!, seq: UInt64(index))
          clock.add(dot)
          let edit = SyncRevision(
            memo: memo,
            head: HeadSummary(dot: dot, clock: clock, revision: live.head.revision + Int64(index), isDeleted: false),
            created: live.created, updated: live.updated + Int64(index), isPrivate: live.isPrivate,
            title: "flood \(index)", body: "flood \(index)\n", tags: live.tags)
          frames.append(batch([edit], position: UInt64(index)))
        }
        return frames + [ScriptedSyncPeer.done(position: UInt64(edits), knowledge: [mine: UInt64(edits)], in: notebook)]
      }
      if missing { throw MemoPeerError(.notFound, "the daemon sent no live revision of \(memo)") }
    case "flood-new":
      // COUNT new memos, `newMemosPerBatch` to a batch, in one sync.
      let total = try count(arguments[0], of: name, maximum: maximumNewMemos)
      answer = try ScriptedSyncPeer.ask(over: channel, hello: plain, notebook: notebook) { _ in
        let memos = (1...total).map { memo(origin: mine, seq: UInt64($0)) }
        let frames = stride(from: 0, to: total, by: newMemosPerBatch).map { start in
          let end = min(start + newMemosPerBatch, total)
          return batch(Array(memos[start..<end]), position: UInt64(end))
        }
        return frames + [ScriptedSyncPeer.done(position: UInt64(total), knowledge: [mine: UInt64(total)], in: notebook)]
      }
    default:
      throw MemoPeerError(.usage, "unknown case \(name)")
    }
    var result: [String: Any] = ["case": name]
    if !arguments.isEmpty { result["arguments"] = arguments }
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

  /// `purge` signed by `author`.
  static func sign(_ purge: Purge, by author: TestAuthor) throws -> Purge {
    var signed = purge
    signed.signature = try author.key.signature(for: purge.signedMessage)
    return signed
  }
}
