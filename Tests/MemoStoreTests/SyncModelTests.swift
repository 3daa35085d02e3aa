import Foundation
import MemoCore
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Model-based test of replication, without a network: three real stores, random histories
/// of creates, edits, deletes, conflict resolutions and syncs (some cut off after a few
/// batches, in either direction) between random pairs; then every pair syncs. Every sync is
/// the production `SyncSession` on both sides, over an in-memory channel. Afterwards every
/// replica must hold the same rows (ids, revisions, clocks, content), and every edit anyone
/// made must still be visible in a memo or a conflict copy, unless a person replaced or
/// deleted it knowingly. Each replica's history of a memo must hold exactly the revisions it
/// saw (every head it stored, and nothing no replica made), and restores of earlier
/// revisions converge like edits. The cuts fall on a given `sync-batch`, so each run is the same
/// every time: a failure prints its seed; `MEMO_PEER_SYNC_MODEL_SEED` replays one run and
/// `MEMO_PEER_SYNC_MODEL_RUNS` changes the count. 2,000 runs (`make model`); 100 under
/// `MEMO_PEER_MODEL_RUNS=small` (`make check`), enough to reach a resolution (20 do not).
final class SyncModelTests: XCTestCase {
  func testRandomHistoriesConvergeAndLoseNoEdit() throws {
    let seeds = try ModelSeeds.seeds("MEMO_PEER_SYNC_MODEL", full: 2000, small: 50)
    let replicas = try (0..<3).map { _ in try ModelReplica() }
    // One notebook among the three, as devices that synced everything before notebooks.
    try shareNotebook(try replicas[0].store.defaultNotebook().id, among: replicas.map { ($0.store, $0.device) })
    var operations = 0
    var copiesAtEnd = 0
    var stats = ModelRun.Stats()
    for seed in seeds {
      for replica in replicas { try replica.reset() }
      var run = ModelRun(seed: seed, replicas: replicas)
      do {
        try run.play(steps: 24)
        try run.settleAndCheck()
      } catch {
        XCTFail("seed \(seed): \(error)\n\(run.log.joined(separator: "\n"))")
        return
      }
      operations += run.log.count
      stats.add(run.stats)
      copiesAtEnd += try replicas[0].store.allHeadRows().filter { $0.conflictOf != nil && !$0.isDeleted }.count
    }
    print(
      "sync model: \(seeds.count) runs, \(operations) operations (\(stats.description)), "
        + "\(copiesAtEnd) conflict copies at the end; all converged")
    // The histories must reach the cases the test is for, or it proves little.
    XCTAssertGreaterThan(copiesAtEnd, 0)
    XCTAssertGreaterThan(stats.resolved, 0)
    XCTAssertGreaterThan(stats.cutWhileReceiving, 0)
    XCTAssertGreaterThan(stats.cutWhileSending, 0)
    XCTAssertGreaterThan(stats.restored, 0)
  }
}

/// One replica of the model: a real store in memory-backed storage when available.
final class ModelReplica {
  let node: TemporaryNode
  let store: MemoStore

  init() throws {
    node = try TemporaryNode(in: FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : nil)
    store = try node.open()
  }

  var device: DeviceID { node.device }

  /// Forgets every memo and all sync state (the replica id and the notebooks' logs stay;
  /// replica bindings go, so the per-peer quotas start over in each run).
  func reset() throws {
    try store.db.execute(
      "DELETE FROM memos; DELETE FROM knowledge; DELETE FROM counters; DELETE FROM sync_peers; DELETE FROM sync_held; "
        + "DELETE FROM notebook_knowledge; DELETE FROM sync_cursors; DELETE FROM sync_peer_knowledge; DELETE FROM relayed; "
        + "DELETE FROM horizon; DELETE FROM sync_guard; DELETE FROM received_log; DELETE FROM memo_history; "
        + "DELETE FROM trash; DELETE FROM replica_bindings; DELETE FROM quarantine; DELETE FROM sync_added")
  }
}

struct ModelError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// SplitMix64: small, seedable, the same on every platform.
struct SeededRandom {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

struct ModelRun {
  /// What kinds of events the runs reached.
  struct Stats: CustomStringConvertible {
    var resolved = 0
    /// Syncs cut while the asker received (it keeps the batches before the cut), and while
    /// it sent (the answerer keeps them).
    var cutWhileReceiving = 0
    var cutWhileSending = 0
    var refusedWhileConflicted = 0
    var restored = 0
    var description: String {
      "\(resolved) resolutions, \(cutWhileReceiving) + \(cutWhileSending) syncs cut while receiving + sending, "
        + "\(refusedWhileConflicted) edits refused while in conflict, \(restored) restores"
    }

