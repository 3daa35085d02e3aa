import Foundation

/// Sync at household scale on the virtual lab (issue 27; needs root): N memos of 1 KiB
/// (default 100,000, `--sync-large-memos`) made in host a's store (not timed), then one
/// `memo-peer sync --peer b` on a to b's `serve`, then one changed memo among them synced
/// by the command (the median of 5). Figures: the initial sync's wall time against the
/// floor, plain SQLite inserting as many rows of 1 KiB in one transaction on the same file
/// system in the same run; the peak RSS of both processes (a's command under GNU time,
/// b's `serve` VmHWM); the one-change command. No Syncthing baseline: at this size it takes
/// minutes (the `sync` group has it at 10,000).
/// Targets: ≤ 4 s and ≤ 2.5× the floor; both peak RSS < 50 MiB; one change < 50 ms.
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
    let floorPath = "\(bench.directory)/b/floor.sqlite"
    let floor = try PlainSQLite.insert(count: count, body: SyncBench.randomBody(), in: floorPath)
    unlink(floorPath)
    print("  plain SQLite, \(count) rows of 1 KiB in one transaction: \(SyncPair.milliseconds(floor)) ms")

    let initial = try pair.initialSync(count: count)
    let (_, changeCommand) = try pair.changes(SyncBench.changes)
    let mebibytes = { (kib: Int) in Double(kib) / 1024 }
    let senderKiB = initial.run.peakRSSKiB ?? 0

    report.add(
      "initial sync of \(count) memos, `memo-peer sync` command", value: initial.run.wallSeconds, unit: "s",
      baselineName: "plain SQLite inserting the same rows in one transaction", baseline: floor,
      target: "≤ 4 s and ≤ 2.5× the floor",
      met: initial.run.wallSeconds <= 4 && initial.run.wallSeconds <= 2.5 * floor)
    report.add(
      "initial sync of \(count) memos, CPU seconds of both processes (a's command, b's serve)",
      value: (initial.run.cpuSeconds ?? 0) + initial.receiverCPU, unit: "s", baselineName: "none", baseline: 0)
    report.add(
      "initial sync of \(count) memos, session_ms (ready connection)", value: initial.run.sessionMilliseconds / 1000,
      unit: "s", baselineName: "plain SQLite inserting the same rows in one transaction", baseline: floor)
    report.add(
      "sender peak RSS (a's `memo-peer sync` of \(count), GNU time)", value: mebibytes(senderKiB), unit: "MiB",
      baselineName: "none", baseline: 0, target: "< 50 MiB", met: senderKiB < 50 * 1024)
    report.add(
      "receiver peak RSS (b's serve, VmHWM, \(count) memos)", value: mebibytes(initial.receiverPeakKiB), unit: "MiB",
      baselineName: "none", baseline: 0, target: "< 50 MiB", met: initial.receiverPeakKiB < 50 * 1024)
    report.add(
      "one change among \(count), `memo-peer sync` command (median of \(SyncBench.changes))", value: changeCommand,
      unit: "ms", baselineName: "none", baseline: 0, target: "< 50 ms", met: changeCommand < 50)
  }
}
