import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem

/// The blind relay on the virtual lab (issue 15; needs root): N memos of 1 KiB (default
/// 10,000) written on laptop `a` in notebook `personal`, which home server `b` relays
/// (sealed records only, no key) and laptop `c` is a member of; `a` and `c` are never
/// synced with each other once the key is delivered.
///  - hop 1: `memo-peer sync --peer relay` on a (a's records to the relay's `serve`);
///  - hop 2: `memo-peer sync --peer relay` on c (the relay forwards them; c opens them);
///  - the relay's `serve` peak RSS (VmHWM) over both hops.
/// Baseline, in the same run: the same memos synced directly from a to member `d`'s
/// `serve` (one hop between two members: sealing, opening and storing, no relay), and d's
/// `serve` peak RSS. Targets: each hop under 1 s (the whole command); the relay's peak RSS
/// under 50 MiB.
struct RelayBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    let count = options.syncMemoCount
    print("relay (virtual lab, \(count) memos of 1 KiB from a through relay b to c; baseline a → d directly):")
    guard let bench = try BenchLab.up(4, options: options) else { return }
    defer { bench.down() }
    let (lab, environment, labDirectory) = (bench.script, bench.environment, bench.directory)
    let memoPeer = LabMemoPeer(lab: lab, memoPeer: options.memoPeer, environment: environment)
    let hosts = ["a", "b", "c", "d"]
    var ids: [String: String] = [:]
    for host in hosts {
      try bench.emptyHome(host)
      _ = try memoPeer.run(host, ["consent", "grant"])
      ids[host] = try memoPeer.run(host, ["id"]).output
    }
    let names = ["a": "laptop-a", "b": "relay", "c": "laptop-c", "d": "desk"]
    func trust(_ host: String, _ other: String, _ share: [String] = []) throws {
      _ = try memoPeer.run(host, ["trust", "add", ids[other] ?? "", "--name", names[other] ?? other] + share)
    }
    // a shares personal with the relay as a relay, with c and d as members.
    try trust("a", "b", ["--share", "personal", "--as", "relay"])
    try trust("a", "c", ["--share", "personal"])
    try trust("a", "d", ["--share", "personal"])
    for (host, others) in [("b", ["a", "c"]), ("c", ["a", "b"]), ("d", ["a"])] {
      for other in others { try trust(host, other) }
    }
    let sync = SyncBench(options: options)
    // The one time a and c meet (both empty): c is invited and accepts, then shares the
    // notebook with the relay as a relay too.
    let laptopC = try startLabServe(lab: lab, host: "c", memoPeer: options.memoPeer, environment: environment)
    _ = try sync.sync(memoPeer, on: "a", peer: "laptop-c")
    stopLabProcess(laptopC)
    try memoPeer.acceptInvitations(on: "c")
    _ = try memoPeer.run("c", ["notebook", "share", "personal (2)", "--with", "relay", "--as", "relay"])
    let relay = try startLabServe(lab: lab, host: "b", memoPeer: options.memoPeer, environment: environment)
    defer { stopLabProcess(relay) }
    let desk = try startLabServe(lab: lab, host: "d", memoPeer: options.memoPeer, environment: environment)
    defer { stopLabProcess(desk) }
    let relayPID = try sync.memoPeerProcess(under: relay.processIdentifier)
    let deskPID = try sync.memoPeerProcess(under: desk.processIdentifier)
    // Warm-ups with nothing to send: every serve is found, the relay and the desk are
    // invited and accept (as their people would), every membership is known.
    _ = try sync.sync(memoPeer, on: "a", peer: "relay")
    try memoPeer.acceptInvitations(on: "b")
    _ = try sync.sync(memoPeer, on: "a", peer: "desk")
    try memoPeer.acceptInvitations(on: "d")
    for (host, peer) in [("a", "relay"), ("c", "relay"), ("a", "desk")] {
      _ = try sync.sync(memoPeer, on: host, peer: peer)
    }

    let storeA = try MemoStore.open(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/a/home"]))
    _ = try storeA.createMany(
      (0..<count).map { MemoDraft(title: "memo \($0)", body: SyncBench.randomBody(), tags: ["bench"]) },
      now: sync.wallClock())
    let baseline = try sync.sync(memoPeer, on: "a", peer: "desk")
    let deskPeakKiB = try sync.peakRSSKiB(deskPID)
    let hop1 = try sync.sync(memoPeer, on: "a", peer: "relay")
    let hop2 = try sync.sync(memoPeer, on: "c", peer: "relay")
    let relayPeakKiB = try sync.peakRSSKiB(relayPID)
    let storeC = try MemoStore.open(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/c/home"]), use: .background)
    let storeB = try MemoStore.open(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/b/home"]), use: .background)
    guard baseline.sentRevisions == count, hop1.sentRevisions == count, try storeC.count() == count,
      try storeB.relayedRevisionCount() == count, try storeB.count() == 0
    else {
      throw BenchError(
        "sent \(baseline.sentRevisions) to d and \(hop1.sentRevisions) to the relay; the relay holds "
          + "\(try storeB.relayedRevisionCount()) sealed, c \(try storeC.count()) of \(count) memos")
    }
    let ms = { (run: SyncBench.Run) in
      String(format: "%.0f ms (session %.0f ms)", run.wallSeconds * 1000, run.sessionMilliseconds)
    }
    print("  baseline a → d directly: \(ms(baseline)); d's serve peak RSS \(deskPeakKiB) KiB")
    print("  hop 1 a → relay: \(ms(hop1)); hop 2 relay → c: \(ms(hop2)); relay's serve peak RSS \(relayPeakKiB) KiB")
    let mebibytes = { (kib: Int) in Double(kib) / 1024 }
    report.add(
      "relay hop 1: \(count) memos a → relay, `memo-peer sync` command", value: hop1.wallSeconds, unit: "s",
      baselineName: "a → member d directly", baseline: baseline.wallSeconds, target: "< 1 s", met: hop1.wallSeconds < 1)
    report.add(
      "relay hop 2: \(count) memos relay → c, `memo-peer sync` command", value: hop2.wallSeconds, unit: "s",
      baselineName: "a → member d directly", baseline: baseline.wallSeconds, target: "< 1 s", met: hop2.wallSeconds < 1)
    report.add(
      "relay's serve peak RSS over both hops (VmHWM)", value: mebibytes(relayPeakKiB), unit: "MiB",
      baselineName: "member d's serve receiving directly", baseline: mebibytes(deskPeakKiB), target: "< 50 MiB",
      met: relayPeakKiB < 50 * 1024)
  }
}
