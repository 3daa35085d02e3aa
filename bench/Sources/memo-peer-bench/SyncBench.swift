import Foundation
import MemoCore
import MemoStore
import MemoSystem

/// Sync on the virtual lab, against Syncthing on the same lab in the same run (needs root):
///  - initial sync: N memos of 1 KiB (default 10,000) made directly in host a's store (not
///    timed), then one `memo-peer sync --peer b` on a, which sends them all to b's `serve`.
///    Figures: the wall time of the command (the user action: process start, discovery,
///    handshake and sync), its `session_ms`, the bytes of a's `eth0` (rx + tx, counted as
///    Syncthing's figure is), b's `serve` peak RSS (VmHWM), the receiver's, and the
///    command's (GNU time);
///  - one change: one memo edited on a (directly in the store), then `memo-peer sync` again;
///    the median of 5, each another memo. Figures: `session_ms` (the sync over the ready
///    connection), `session_bytes` (its TLS records, both ways), the wall time of the command
///    and a's `eth0` bytes for the whole command.
/// Baselines: `bench/syncthing/baseline.sh` with as many files of 1 KiB, run first, with no
/// memo-peer process on the lab; and the floor (`SyncFloor`): plain SQLite inserting as many
/// rows of 1 KiB in one transaction on the same file system, plus one Ed25519 verification
/// per record spread over every core. Also the receiver's database and home sizes.
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
    /// GNU time's figures for the command (`sync(…, peakRSS: true)`): peak RSS, and CPU
    /// time (user + system).
    var peakRSSKiB: Int?
    var cpuSeconds: Double?
  }

  static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

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

    var pair = try SyncPair.start(bench, options: options)
    defer { stopLabProcess(pair.serve) }
    // The floor: the same number of rows of 1 KiB in one transaction of plain SQLite, on
    // the same file system as b's store, plus a signature check per record on every core
    // (bench/README.md, "Sync").
    let floor = try SyncFloor.measure(count: count, body: Self.randomBody(), in: "\(labDirectory)/b")

    let initial = try pair.initialSync(count: count)
    let database = try Self.bytes(under: bench.home("b") + "/data", named: "memos.sqlite")
    let homeBytes = try Self.bytes(under: bench.home("b"))
    let (changes, changeCommand) = try pair.changes(Self.changes)
    let homeAfterChanges = try Self.bytes(under: bench.home("b"))
    SyncFigures.shared.initialSeconds = initial.run.wallSeconds
    SyncFigures.shared.initialCount = count
    SyncFigures.shared.changeCommandMilliseconds = changeCommand
    let changeSession = Self.median(changes.map(\.sessionMilliseconds))
    let changeSessionBytes = Self.median(changes.map { Double($0.sessionBytes) })
    let changeLink = Self.median(changes.map { Double($0.linkBytes) })
    let mebibytes = { (kib: Int) in Double(kib) / 1024 }
    let receiverPeakKiB = initial.receiverPeakKiB

    report.add(
      "initial sync of \(count) memos, `memo-peer sync` command", value: initial.run.wallSeconds, unit: "s",
      baselineName: "Syncthing, scan to b complete", baseline: syncthing.initialSeconds)
    report.add(
      "initial sync of \(count) memos, `memo-peer sync` command", value: initial.run.wallSeconds, unit: "s",
      baselineName: "the floor: plain SQLite storing the rows + their Ed25519 checks on every core",
      baseline: floor.total, target: "≤ 1.5× the floor", met: initial.run.wallSeconds <= 1.5 * floor.total)
    report.add(
      "receiver's database after the initial sync of \(count) memos (memos.sqlite)",
      value: Double(database) / 1e6, unit: "MB", baselineName: "main before issue 43 (bench/README)",
      baseline: Self.databaseBeforeContentOnce / 1e6, target: "≤ 60% of it",
      met: Double(database) <= 0.6 * Self.databaseBeforeContentOnce)
    report.add(
      "receiver's home right after the initial sync (every file, the WAL's 16 MiB included)",
      value: Double(homeBytes) / 1e6, unit: "MB", baselineName: "after the \(Self.changes) changes",
      baseline: Double(homeAfterChanges) / 1e6)
    report.add(
      "sender peak RSS (a's `memo-peer sync`, GNU time)", value: mebibytes(initial.run.peakRSSKiB ?? 0), unit: "MiB",
      baselineName: "none", baseline: 0)
    report.add(
      "initial sync of \(count) memos, CPU seconds of both processes (a's command, b's serve)",
      value: (initial.run.cpuSeconds ?? 0) + initial.receiverCPU, unit: "s", baselineName: "none", baseline: 0)
    report.add(
      "initial sync of \(count) memos, session_ms (ready connection)", value: initial.run.sessionMilliseconds / 1000,
      unit: "s", baselineName: "Syncthing, scan to b complete", baseline: syncthing.initialSeconds)
    report.add(
      "initial sync of \(count) memos, bytes on a's eth0 (rx+tx)", value: Double(initial.run.linkBytes),
      unit: "bytes",
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
  /// start of the process to its exit, with the host's link counters read around it. With
  /// `peakRSS`, run by GNU time (`-f %M`, as the store figures are), which adds its fork to
  /// the time (well under a millisecond).
  func sync(_ memoPeer: LabMemoPeer, on host: String = "a", peer: String = "bee", peakRSS: Bool = false) throws
    -> Run
  {
    let arguments = ["sync", "--peer", peer, "--json", "--timeout", "600"]
    let before = try memoPeer.linkBytes(host)
    let (output, wall, kib, cpu): (String, Double, Int?, Double?)
    if peakRSS {
      (output, wall, kib, cpu) = try memoPeer.runMeasured(host, arguments)
    } else {
      ((output, wall), kib, cpu) = (try memoPeer.run(host, arguments), nil, nil)
    }
    let after = try memoPeer.linkBytes(host)
    guard let decoded = try? JSONDecoder().decode(SyncOutput.self, from: Data(output.utf8)),
      let peer = decoded.peers.first, peer.status == "synced"
    else { throw BenchError("memo-peer sync printed: \(output)") }
    return Run(
      wallSeconds: wall, linkBytes: after - before, connectMilliseconds: peer.connectMilliseconds ?? 0,
      sessionMilliseconds: peer.sessionMilliseconds ?? 0, sessionBytes: peer.sessionBytes ?? 0,
      sentRevisions: peer.sentRevisions ?? 0, peakRSSKiB: kib, cpuSeconds: cpu)
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

  /// CPU seconds (user + system) a running process has used so far (`/proc/PID/stat`).
  func cpuSeconds(_ pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name (in parentheses, which may hold spaces): utime and
    // stime are the 12th and 13th of them, in clock ticks.
    guard let close = stat.lastIndex(of: ")") else { throw BenchError("unreadable /proc/\(pid)/stat") }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
      throw BenchError("unreadable /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// VmHWM of a running process, in KiB.
  func peakRSSKiB(_ pid: Int32) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
      let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { throw BenchError("no VmHWM for process \(pid)") }
    return kib
  }

  /// A receiver's database after 10,000 memos of 1 KiB on main before issue 43, when every
  /// body was stored twice (the issue's figure: 44 MB).
  static let databaseBeforeContentOnce = 44e6

  /// Bytes of every regular file under `directory` (only those called `name`, when given).
  static func bytes(under directory: String, named name: String? = nil) throws -> Int {
    guard let walker = FileManager.default.enumerator(atPath: directory) else {
      throw BenchError("cannot list \(directory)")
    }
    var total = 0
    for case let file as String in walker {
      var info = stat()
      if let wanted = name, (file as NSString).lastPathComponent != wanted { continue }
      if lstat(directory + "/" + file, &info) == 0, info.st_mode & S_IFMT == S_IFREG { total += Int(info.st_size) }
    }
    return total
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

  /// `run` under GNU time: also the command's peak RSS in KiB (`-f %M`), written to a file
  /// in the host's lab folder so that the command's own stderr stays its own.
  /// Also the command's CPU time (user + system, `%U %S`).
  func runMeasured(_ host: String, _ arguments: [String]) throws
    -> (output: String, seconds: Double, peakKiB: Int, cpuSeconds: Double)
  {
    let file = "\(environment["MEMO_PEER_LAB_DIR"] ?? "/tmp/memo-peer-lab-bench")/\(host)/peak-rss"
    defer { unlink(file) }
    let (output, seconds) = try capture(host, ["/usr/bin/time", "-f", "%M %U %S", "-o", file, memoPeer] + arguments)
    let text = try String(contentsOfFile: file, encoding: .utf8)
    let fields = text.split(separator: "\n").last.map { $0.split(separator: " ") } ?? []
    guard fields.count == 3, let kib = Int(fields[0]), let user = Double(fields[1]), let system = Double(fields[2])
    else { throw BenchError("/usr/bin/time wrote no peak RSS and CPU time: \(text)") }
    return (output, seconds, kib, user + system)
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
