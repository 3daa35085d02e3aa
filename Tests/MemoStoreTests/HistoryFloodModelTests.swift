import MemoCore
import MemoTestSupport
import XCTest

@testable import MemoStore

/// Issue 38 over random runs: an owner, an honest member and a flooding member edit one
/// memo in turn (the flooder most), each syncing from the last editor first, with a small
/// per-memo limit. The test tracks which revisions each device saw superseded, and checks
/// what the fair rule promises: at most three times the limit, every one of the device's
/// own revisions up to the limit, and every author at least an equal share of the limit
/// (or all it had). Three fixed seeds of 40 turns; a failure names its seed.
final class HistoryFloodModelTests: XCTestCase {
  static let limit = 6
  var nodes: [TemporaryNode] = []
  var stores: [MemoStore] = []

  /// A new device sharing the first device's default notebook with all before it.
  func store() throws -> MemoStore {
    let node = try TemporaryNode()
    nodes.append(node)
    stores.append(try node.open())
    try shareNotebook(try stores[0].defaultNotebook().id, among: zip(stores, nodes).map { ($0, $1.device) })
    return stores[stores.count - 1]
  }

  func sync(_ source: MemoStore, into sink: MemoStore) throws {
    let (sourceNode, sinkNode) = (node(of: source), node(of: sink))
    let run = runSync(sink, as: sinkNode.device, with: sourceNode.answerer, batch: 4)
    try run.answerer.get()
    _ = try run.report()
  }

  func node(of store: MemoStore) -> TemporaryNode {
    nodes.first { $0.paths.databasePath == store.paths.databasePath }!
  }

  func testEveryAuthorKeepsItsShareWhateverOneMemberFloods() throws {
    for seed: UInt64 in [1, 38, 90_210] {
      try run(seed: seed)
      stores = []
      nodes = []
    }
  }

  func run(seed: UInt64) throws {
    var random = SeededRandom(state: seed)
    let devices = [try store(), try store(), try store()]
    let limits = HistoryLimits(revisions: Self.limit, days: 365, totalBytes: 1 << 30, trashDays: 30)
    for device in devices { device.setHistoryLimits(limits) }
    let authors = devices.map { node(of: $0).device }
    let memo = try devices[0].create(MemoDraft(title: "shared", body: "start"), now: 1)
    // What each device saw superseded, per author.
    var seen = Array(repeating: [DeviceID: Int](), count: devices.count)
    func step(_ index: Int, _ change: () throws -> Void) throws {
      let before = (try? devices[index].history(of: memo.id))?.last
      try change()
      if let before, try devices[index].history(of: memo.id).last?.memo.dot != before.memo.dot,
        let author = before.author
      {
        seen[index][author, default: 0] += 1
      }
    }
    for index in 1..<devices.count { try step(index) { try sync(devices[0], into: devices[index]) } }
    var last = 0
    for turn in 0..<40 {
      // The flooder (2) edits most; the owner (0) and the honest member (1) now and then.
      let editor = random.below(10) < 7 ? 2 : random.below(2)
      if editor != last { try step(editor) { try sync(devices[last], into: devices[editor]) } }
      try step(editor) {
        try devices[editor].update(memo.id, MemoChange(body: "r\(turn) by \(editor)"), now: Int64(10 + turn))
      }
      last = editor
      let watcher = random.below(devices.count)
      if watcher != editor { try step(watcher) { try sync(devices[editor], into: devices[watcher]) } }
    }
    for (index, device) in devices.enumerated() {
      let kept = Dictionary(
        grouping: try device.history(of: memo.id).filter { !$0.isCurrent }.compactMap(\.author), by: { $0 }
      ).mapValues(\.count)
      let context = "seed \(seed), r\(index): kept \(kept), saw \(seen[index])"
      XCTAssertLessThanOrEqual(kept.values.reduce(0, +), 3 * Self.limit, context)
      XCTAssertGreaterThanOrEqual(
        kept[authors[index], default: 0], min(Self.limit, seen[index][authors[index], default: 0]), context)
      let share = Self.limit / max(seen[index].count, 1)
      for (author, count) in seen[index] {
        XCTAssertGreaterThanOrEqual(kept[author, default: 0], min(count, share), context)
      }
    }
  }
}
