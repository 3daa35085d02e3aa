import Foundation

/// Command-line options of the benchmark runner.
struct BenchOptions {
  func wants(_ group: String) -> Bool { only.isEmpty || only.contains(group) }

  var memoPeer = ".build/release/memo-peer"
  var memoCount = 100_000
  var repeats = 5
  var resultsPath = "bench/results/latest.json"
  var labScript = "scripts/lab"
  /// Memos of the sync benchmark's initial sync (and files of its Syncthing baseline).
  var syncMemoCount = 10_000
  /// Memos of the `sync-large` group's initial sync.
  var syncLargeMemoCount = 100_000
  /// The Syncthing baseline script; default: `bench/syncthing/baseline.sh` beside the lab
  /// script's directory.
  var syncthingBaseline: String?
  /// Leave the sync benchmark's lab up at the end (serve stopped), to profile on it.
  var keepLab = false
  /// Which groups to run: binary, store, history, aead, ed25519, tls, discovery, outbox, delivery, sync,
  /// sync-large, relay, live (default all).
  var only: Set<String> = []
  /// Keep the benchmark node in this directory (for profiling) instead of a temporary one.
  var keepHome: String?
  /// Changes timed by the live-sync benchmark, and its idle window in seconds.
  var liveChanges = 100
  var idleSeconds = 600.0

  static func parse(_ arguments: ArraySlice<String>) -> BenchOptions {
    var options = BenchOptions()
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
      switch argument {
      case "--memo-peer": options.memoPeer = iterator.next() ?? options.memoPeer
      case "--memos": options.memoCount = Int(iterator.next() ?? "") ?? options.memoCount
      case "--repeats": options.repeats = max(1, Int(iterator.next() ?? "") ?? options.repeats)
      case "--results": options.resultsPath = iterator.next() ?? options.resultsPath
      case "--keep-home": options.keepHome = iterator.next()
      case "--lab": options.labScript = iterator.next() ?? options.labScript
      case "--sync-memos": options.syncMemoCount = max(10, Int(iterator.next() ?? "") ?? options.syncMemoCount)
      case "--sync-large-memos":
        options.syncLargeMemoCount = max(10, Int(iterator.next() ?? "") ?? options.syncLargeMemoCount)
      case "--syncthing-baseline": options.syncthingBaseline = iterator.next()
      case "--keep-lab": options.keepLab = true
      case "--only": options.only.insert(iterator.next() ?? "")
      case "--live-changes": options.liveChanges = max(10, Int(iterator.next() ?? "") ?? options.liveChanges)
      case "--idle-seconds": options.idleSeconds = max(10, Double(iterator.next() ?? "") ?? options.idleSeconds)
      default:
        print(
          "usage: memo-peer-bench [--memo-peer PATH] [--memos N] [--repeats N] [--results FILE] [--keep-home DIR] [--lab SCRIPT] [--sync-memos N] [--sync-large-memos N] [--syncthing-baseline SCRIPT] [--keep-lab] [--live-changes N] [--idle-seconds S] [--only binary|store|history|aead|ed25519|tls|discovery|outbox|delivery|sync|sync-large|relay|live|filtered]"
        )
        exit(argument == "--help" ? 0 : 2)
      }
    }
    return options
  }
}

/// One measured figure, its baseline and, where there is one, its target.
struct BenchFigure: Codable {
  let name: String
  let value: Double
  let unit: String
  let baselineName: String
  let baseline: Double
  /// value / baseline.
  let ratio: Double
  let target: String?
  let met: Bool?
}

struct BenchReport {
  var figures: [BenchFigure] = []

  var allTargetsMet: Bool { figures.allSatisfy { $0.met != false } }

  mutating func add(
    _ name: String, value: Double, unit: String, baselineName: String, baseline: Double, target: String? = nil,
    met: Bool? = nil
  ) {
    let figure = BenchFigure(
      name: name, value: value, unit: unit, baselineName: baselineName, baseline: baseline,
      ratio: baseline > 0 ? value / baseline : 0, target: target, met: met)
    figures.append(figure)
    var line =
      "  \(name): \(format(value)) \(unit)  (\(baselineName): \(format(baseline)) \(unit), ratio \(format(figure.ratio)))"
    if let target, let met { line += "  target \(target): \(met ? "met" : "MISSED")" }
    print(line)
  }

  func printSummary() {
    print(allTargetsMet ? "all targets met" : "SOME TARGETS MISSED")
  }

  func save(to path: String) throws {
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(figures).write(to: URL(fileURLWithPath: path))
    print("results written to \(path)")
  }

  private func format(_ value: Double) -> String { String(format: value >= 100 ? "%.0f" : "%.3f", value) }
}

/// Wall-clock seconds of `body`.
func seconds(_ body: () throws -> Void) rethrows -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  try body()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// The best (lowest) of `repeats` timings: the least disturbed by other load.
func best(_ repeats: Int, _ body: () throws -> Double) rethrows -> Double {
  var result = Double.infinity
  for _ in 0..<repeats { result = min(result, try body()) }
  return result
}

