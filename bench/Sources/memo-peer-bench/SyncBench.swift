import Foundation
import MemoCore
import MemoStore
import MemoSystem

/// Sync on the virtual lab, against Syncthing on the same lab in the same run (needs root):
///  - initial sync: N memos of 1 KiB (default 10,000) made directly in host a's store (not
///    timed), then one `memo-peer sync --peer b` on a, which sends them all to b's `serve`.
///    Figures: the wall time of the command (the user action: process start, discovery,
///    handshake and sync), its `session_ms`, the bytes of a's `eth0` (rx + tx, counted as
///    Syncthing's figure is) and b's `serve` peak RSS (VmHWM), the receiver's;
///  - one change: one memo edited on a (directly in the store), then `memo-peer sync` again;
///    the median of 5, each another memo. Figures: `session_ms` (the sync over the ready
///    connection), `session_bytes` (its TLS records, both ways), the wall time of the command
///    and a's `eth0` bytes for the whole command.
/// Baseline: `bench/syncthing/baseline.sh` with as many files of 1 KiB, run first, with no
/// memo-peer process on the lab.
struct SyncBench {
  let options: BenchOptions
  static let changes = 5
  static let size = 1024

  /// The fields of `baseline.sh`'s JSON that the report uses.
  struct Syncthing: Decodable {
    let version: String
    let initialSeconds: Double
    let initialBytes: Int
    let changeSeconds: Double
    let changeBytes: Int
    let receiverPeakRSSKiB: Int
    let changeSamples: [Double]?
    /// With its default file watcher instead of a forced scan (`--watcher-changes`).
    let watcherChangeSamples: [Double]?
    enum CodingKeys: String, CodingKey {
      case version
      case changeSamples = "change_seconds_samples"
      case watcherChangeSamples = "watcher_change_seconds_samples"
      case initialSeconds = "initial_seconds"
      case initialBytes = "initial_bytes"
      case changeSeconds = "change_seconds"
      case changeBytes = "change_bytes"
      case receiverPeakRSSKiB = "receiver_peak_rss_kib"
    }
  }

  /// The part of `memo-peer sync --json` that the report uses.
  struct SyncOutput: Decodable {
    struct Peer: Decodable {
      let status: String
      let sentRevisions: Int?
      let connectMilliseconds: Double?
      let sessionMilliseconds: Double?
      let sessionBytes: Int?
      enum CodingKeys: String, CodingKey {
        case status
        case sentRevisions = "sent_revisions"
        case connectMilliseconds = "connect_ms"
        case sessionMilliseconds = "session_ms"
        case sessionBytes = "session_bytes"
      }
    }
    let peers: [Peer]
  }

  /// One `memo-peer sync` as measured.
  struct Run {
    var wallSeconds: Double
    var linkBytes: Int
    var connectMilliseconds: Double
    var sessionMilliseconds: Double
    var sessionBytes: Int
    var sentRevisions: Int
  }