    mutating func add(_ other: Stats) {
      resolved += other.resolved
      cutWhileReceiving += other.cutWhileReceiving
      cutWhileSending += other.cutWhileSending
      refusedWhileConflicted += other.refusedWhileConflicted
      restored += other.restored
    }
  }
  var stats = Stats()
  var random: SeededRandom
  let replicas: [ModelReplica]
  var log: [String] = []
  /// Every body text written (each one unique), and those a person replaced or deleted
  /// while seeing them.
  var written: Set<String> = []
  var replaced: Set<String> = []
  var counter = 0
  /// Whether these replicas are the only writers (false in the hostile model: its fourth
  /// device's revisions may be taken and replaced within one sync, never seen between steps).
  var onlyTheseWrite = true
  /// Per replica, memo (the original's id) → the dots of every head it held after a step.
  var seen: [[MemoID: Set<Dot>]] = [[:], [:], [:]]

  init(seed: UInt64, replicas: [ModelReplica]) {
    random = SeededRandom(state: seed)
    self.replicas = replicas
  }

  mutating func token(_ replica: Int) -> String {
    counter += 1
    let text = "edit-\(replica)-\(counter)"
    written.insert(text)
    return text
  }

  mutating func play(steps: Int) throws {
    for _ in 0..<steps {
      let index = random.below(3)
      let store = replicas[index].store
      let live = try store.summaries().filter { _ in true }
      let memos = try live.map { try store.memo($0.id) }
      let originals = memos.filter { $0.conflictOf == nil }
      switch random.below(10) {
      case 0, 1:
        let text = token(index)
        let memo = try store.create(MemoDraft(title: "t", body: text), now: 1)
        log.append("r\(index) create \(memo.id.short) \(text)")
      case 2, 3, 4:
        guard !originals.isEmpty else { continue }
        let memo = originals[random.below(originals.count)]
        if random.below(4) == 0, memo.revision > 1 {
          // Restore an earlier revision this replica kept: a new revision, like an edit.
          let earlier = try store.history(of: memo.id).filter { !$0.isCurrent && !$0.memo.isDeleted }
          if let chosen = earlier.isEmpty ? nil : earlier[random.below(earlier.count)] {
            do {
              try store.restore(memo.id, revision: chosen.memo.revision, now: 2)
              replaced.insert(memo.body)
              stats.restored += 1
              log.append("r\(index) restore \(memo.id.short) rev \(chosen.memo.revision) -> \(chosen.memo.body)")
            } catch let error as MemoPeerError where error.code == .conflict {
              log.append("r\(index) restore \(memo.id.short) refused: has conflict copies")
            }
            try observe()
            continue
          }
        }
        let text = token(index)
        do {
          try store.update(memo.id, MemoChange(body: text), now: 2)
          replaced.insert(memo.body)
          log.append("r\(index) edit \(memo.id.short) \(memo.body) -> \(text)")
        } catch let error as MemoPeerError where error.code == .conflict {
          written.remove(text)
          stats.refusedWhileConflicted += 1
          log.append("r\(index) edit \(memo.id.short) refused: has conflict copies")
        }
      case 5:
        guard !originals.isEmpty else { continue }
        let memo = originals[random.below(originals.count)]
        do {
          try store.delete(memo.id, now: 3)
          replaced.insert(memo.body)
          log.append("r\(index) delete \(memo.id.short) \(memo.body)")
        } catch let error as MemoPeerError where error.code == .conflict {
          log.append("r\(index) delete \(memo.id.short) refused: has conflict copies")
        }
      case 6:
        guard let copy = memos.first(where: { $0.conflictOf != nil }), let original = copy.conflictOf else { continue }
        let keep = ["A", "B", "both"][random.below(3)]
        let winner = try store.memo(original)
        try store.resolveConflict(copy.id, keep: ConflictChoice(rawValue: keep) ?? .a, now: 4)
        if keep == "A" { replaced.insert(copy.body) }
        if keep == "B" { replaced.insert(winner.body) }
        stats.resolved += 1
        log.append("r\(index) resolve \(copy.id.short) keep \(keep)")
      default:
        let other = (index + 1 + random.below(2)) % 3
        let cut = random.below(3) == 0 ? 1 + random.below(3) : nil
        let whileSending = random.below(2) == 0
        try ModelRun.sync(
          replicas[index], with: replicas[other], cut: cut.map { cutAfter(batches: $0, fromAsker: whileSending) })
        if cut != nil {
          if whileSending { stats.cutWhileSending += 1 } else { stats.cutWhileReceiving += 1 }
        }
        let cutText = cut.map { " (cut after \($0) batches \(whileSending ? "sent" : "received"))" } ?? ""
        log.append("r\(index) syncs with r\(other)\(cutText)")
      }
      try observe()
    }
  }

