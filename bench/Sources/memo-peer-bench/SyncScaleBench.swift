import Foundation

/// Sync at household scale on the virtual lab (issue 27; needs root): N memos of 1 KiB
/// (default 100,000, `--sync-large-memos`) made in host a's store (not timed), then one
/// `memo-peer sync --peer b` on a to b's `serve`, then one changed memo among them synced
/// by the command (the median of 5). Figures: the initial sync's wall time against the
/// floor (`SyncFloor`: plain SQLite inserting as many rows of 1 KiB in one transaction on
/// the same file system, plus their signature checks on every core, in the same run), and
/// the `sync` group's 10,000 of the same run (growth); the peak RSS of both processes (a's command under GNU time,
/// b's `serve` VmHWM); the one-change command. No Syncthing baseline: at this size it takes
/// minutes (the `sync` group has it at 10,000).
/// Targets (issue 43): ≤ 1.5× the floor and ≤ 10.5× the 10,000 figure; both peak RSS
/// < 50 MiB; one change ≤ 1.2× one change among 10,000 of the same run.
struct SyncScaleBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    let count = options.syncLargeMemoCount
    print(
      "sync at scale (virtual lab, \(count) memos of 1 KiB from a to b's serve, then \(SyncBench.changes) changes):")
    guard let bench = try BenchLab.up(2, options: options) else { return }
    defer { bench.down() }
    var pair = try SyncPair.start(bench, options: options)
    defer { stopLabProcess(pair.serve) }
    let floor = try SyncFloor.measure(count: count, body: SyncBench.randomBody(), in: "\(bench.directory)/b")

    let initial = try pair.initialSync(count: count)
    let (_, changeCommand) = try pair.changes(SyncBench.changes)
    let mebibytes = { (kib: Int) in Double(kib) / 1024 }
    let senderKiB = initial.run.peakRSSKiB ?? 0

    report.add(
      "initial sync of \(count) memos, `memo-peer sync` command", value: initial.run.wallSeconds, unit: "s",
      baselineName: "the floor: plain SQLite storing the rows + their Ed25519 checks on every core",
      baseline: floor.total, target: "≤ 1.5× the floor", met: initial.run.wallSeconds <= 1.5 * floor.total)
    let figures = SyncFigures.shared
    if let small = figures.initialSeconds, let smallCount = figures.initialCount {
      report.add(
        "initial sync of \(count) memos against \(smallCount) (growth)", value: initial.run.wallSeconds, unit: "s",
        baselineName: "the `sync` group's initial sync of \(smallCount), same run", baseline: small,
        target: "≤ \(String(format: "%.1f", Self.growthAllowance(count, smallCount)))× it",
        met: initial.run.wallSeconds <= Self.growthAllowance(count, smallCount) * small)
    }
    report.add(
      "initial sync of \(count) memos, CPU seconds of both processes (a's command, b's serve)",
      value: (initial.run.cpuSeconds ?? 0) + initial.receiverCPU, unit: "s", baselineName: "none", baseline: 0)
    report.add(
      "initial sync of \(count) memos, session_ms (ready connection)", value: initial.run.sessionMilliseconds / 1000,
      unit: "s", baselineName: "plain SQLite inserting the same rows in one transaction", baseline: floor.store)
    report.add(
      "sender peak RSS (a's `memo-peer sync` of \(count), GNU time)", value: mebibytes(senderKiB), unit: "MiB",
      baselineName: "none", baseline: 0, target: "< 50 MiB", met: senderKiB < 50 * 1024)
    report.add(
      "receiver peak RSS (b's serve, VmHWM, \(count) memos)", value: mebibytes(initial.receiverPeakKiB), unit: "MiB",
      baselineName: "none", baseline: 0, target: "< 50 MiB", met: initial.receiverPeakKiB < 50 * 1024)
    if let small = figures.changeCommandMilliseconds, let smallCount = figures.initialCount {
      report.add(
        "one change among \(count), `memo-peer sync` command (median of \(SyncBench.changes))", value: changeCommand,
        unit: "ms", baselineName: "one change among \(smallCount), same run", baseline: small,
        target: "≤ 1.2× it", met: changeCommand <= 1.2 * small)
    } else {
      report.add(
        "one change among \(count), `memo-peer sync` command (median of \(SyncBench.changes))", value: changeCommand,
        unit: "ms", baselineName: "none (run the `sync` group too)", baseline: 0, target: "< 50 ms",
        met: changeCommand < 50)
    }
  }

  /// Straight-line growth (issue 43): ten times the memos may cost 10.5 times the time
  /// (1.05 per factor of the count).
  static func growthAllowance(_ count: Int, _ smallCount: Int) -> Double {
    1.05 * Double(count) / Double(smallCount)
  }
}
