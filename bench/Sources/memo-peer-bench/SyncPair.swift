import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem

/// Two lab hosts set up as the sync figures need them (`sync` and `sync-large`): both
/// consent, a trusts b and shares `personal` with it, b trusts a, b's `serve` runs, one
/// warm-up `sync` with both stores empty has found b's `serve`, made a's discovery key
/// known and brought b the invitation, which b accepts. Memos are then made directly in
/// a's store (not timed) and sent by `memo-peer sync` on a.
struct SyncPair {
  let bench: BenchLab
  let options: BenchOptions
  let memoPeer: LabMemoPeer
  let serve: Process
  /// The `serve` process itself (its VmHWM is the receiver's peak RSS).
  let servePID: Int32
  let storeA: MemoStore
  let storeB: MemoStore
  /// The memos made in a's store by `initialSync`.
  private(set) var memos: [MemoID] = []

  /// Sets the pair up on `bench` (fresh homes); the caller stops `serve`.
  static func start(_ bench: BenchLab, options: BenchOptions) throws -> SyncPair {
    let memoPeer = LabMemoPeer(lab: bench.script, memoPeer: options.memoPeer, environment: bench.environment)
    for host in ["a", "b"] {
      try bench.emptyHome(host)
      _ = try memoPeer.run(host, ["consent", "grant"])
    }
    let idA = try memoPeer.run("a", ["id"]).output
    let idB = try memoPeer.run("b", ["id"]).output
    // a shares its notebook with b: b joins it at the warm-up sync below.
    _ = try memoPeer.run("a", ["trust", "add", idB, "--name", "bee", "--share", "personal"])
    _ = try memoPeer.run("b", ["trust", "add", idA, "--name", "ay"])
    let serve = try startLabServe(
      lab: bench.script, host: "b", memoPeer: options.memoPeer, environment: bench.environment)
    do {
      let sync = SyncBench(options: options)
      let servePID = try sync.memoPeerProcess(under: serve.processIdentifier)
      _ = try sync.sync(memoPeer)
      // The warm-up brought b an invitation (sync version 3): a person accepts it. The
      // initial sync is then b's first of the notebook with a, as a new device's is: the
      // daily quota of new memos from one peer does not count it (PROTOCOL.md, "Quotas").
      try memoPeer.acceptInvitations(on: "b")
      let open = { (host: String) in
        try MemoStore.open(paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": bench.home(host)]))
      }
      return SyncPair(
        bench: bench, options: options, memoPeer: memoPeer, serve: serve, servePID: servePID, storeA: try open("a"),
        storeB: try open("b"))
    } catch {
      stopLabProcess(serve)
      throw error
    }
  }

  /// `count` memos of 1 KiB made in a's store (in one transaction, not timed), then one
  /// `memo-peer sync` on a under GNU time; checks that b holds them all. Returns the run,
  /// b's `serve` peak RSS (VmHWM) after it, and the CPU seconds b's `serve` spent meanwhile
  /// (with the command's own, the figure a noisy machine changes least).
  mutating func initialSync(count: Int) throws -> (run: SyncBench.Run, receiverPeakKiB: Int, receiverCPU: Double) {
    let sync = SyncBench(options: options)
    let now = sync.wallClock()
    // Made in chunks, so the benchmark itself never holds 100,000 bodies at once.
    for start in stride(from: 0, to: count, by: 10_000) {
      let drafts = (start..<min(start + 10_000, count)).map {
        MemoDraft(title: "memo \($0)", body: SyncBench.randomBody(), tags: ["bench"])
      }
      memos += try storeA.createMany(drafts, now: now).map(\.id)
    }
    let serveCPU = try sync.cpuSeconds(servePID)
    let initial = try sync.sync(memoPeer, peakRSS: true)
    let receiverPeakKiB = try sync.peakRSSKiB(servePID)
    let receiverCPU = try sync.cpuSeconds(servePID) - serveCPU
    guard initial.sentRevisions == count, try storeB.count() == count else {
      throw BenchError(
        "the initial sync sent \(initial.sentRevisions); b holds \(try storeB.count()) of \(count) memos")
    }
    print(
      "  initial: \(count) memos in \(Self.milliseconds(initial.wallSeconds)) ms (connect "
        + "\(initial.connectMilliseconds) ms, session \(initial.sessionMilliseconds) ms), \(initial.sessionBytes) TLS "
        + "bytes, \(initial.linkBytes) bytes on a's eth0; peak RSS: a's sync \(initial.peakRSSKiB ?? 0) KiB, b's serve "
        + "\(receiverPeakKiB) KiB; CPU: a's sync \(String(format: "%.2f", initial.cpuSeconds ?? 0)) s, b's serve "
        + "\(String(format: "%.2f", receiverCPU)) s")
    return (initial, receiverPeakKiB, receiverCPU)
  }

  /// `count` times: one memo edited in a's store, then `memo-peer sync` on a; checks that
  /// exactly it was sent and b holds the new body. Returns the runs and the median command
  /// time in ms.
  func changes(_ count: Int) throws -> (runs: [SyncBench.Run], medianCommandMilliseconds: Double) {
    let sync = SyncBench(options: options)
    var runs: [SyncBench.Run] = []
    for index in 0..<count {
      let memo = memos[(index * memos.count / count + 7) % memos.count]
      let body = SyncBench.randomBody()
      try storeA.update(memo, MemoChange(body: body), now: sync.wallClock())
      let change = try sync.sync(memoPeer)
      guard change.sentRevisions == 1, try storeB.memo(memo).body == body else {
        throw BenchError("change \(index + 1): sent \(change.sentRevisions) revisions, or b lacks the new body")
      }
      print(
        "  change \(index + 1)/\(count): command \(Self.milliseconds(change.wallSeconds)) ms (connect "
          + "\(change.connectMilliseconds) ms, session \(change.sessionMilliseconds) ms), \(change.sessionBytes) TLS "
          + "bytes, \(change.linkBytes) bytes on a's eth0")
      runs.append(change)
    }
    return (runs, SyncBench.median(runs.map { $0.wallSeconds * 1000 }))
  }

  static func milliseconds(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }
}