  func run(into report: inout BenchReport) throws {
    let count = options.syncMemoCount
    print("sync (virtual lab, \(count) memos of 1 KiB from a to b's serve, then \(Self.changes) single changes):")
    guard let bench = try BenchLab.up(2, options: options) else { return }
    defer { bench.down() }
    let (lab, environment, labDirectory) = (bench.script, bench.environment, bench.directory)

    // The baseline first, alone on the lab: no memo-peer process runs yet.
    fflush(nil)  // our lines before the script's progress on stderr
    let syncthing = try runSyncthing(lab: lab, environment: environment, files: count)
    print(
      "  Syncthing \(syncthing.version): initial \(String(format: "%.2f", syncthing.initialSeconds)) s, "
        + "\(syncthing.initialBytes) bytes; one change \(String(format: "%.1f", syncthing.changeSeconds * 1000)) ms, "
        + "\(syncthing.changeBytes) bytes; receiver peak RSS \(syncthing.receiverPeakRSSKiB) KiB")

    let memoPeer = LabMemoPeer(lab: lab, memoPeer: options.memoPeer, environment: environment)
    for host in ["a", "b"] {
      try bench.emptyHome(host)
      _ = try memoPeer.run(host, ["consent", "grant"])
    }
    let idA = try memoPeer.run("a", ["id"]).output
    let idB = try memoPeer.run("b", ["id"]).output
    // a shares its notebook with b: b is invited at the warm-up sync below and accepts.
    _ = try memoPeer.run("a", ["trust", "add", idB, "--name", "bee", "--share", "personal"])
    _ = try memoPeer.run("b", ["trust", "add", idA, "--name", "ay"])
    let serve = try startLabServe(lab: lab, host: "b", memoPeer: options.memoPeer, environment: environment)
    defer { stopLabProcess(serve) }
    let servePID = try memoPeerProcess(under: serve.processIdentifier)
    // Warm-up with both stores empty: b's serve is up, advertised and found, and a has
    // learnt b's discovery key.
    _ = try sync(memoPeer)
    try memoPeer.acceptInvitations(on: "b")

    let storeA = try MemoStore.open(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/a/home"]))
    let memos = try storeA.createMany(
      (0..<count).map { MemoDraft(title: "memo \($0)", body: Self.randomBody(), tags: ["bench"]) },
      now: wallClock())
    let initial = try sync(memoPeer)
    let receiverPeakKiB = try peakRSSKiB(servePID)
    let storeB = try MemoStore.open(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(labDirectory)/b/home"]))
    guard initial.sentRevisions == count, try storeB.count() == count else {
      throw BenchError(
        "the initial sync sent \(initial.sentRevisions); b holds \(try storeB.count()) of \(count) memos")
    }
    print(
      "  initial: \(count) memos in \(milliseconds(initial.wallSeconds)) ms (connect \(initial.connectMilliseconds) ms, "
        + "session \(initial.sessionMilliseconds) ms), \(initial.sessionBytes) TLS bytes, \(initial.linkBytes) bytes on "
        + "a's eth0; b's serve peak RSS \(receiverPeakKiB) KiB")

    var changes: [Run] = []
    for index in 0..<Self.changes {
      let memo = memos[(index * count / Self.changes + 7) % count]
      let body = Self.randomBody()
      try storeA.update(memo.id, MemoChange(body: body), now: wallClock())
      let change = try sync(memoPeer)
      guard change.sentRevisions == 1, try storeB.memo(memo.id).body == body else {
        throw BenchError("change \(index + 1): sent \(change.sentRevisions) revisions, or b lacks the new body")
      }
      print(
        "  change \(index + 1)/\(Self.changes): command \(milliseconds(change.wallSeconds)) ms (connect "
          + "\(change.connectMilliseconds) ms, session \(change.sessionMilliseconds) ms), \(change.sessionBytes) TLS "
          + "bytes, \(change.linkBytes) bytes on a's eth0")
      changes.append(change)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let changeSession = median(changes.map(\.sessionMilliseconds))
    let changeSessionBytes = median(changes.map { Double($0.sessionBytes) })
    let changeCommand = median(changes.map { $0.wallSeconds * 1000 })
    let changeLink = median(changes.map { Double($0.linkBytes) })
    let mebibytes = { (kib: Int) in Double(kib) / 1024 }

    report.add(
      "initial sync of \(count) memos, `memo-peer sync` command", value: initial.wallSeconds, unit: "s",
      baselineName: "Syncthing, scan to b complete", baseline: syncthing.initialSeconds, target: "< 1 s",
      met: initial.wallSeconds < 1)
    report.add(
      "initial sync of \(count) memos, session_ms (ready connection)", value: initial.sessionMilliseconds / 1000,
      unit: "s", baselineName: "Syncthing, scan to b complete", baseline: syncthing.initialSeconds)
    report.add(
      "initial sync of \(count) memos, bytes on a's eth0 (rx+tx)", value: Double(initial.linkBytes), unit: "bytes",
      baselineName: "Syncthing, a's eth0", baseline: Double(syncthing.initialBytes))
    report.add(
      "receiver peak RSS (b's serve, VmHWM)", value: mebibytes(receiverPeakKiB), unit: "MiB",
      baselineName: "Syncthing receiver worker", baseline: mebibytes(syncthing.receiverPeakRSSKiB), target: "< 50 MiB",
      met: receiverPeakKiB < 50 * 1024)
    report.add(
      "one change, session_ms over an established connection (median of \(Self.changes))", value: changeSession,
      unit: "ms", baselineName: "Syncthing, scan to b's copy", baseline: syncthing.changeSeconds * 1000,
      target: "< 10 ms", met: changeSession < 10)
    report.add(
      "one change, session_bytes (TLS records, both ways; median)", value: changeSessionBytes, unit: "bytes",
      baselineName: "Syncthing, a's eth0", baseline: Double(syncthing.changeBytes), target: "< 4096 bytes",
      met: changeSessionBytes < 4096)
    report.add(
      "one change, `memo-peer sync` command incl. discovery+handshake (median)", value: changeCommand, unit: "ms",
      baselineName: "Syncthing, scan to b's copy (connected)", baseline: syncthing.changeSeconds * 1000,
      target: "< 300 ms", met: changeCommand < 300)
    report.add(
      "one change, bytes on a's eth0 for the whole command (median)", value: changeLink, unit: "bytes",
      baselineName: "Syncthing, a's eth0 (connected)", baseline: Double(syncthing.changeBytes))
  }

  /// One `memo-peer sync --peer PEER --json` on `host` (default: a with bee), timed from the
  /// start of the process to its exit, with the host's link counters read around it.
  func sync(_ memoPeer: LabMemoPeer, on host: String = "a", peer: String = "bee") throws -> Run {
    let before = try memoPeer.linkBytes(host)
    let (output, wall) = try memoPeer.run(host, ["sync", "--peer", peer, "--json", "--timeout", "60"])
    let after = try memoPeer.linkBytes(host)
    guard let decoded = try? JSONDecoder().decode(SyncOutput.self, from: Data(output.utf8)),
      let peer = decoded.peers.first, peer.status == "synced"
    else { throw BenchError("memo-peer sync printed: \(output)") }
    return Run(
      wallSeconds: wall, linkBytes: after - before, connectMilliseconds: peer.connectMilliseconds ?? 0,
      sessionMilliseconds: peer.sessionMilliseconds ?? 0, sessionBytes: peer.sessionBytes ?? 0,
      sentRevisions: peer.sentRevisions ?? 0)
  }

  /// `bench/syncthing/baseline.sh` (next to the lab script's `scripts/`) on the lab that is up.
  func runSyncthing(
    lab: String, environment: [String: String], files: Int, changes: Int? = nil, watcherChanges: Int = 0
  ) throws -> Syncthing {
    let script = options.syncthingBaseline ?? Self.defaultBaseline(lab: lab)
    let workdir = NSTemporaryDirectory() + "memo-peer-bench-syncthing-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: workdir) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.arguments =
      ["--lab", lab, "--files", "\(files)", "--size", "\(Self.size)", "--workdir", workdir]
      + (changes.map { ["--changes", "\($0)"] } ?? []) + ["--watcher-changes", "\(watcherChanges)"]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(script) exited with \(process.terminationStatus)") }
    do {
      return try JSONDecoder().decode(Syncthing.self, from: data)
    } catch {
      throw BenchError("\(script) printed no usable JSON: \(String(decoding: data, as: UTF8.self))")
    }
  }

  static func defaultBaseline(lab: String) -> String {
    let repository = ((lab as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
    return (repository.isEmpty ? "." : repository) + "/bench/syncthing/baseline.sh"
  }

  /// The memo-peer process itself: `lab exec` execs `ip netns exec`, which execs `env`,
  /// which execs memo-peer, so the PID is normally memo-peer's once the execs are done; a
  /// wrapper that forked instead is looked through (its children, two levels). Waits at
  /// most 5 s.
  func memoPeerProcess(under pid: Int32) throws -> Int32 {
    // The same file as --memo-peer (stat follows /proc/PID/exe and any symlink in the path).
    var target = stat()
    guard stat(options.memoPeer, &target) == 0 else { throw BenchError("cannot stat \(options.memoPeer)") }
    func isMemoPeer(_ pid: Int32) -> Bool {
      var file = stat()
      return stat("/proc/\(pid)/exe", &file) == 0 && file.st_dev == target.st_dev && file.st_ino == target.st_ino
    }
    func children(_ pid: Int32) -> [Int32] {
      let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
      return tasks.flatMap { task in
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
          .split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
      }
    }
    for _ in 0..<250 {
      let candidates = [pid] + children(pid) + children(pid).flatMap(children)
      if let found = candidates.first(where: isMemoPeer) { return found }
      usleep(20_000)
    }
    throw BenchError("no memo-peer process under the serve wrapper \(pid)")
  }

  /// VmHWM of a running process, in KiB.
  func peakRSSKiB(_ pid: Int32) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
      let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { throw BenchError("no VmHWM for process \(pid)") }
    return kib
  }

  /// 1 KiB of random printable text (a random file of Syncthing's has no structure either).
  static func randomBody() -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    return String((0..<(size - 1)).map { _ in alphabet.randomElement()! }) + "\n"
  }

  func wallClock() -> Timestamp { Timestamp((Date().timeIntervalSince1970 * 1000).rounded()) }
  private func milliseconds(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }
}

/// memo-peer on lab hosts through `lab exec`.
struct LabMemoPeer {
  let lab: String
  let memoPeer: String
  let environment: [String: String]

  /// Runs memo-peer on `host`, with `stdin` as its input (else none); returns its stdout
  /// (trimmed) and the wall seconds from start to exit (`lab exec` included: `ip netns exec`
  /// and `env`, ~2 ms). Fails on a non-zero exit.
  func run(_ host: String, _ arguments: [String], stdin: String? = nil) throws -> (output: String, seconds: Double) {
    try capture(host, [memoPeer] + arguments, stdin: stdin)
  }

  /// rx + tx bytes of `host`'s eth0.
  func linkBytes(_ host: String) throws -> Int {
    let (output, _) = try capture(
      host, ["cat", "/sys/class/net/eth0/statistics/rx_bytes", "/sys/class/net/eth0/statistics/tx_bytes"])
    let counters = output.split(separator: "\n").compactMap { Int($0) }
    guard counters.count == 2 else { throw BenchError("unreadable eth0 counters on \(host): \(output)") }
    return counters[0] + counters[1]
  }

  private func capture(_ host: String, _ command: [String], stdin: String? = nil) throws -> (String, Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: lab)
    process.arguments = ["exec", host] + command
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let input = stdin.map { _ in Pipe() }
    process.standardOutput = output
    process.standardInput = input ?? FileHandle(forReadingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    // Timed to the end of its stdout, which comes with its exit: Foundation's
    // `waitUntilExit` polls in steps of 50 ms and would add up to that much.
    var data = Data()
    let elapsed = try seconds {
      try process.run()
      if let input, let stdin {
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
      }
      data = output.fileHandleForReading.readDataToEndOfFile()
    }
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard process.terminationStatus == 0 else {
      throw BenchError("\(command.joined(separator: " ")) on \(host) exited with \(process.terminationStatus): \(text)")
    }
    return (text, elapsed)
  }
}