  /// Notes the heads every replica holds now.
  mutating func observe() throws {
    for (index, replica) in replicas.enumerated() {
      for row in try replica.store.allHeadRows() {
        guard let dot = row.dot else { continue }
        seen[index][row.conflictOf ?? row.id, default: []].insert(dot)
      }
    }
  }

  /// Each replica's history of each memo (superseded revisions and the current one) holds
  /// every head it was seen holding, once, and only revisions some replica made.
  func checkHistory() throws {
    var made: [MemoID: Set<Dot>] = [:]
    for replica in seen { made.merge(replica) { $0.union($1) } }

    for (index, replica) in replicas.enumerated() {
      let rows = try replica.store.allHeadRows()
      for memo in Set(seen[index].keys) {
        let kept = try replica.store.history(of: memo).compactMap(\.memo.dot)
        // The conflict copies standing now are heads too, not history yet.
        let copies = rows.filter { $0.conflictOf == memo }.compactMap(\.dot)
        let dots = Set(kept).union(copies)
        if dots.count != kept.count + copies.count {
          throw ModelError("r\(index) keeps a revision of \(memo.short) twice")
        }
        let missing = seen[index][memo, default: []].subtracting(dots)
        if !missing.isEmpty {
          throw ModelError("r\(index)'s history of \(memo.short) lacks \(missing.map(\.description).sorted())")
        }
        let foreign = dots.subtracting(made[memo, default: []])
        if onlyTheseWrite && !foreign.isEmpty {
          throw ModelError("r\(index)'s history of \(memo.short) has \(foreign.map(\.description).sorted())")
        }
      }
    }
  }

  /// `asker` syncs with `answerer` (both ways), in batches of three heads; `cut` breaks the
  /// link on a given batch (as a kill would). A sync that is not cut must succeed on both
  /// sides; a cut one may (when it had fewer batches than the cut).
  static func sync(_ asker: ModelReplica, with answerer: ModelReplica, cut: LinkFaults? = nil) throws {
    let run = runSync(
      asker.store, as: asker.device, with: answerer.node.answerer, batch: 3, faults: cut ?? LinkFaults())
    guard cut == nil else { return }
    _ = try run.report()
    try run.answerer.get()
  }

  /// Every replica ends with everything: each session runs both ways, so 0 ⇄ 1, 0 ⇄ 2,
  /// then 1 ⇄ 0 again (which brings 1 what 2 had).
  mutating func syncAllPairs() throws {
    for (asker, answerer) in [(0, 1), (0, 2), (1, 0)] {
      try Self.sync(replicas[asker], with: replicas[answerer])
    }
  }

  /// Every pair syncs, then the replicas must be equal and no edit lost.
  mutating func settleAndCheck() throws {
    try syncAllPairs()
    try observe()
    try checkConverged()
    try checkNoEditLost()
    try checkHistory()
  }

  func checkConverged() throws {
    let states = try replicas.map { replica in
      try replica.store.allHeadRows().map {
        "\($0.id) rev \($0.revision) dot \($0.dot.map(String.init(describing:)) ?? "-") clock \($0.clock.sorted.map { "\($0.origin.rawValue.prefix(6)):\($0.seq)" }) "
          + "del \($0.isDeleted) copy-of \($0.conflictOf?.short ?? "-") \($0.title)|\($0.body)|\($0.tags)|\($0.isPrivate)"
      }
    }
    for index in 1..<3 where states[index] != states[0] {
      throw ModelError(
        "replicas 0 and \(index) differ:\n  r0: \(states[0].joined(separator: "\n      "))\n  r\(index): \(states[index].joined(separator: "\n      "))"
      )
    }
  }

  func checkNoEditLost() throws {
    let visible = Set(try replicas[0].store.allHeadRows().filter { !$0.isDeleted }.map(\.body))
    let lost = written.subtracting(replaced).subtracting(visible)
    if !lost.isEmpty { throw ModelError("edits lost: \(lost.sorted())") }
  }
}
