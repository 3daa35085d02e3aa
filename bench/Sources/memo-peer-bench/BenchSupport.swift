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
  /// The Syncthing baseline script; default: `bench/syncthing/baseline.sh` beside the lab
  /// script's directory.
  var syncthingBaseline: String?
  /// Leave the sync benchmark's lab up at the end (serve stopped), to profile on it.
  var keepLab = false
  /// Which groups to run: store, aead, tls, discovery, delivery, sync (default all).
  var only: Set<String> = []
  /// Keep the benchmark node in this directory (for profiling) instead of a temporary one.
  var keepHome: String?

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
      case "--syncthing-baseline": options.syncthingBaseline = iterator.next()
      case "--keep-lab": options.keepLab = true
      case "--only": options.only.insert(iterator.next() ?? "")
      default:
        print(
          "usage: memo-peer-bench [--memo-peer PATH] [--memos N] [--repeats N] [--results FILE] [--keep-home DIR] [--lab SCRIPT] [--sync-memos N] [--syncthing-baseline SCRIPT] [--keep-lab] [--only store|aead|tls|discovery|delivery|sync|relay]"
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

/// Runs a command with stdout discarded; returns wall seconds and peak RSS in KiB.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> (Double, Int) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  process.environment = environment
  process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
  let elapsed = try seconds {
    try process.run()
    process.waitUntilExit()
  }
  guard process.terminationStatus == 0 else {
    throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
  }
  var usage = rusage()
  getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
  return (elapsed, Int(usage.ru_maxrss))
}

struct BenchError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// `memo-peer serve` on a lab host, in the background, its log discarded. The caller ends
/// it with `stopLabProcess`.
func startLabServe(lab: String, host: String, memoPeer: String, environment: [String: String]) throws -> Process {
  let serve = Process()
  serve.executableURL = URL(fileURLWithPath: lab)
  serve.arguments = ["exec", host, memoPeer, "serve"]
  serve.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  serve.standardError = FileHandle(forWritingAtPath: "/dev/null")
  try serve.run()
  return serve
}

/// SIGTERM to a process this benchmark started, then its exit.
func stopLabProcess(_ process: Process) {
  kill(process.processIdentifier, SIGTERM)
  process.waitUntilExit()
}
