import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoStore
import MemoSystem

/// Delivery on the virtual lab: 1,000 memos of 1 KiB queued on host a for host b (b runs
/// `serve`), delivered by one `memo-peer send --wait` (which takes everything queued for
/// the peer along). Figure: memos per second, next to the raw TLS frame throughput of the
/// transport benchmark expressed in 1 KiB frames per second (when it ran). Needs root.
struct DeliveryBench {
  let options: BenchOptions
  static let count = 1000

  func run(into report: inout BenchReport) throws {
    print("delivery (virtual lab, \(Self.count) memos of 1 KiB to one peer):")
    guard let bench = try BenchLab.up(2, options: options) else { return }
    defer { bench.down() }
    let (lab, environment, labDirectory) = (bench.script, bench.environment, bench.directory)
    let hosts = LabMemoPeer(lab: lab, memoPeer: options.memoPeer, environment: environment)
    func memoPeer(_ host: String, _ arguments: [String], stdin: String? = nil) throws -> String {
      try hosts.run(host, arguments, stdin: stdin).output
    }
    for host in ["a", "b"] {
      try bench.emptyHome(host)
      _ = try memoPeer(host, ["consent", "grant"])
    }
    let idA = try memoPeer("a", ["id"])
    let idB = try memoPeer("b", ["id"])
    _ = try memoPeer("a", ["trust", "add", idB, "--name", "bee"])
    _ = try memoPeer("b", ["trust", "add", idA, "--name", "ay"])
    _ = try memoPeer("b", ["trust", "policy", "ay", "accept"])
    let serve = try startLabServe(lab: lab, host: "b", memoPeer: options.memoPeer, environment: environment)
    defer { stopLabProcess(serve) }
    let body = String(repeating: "x", count: 1023) + "\n"
    // Warm-up: b is up and found, over one TLS session. A ping, not a memo: under the
    // `accept` policy b takes at most 1,000 memos from one sender a day (docs/PROTOCOL.md).
    _ = try memoPeer("a", ["ping", "bee", "--count", "1", "--timeout", "30"])
    // Queue all but one directly in a's store (the queueing is not measured).
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/a/home"])
    let store = try MemoStore.open(paths: paths)
    guard let recipient = DeviceID(idB) else { throw BenchError("bad device ID from b") }
    for index in 1..<Self.count {
      try store.queueForDelivery(
        DeliveryMessage.Content(title: "memo \(index)", body: body, tags: [], isPrivate: false, sent: 0),
        to: recipient, expires: nil, now: Timestamp(index))
    }
    let elapsed = try seconds {
      _ = try memoPeer("a", ["send", "-", "--to", "bee", "--wait", "600"], stdin: body)
    }
    let delivered = try store.outboxEntries().filter {
      if case .delivered = $0.state { true } else { false }
    }.count
    guard delivered == Self.count else { throw BenchError("only \(delivered) entries delivered") }
    let perSecond = Double(Self.count) / elapsed
    print("  \(Self.count) memos delivered in \(String(format: "%.2f", elapsed)) s")
    let tls = report.figures.first { $0.name == "64 KiB frames" }
    report.add(
      "delivery of \(Self.count) memos of 1 KiB", value: perSecond, unit: "memos/s",
      baselineName: tls == nil ? "raw TLS (run --only tls for the figure)" : "raw TLS frames of 1 KiB/s",
      baseline: tls.map { $0.value * 1_000_000 / 1024 } ?? 0)
  }
}
