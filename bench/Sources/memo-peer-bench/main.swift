import Foundation
import MemoCore
import MemoCrypto
import MemoStore

// memo-peer benchmarks (`make bench`). Every figure is reported next to a baseline measured
// in the same run on the same machine, because these machines are shared and noisy:
//  - binary: memo-peer's stripped size (Debian's syncthing beside it) and exec to first
//    output of `--version` and of `list` on an empty store; baseline: a C program;
//  - store: insert 100,000 memos of 1 KiB, then `memo-peer list` and `search` over them,
//    as real processes; baseline: the same rows read or written by plain SQLite, unsealed;
//  - history: 10,000 memos of 1 KiB with 10 revisions each; `history ID` and `show ID
//    --revision N` as processes (< 50 ms each); the store's size next to the same memos
//    without history.
//  - AEAD: seal/open throughput at 1 KiB and 16 KiB; baseline: `openssl speed -evp
//    aes-256-gcm` at the same sizes.
//  - Ed25519: sign and verify of a 300-byte message, µs per operation; baseline: `openssl
//    speed ed25519`.
//  - TLS: handshakes per second and 64 KiB frame throughput on loopback; baseline:
//    `openssl s_time` and `openssl s_client`→`s_server` with the same kind of keys.
//  - discovery: time to the first result of `memo-peer browse` vs `avahi-browse -r` on the
//    virtual lab (needs root);
//  - delivery: 1,000 queued memos of 1 KiB delivered to one peer on the lab (memos/s), next
//    to the TLS throughput figure in 1 KiB frames per second.
//  - outbox: 1,000 queued memos of 1 KiB delivered in batches over TLS on loopback
//    (memos/s); baselines: the per-entry path in the same run, and plain SQLite inserting
//    the same rows in one transaction.
//  - sync: `memo-peer sync` of 10,000 memos of 1 KiB from lab host a to b's `serve`, then of
//    one changed memo (median of 5): time, bytes on the wire, the receiver's peak RSS;
//    baselines: Syncthing with 10,000 files of 1 KiB on the same lab (bench/syncthing), and
//    plain SQLite inserting as many rows of 1 KiB in one transaction.
//  - sync-large: the same with 100,000 memos (both processes' peak RSS, one change among
//    them as a command); baseline: plain SQLite inserting as many rows in one transaction.
//  - relay: 10,000 memos of 1 KiB from lab host a through the blind relay b to c (two `sync`
//    commands): each hop and the relay's peak RSS; baseline: the same memos from a to a
//    member's `serve` directly, in the same run.
//  - live sync: 9 lab hosts all running `serve` under background-sync consent; a change
//    committed on a (by another process, as the CLI does) until it is readable on b, and on
//    all 8 peers (p50, p99 over 100 changes); baselines: `memo-peer sync` of one change (the
//    manual way, discovery and handshake included) and Syncthing's change-to-arrival with a
//    forced rescan, both in the same run; then the idle cost with 8 live links (a's daemon
//    CPU seconds and eth0 bytes per peer per minute over 10 minutes), next to a's
//    avahi-daemon's CPU over the same window.
// Targets: `list` of 100,000 memos under 0.5 s; seal/open at 16 KiB at least 80% of
// openssl's figure; TLS frame throughput at least 0.7 of openssl's; browse's first result at most 1.2 × avahi-browse's;
// initial sync of 10,000 memos ≤ 1.5× the floor (SQLite storing the rows plus their
// signature checks on every core, `SyncFloor`) and the receiver's database ≤ 60% of 44 MB;
// of 100,000 ≤ 1.5× its floor and ≤ 10.5× the 10,000, both processes' peak RSS under 50 MiB
// and one change among them ≤ 1.2× one among the 10,000 as a command; one change over an
// established connection under 10 ms and 4 KiB, and under 300 ms as a `sync` command (discovery
// and handshake included); the receiver's peak RSS under 50 MiB. Exit status 1 when a target is
// missed. Each relay hop under 1 s; batched delivery at least 10,000 memos/s and 20× the
// per-entry path; the relay's peak RSS under 50 MiB. Live sync: a → b p50 ≤ 50 ms and p99 ≤
// 200 ms; to all 8 peers p99 ≤ 300 ms; idle under 1 KiB per peer per minute and under 1% of
// a core.

let options = BenchOptions.parse(CommandLine.arguments.dropFirst())
var report = BenchReport()

print("memo-peer benchmarks (\(options.memoCount) memos; best of \(options.repeats) runs per figure)")
do {
  if options.wants("binary") { try BinaryBench(options: options).run(into: &report) }
  if options.wants("store") { try StoreBench(options: options).run(into: &report) }
  if options.wants("history") { try HistoryBench(options: options).run(into: &report) }
  if options.wants("aead") { try AEADBench(options: options).run(into: &report) }
  if options.wants("ed25519") { try SignatureBench(options: options).run(into: &report) }
  if options.wants("tls") { try TLSBench(options: options).run(into: &report) }
  if options.wants("discovery") { try BrowseBench(options: options).run(into: &report) }
  if options.wants("outbox") { try OutboxBench(options: options).run(into: &report) }
  if options.wants("delivery") { try DeliveryBench(options: options).run(into: &report) }
  if options.wants("sync") { try SyncBench(options: options).run(into: &report) }
  if options.wants("sync-large") { try SyncScaleBench(options: options).run(into: &report) }
  if options.wants("relay") { try RelayBench(options: options).run(into: &report) }
  if options.wants("live") { try LiveSyncBench(options: options).run(into: &report) }
  if options.wants("filtered") { try FilteredNetworkBench(options: options).run(into: &report) }
} catch {
  // A group that cannot run is a failed benchmark with its reason, not a trap: the figures
  // measured so far are still printed.
  print("memo-peer-bench: a benchmark could not run: \(error)")
  report.printSummary()
  exit(2)
}
report.printSummary()
try report.save(to: options.resultsPath)
exit(report.allTargetsMet ? 0 : 1)
