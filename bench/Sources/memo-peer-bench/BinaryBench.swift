import Foundation

/// The binary and its start-up: the stripped size of memo-peer (next to Debian's Syncthing
/// binary, a Go program that does the same kind of job), and the time from exec to the
/// first byte of output of `memo-peer --version` and of `list --json` on an empty store, next to a
/// C program compiled here that prints one line (median of 30 each, interleaved, so both
/// see the same load). Size: the binary should be at most 20 MB stripped; start-up of
/// `--version` at most 2 × the C program's.
struct BinaryBench {
  let options: BenchOptions
  static let runs = 30

  func run(into report: inout BenchReport) throws {
    print("binary (stripped size; exec to first output, median of \(Self.runs)):")
    let work = NSTemporaryDirectory() + "memo-peer-bench-binary-\(getpid())"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: work) }
    let stripped = work + "/memo-peer"
    try runTool("/usr/bin/strip", ["-o", stripped, options.memoPeer])
    let size = try fileSize(stripped)
    let syncthing = (try? fileSize("/usr/bin/syncthing")) ?? 0
    report.add(
      "memo-peer stripped", value: size / 1e6, unit: "MB", baselineName: "Debian's syncthing",
      baseline: syncthing / 1e6, target: "≤ 20 MB", met: size <= 20e6)

    let hello = work + "/hello"
    try Data("#include <stdio.h>\nint main(void) { puts(\"hello 0.1.0\"); return 0; }\n".utf8)
      .write(to: URL(fileURLWithPath: hello + ".c"))
    try runTool("/usr/bin/cc", ["-O2", "-o", hello, hello + ".c"])
    let home = work + "/node"
    try runTool(stripped, ["init"], environment: ["MEMO_PEER_HOME": home])
    var version: [Double] = []
    var list: [Double] = []
    var baseline: [Double] = []
    for _ in 0..<Self.runs {
      baseline.append(try firstOutput(hello, []))
      version.append(try firstOutput(stripped, ["--version"]))
      // --json: on a pipe, plain `list` prints nothing for an empty store (scripts count lines).
      list.append(try firstOutput(stripped, ["list", "--json"], environment: ["MEMO_PEER_HOME": home]))
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let c = median(baseline) * 1000
    let versionMS = median(version) * 1000
    report.add(
      "`memo-peer --version`, exec to first output", value: versionMS, unit: "ms", baselineName: "a C program",
      baseline: c, target: "≤ 2 × C", met: versionMS <= 2 * c)
    report.add(
      "`memo-peer list --json` on an empty store, exec to first output", value: median(list) * 1000, unit: "ms",
      baselineName: "a C program", baseline: c)
  }

  private func fileSize(_ path: String) throws -> Double {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return Double((attributes[.size] as? NSNumber)?.int64Value ?? 0)
  }

  /// Seconds from starting `executable` to the first byte it writes (it then runs
  /// to its end, waited for).
  private func firstOutput(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws
    -> Double
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    // stdout and stderr alike: `list` on an empty store says so on stderr.
    process.standardOutput = pipe
    process.standardError = pipe
    let start = DispatchTime.now().uptimeNanoseconds
    try process.run()
    let first = try pipe.fileHandleForReading.read(upToCount: 1)
    let end = DispatchTime.now().uptimeNanoseconds
    _ = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard first?.isEmpty == false, process.terminationStatus == 0 else {
      throw BenchError("\(executable) \(arguments.joined(separator: " ")) printed nothing or failed")
    }
    return Double(end - start) / 1e9
  }

  private func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(executable) failed") }
  }
}