/// Runs a command with stdout discarded; returns wall seconds and `ru_maxrss` in KiB. That
/// figure is not the command's own: Linux counts in it the memory of the process that forked
/// it, as it was at exec (with `posix_spawn`'s shared address space, the bench's peak); use
/// `peakRSS` for a command's memory.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> (Double, Int) {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  let argv = ([executable] + arguments).map { strdup($0) } + [nil]
  let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
  defer { for pointer in argv + envp { free(pointer) } }
  var pid: pid_t = 0
  var status: Int32 = 0
  var usage = rusage()
  let elapsed = try seconds {
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    guard spawned == 0 else { throw BenchError("cannot run \(executable): errno \(spawned)") }
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
  }
  // Exited normally with status 0 (WIFEXITED, WEXITSTATUS).
  guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
    throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited with status word \(status)")
  }
  return (elapsed, Int(usage.ru_maxrss))
}

/// A command's own peak RSS in KiB: run by GNU time (`/usr/bin/time -f %M`), whose small
/// forked copy is all that the figure counts besides the command.
func peakRSS(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Int {
  let output = NSTemporaryDirectory() + "memo-peer-bench-rss-\(getpid())"
  defer { try? FileManager.default.removeItem(atPath: output) }
  _ = try runProcess("/usr/bin/time", ["-f", "%M", "-o", output, executable] + arguments, environment: environment)
  let text = try String(contentsOfFile: output, encoding: .utf8)
  guard let kib = text.split(separator: "\n").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
    throw BenchError("/usr/bin/time wrote no peak RSS: \(text)")
  }
  return kib
}

struct BenchError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// `memo-peer serve` on a lab host, in the background, its log (with `--debug`) in
/// `serve.log` in the host's lab folder when `log` is set, else discarded. The caller ends
/// it with `stopLabProcess`.
func startLabServe(
  lab: String, host: String, memoPeer: String, environment: [String: String], log: Bool = false
) throws -> Process {
  let serve = Process()
  serve.executableURL = URL(fileURLWithPath: lab)
  serve.arguments = ["exec", host, memoPeer] + (log ? ["--debug"] : []) + ["serve"]
  serve.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  let logPath = "\(environment["MEMO_PEER_LAB_DIR"] ?? "/tmp/memo-peer-lab-bench")/\(host)/serve.log"
  if log { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
  serve.standardError = FileHandle(forWritingAtPath: log ? logPath : "/dev/null")
  try serve.run()
  return serve
}

/// SIGTERM to a process this benchmark started, then its exit.
func stopLabProcess(_ process: Process) {
  kill(process.processIdentifier, SIGTERM)
  process.waitUntilExit()
}

/// The virtual lab a benchmark group runs on (needs root): brought up with its hosts, taken
/// down by `down()` unless `--keep-lab` was given.
struct BenchLab {
  let script: String
  let environment: [String: String]
  let directory: String
  let keep: Bool

  /// A lab of `hosts` hosts; nil, with the group's "skipped" line, when not root.
  static func up(_ hosts: Int, options: BenchOptions) throws -> BenchLab? {
    guard getuid() == 0 else {
      print("  skipped: the virtual lab needs root")
      return nil
    }
    let environment = BrowseBench.labEnvironment(ProcessInfo.processInfo.environment)
    let lab = BenchLab(
      script: options.labScript, environment: environment,
      directory: environment["MEMO_PEER_LAB_DIR"] ?? "/tmp/memo-peer-lab-bench", keep: options.keepLab)
    do {
      try BrowseBench.run(lab.script, ["up", "\(hosts)"], environment: environment)
    } catch {
      lab.down()
      throw error
    }
    return lab
  }

  func down() { if !keep { _ = try? BrowseBench.run(script, ["down"], environment: environment) } }

  /// `host`'s MEMO_PEER_HOME.
  func home(_ host: String) -> String { "\(directory)/\(host)/home" }

  /// Empties `host`'s home: a node with nothing yet.
  func emptyHome(_ host: String) throws {
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: home(host))) ?? [] {
      try FileManager.default.removeItem(atPath: "\(home(host))/\(entry)")
    }
  }
}

extension LabMemoPeer {
  /// Accepts every notebook invitation waiting on `host` (`notebook invitations --json`,
  /// `notebook accept`), as a person there would; none waiting is the benchmark's failure.
  func acceptInvitations(on host: String) throws {
    let output = try run(host, ["notebook", "invitations", "--json"]).output
    let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
    let ids = (object?["invitations"] as? [[String: Any]] ?? []).compactMap { $0["notebook"] as? String }
    guard !ids.isEmpty else { throw BenchError("\(host) has no notebook invitation to accept") }
    for id in ids { _ = try run(host, ["notebook", "accept", id]) }
  }
}
