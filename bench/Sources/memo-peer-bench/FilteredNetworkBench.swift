import Foundation
import MemoCore
import MemoStore
import MemoSystem

/// A home network that filters multicast DNS (issue 41; needs root): two lab hosts, a and b,
/// both running `serve` under the background-sync consent, met once with DNS-SD. Then the
/// lab's bridge drops mDNS (`scripts/lab multicast off`), both avahi-daemons and daemons
/// restart, and the same figures are taken again, reached through the remembered addresses:
///  - `memo-peer ping PEER --count 1` as a process on a (median of 10);
///  - live a → b, change to readable on b, p50 and p99 over 20 changes;
///  - idle: a's eth0 bytes per minute with one live link and nothing changing (60 s).
/// Each filtered figure's baseline is the same figure with DNS-SD, in the same run.
struct FilteredNetworkBench {
  let options: BenchOptions
  static let pings = 10
  static let changes = 20
  static let idleSeconds = 60.0

  struct Figures {
    var pingMilliseconds: Double
    var live: [Double]
    var idleBytesPerMinute: Double
  }

  func run(into report: inout BenchReport) throws {
    print("mDNS filtered (virtual lab, a and b running serve; ping, live a → b, idle):")
    guard let bench = try BenchLab.up(2, options: options) else { return }
    defer {
      _ = try? BrowseBench.run(bench.script, ["multicast", "on"], environment: bench.environment)
      bench.down()
    }
    let memoPeer = LabMemoPeer(lab: bench.script, memoPeer: options.memoPeer, environment: bench.environment)
    var ids: [String: String] = [:]
    for host in ["a", "b"] {
      try bench.emptyHome(host)
      _ = try memoPeer.run(host, ["consent", "grant"])
      _ = try memoPeer.run(host, ["consent", "grant", "--scope", "background-sync"])
      ids[host] = try memoPeer.run(host, ["id"]).output
    }
    _ = try memoPeer.run("a", ["trust", "add", ids["b"] ?? "", "--name", "peer-b", "--share", "personal"])
    _ = try memoPeer.run("b", ["trust", "add", ids["a"] ?? "", "--name", "ay"])

    var serves: [String: Process] = [:]
    defer { for serve in serves.values { stopLabProcess(serve) } }
    func startBoth() throws {
      for host in ["b", "a"] {
        serves[host] = try startLabServe(
          lab: bench.script, host: host, memoPeer: options.memoPeer, environment: bench.environment,
          log: options.keepLab)
      }
    }
    try startBoth()
    let live = LiveSyncBench(options: options)
    try live.waitForLinks(memoPeer, count: 1)
    try memoPeer.acceptInvitations(on: "b")
    let withDNSSD = try measure(memoPeer, bench, live)

    _ = try BrowseBench.run(bench.script, ["multicast", "off"], environment: bench.environment)
    for serve in serves.values { stopLabProcess(serve) }
    for host in ["a", "b"] {
      _ = try BrowseBench.run(bench.script, ["restart-avahi", host], environment: bench.environment)
    }
    try startBoth()
    try live.waitForLinks(memoPeer, count: 1)
    let filtered = try measure(memoPeer, bench, live)

    let p50 = { (values: [Double]) in LiveSyncBench.percentile(values, 0.5) }
    let p99 = { (values: [Double]) in LiveSyncBench.percentile(values, 0.99) }
    report.add(
      "mDNS filtered: `memo-peer ping` to b as a process (remembered address; median of \(Self.pings))",
      value: filtered.pingMilliseconds, unit: "ms", baselineName: "the same with DNS-SD",
      baseline: withDNSSD.pingMilliseconds)
    report.add(
      "mDNS filtered: live a → b, change to readable, p50", value: p50(filtered.live), unit: "ms",
      baselineName: "the same with DNS-SD", baseline: p50(withDNSSD.live))
    report.add(
      "mDNS filtered: live a → b, change to readable, p99", value: p99(filtered.live), unit: "ms",
      baselineName: "the same with DNS-SD", baseline: p99(withDNSSD.live))
    report.add(
      "mDNS filtered: idle, a's eth0 bytes per minute with one live link", value: filtered.idleBytesPerMinute,
      unit: "B/min", baselineName: "the same with DNS-SD (mDNS included)", baseline: withDNSSD.idleBytesPerMinute)
  }

  /// The three figures on the lab as it is now, a's daemon linked with b's.
  private func measure(_ memoPeer: LabMemoPeer, _ bench: BenchLab, _ live: LiveSyncBench) throws -> Figures {
    var pings: [Double] = []
    for _ in 0..<Self.pings { pings.append(try memoPeer.run("a", ["ping", "peer-b", "--count", "1"]).seconds * 1000) }
    let storeA = try MemoStore.open(paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": bench.home("a")]))
    let pathsB = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": bench.home("b")])
    let stores = [(folder: pathsB.dataDirectory, store: try MemoStore.open(paths: pathsB, use: .background))]
    let clock = SyncBench(options: options)
    _ = try live.arrival(
      of: try storeA.create(MemoDraft(title: "warm-up", body: "x", tags: []), now: clock.wallClock()), in: stores)
    var times: [Double] = []
    for index in 0..<Self.changes {
      let memo = try storeA.create(
        MemoDraft(title: "filtered \(index)", body: SyncBench.randomBody(), tags: []), now: clock.wallClock())
      times.append((try live.arrival(of: memo, in: stores).first ?? 0) * 1000)
    }
    let before = try memoPeer.linkBytes("a")
    Thread.sleep(forTimeInterval: Self.idleSeconds)
    let idle = Double(try memoPeer.linkBytes("a") - before) / (Self.idleSeconds / 60)
    return Figures(pingMilliseconds: LiveSyncBench.percentile(pings, 0.5), live: times, idleBytesPerMinute: idle)
  }
}
