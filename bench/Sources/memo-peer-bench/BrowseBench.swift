import Foundation

/// Time to the first result of `memo-peer browse` against `avahi-browse -r` on the same
/// virtual lab (host a serves, host b browses), median of 10 runs each, interleaved.
/// Target: a ratio of at most 1.2. Needs root (the lab); skipped otherwise.
struct BrowseBench {
  let options: BenchOptions

  func run(into report: inout BenchReport) throws {
    print("discovery (virtual lab, time to first result):")
    guard getuid() == 0 else {
      print("  skipped: the virtual lab needs root")
      return
    }
    let lab = options.labScript
    let environment = Self.labEnvironment(ProcessInfo.processInfo.environment)
    defer { _ = try? Self.run(lab, ["down"], environment: environment) }
    try Self.run(lab, ["up", "2"], environment: environment)
    for host in ["a", "b"] {
      try Self.run(lab, ["exec", host, options.memoPeer, "consent", "grant"], environment: environment)
    }
    let serve = try startLabServe(lab: lab, host: "a", memoPeer: options.memoPeer, environment: environment)
    defer { stopLabProcess(serve) }
    // Warm up both (and wait for the advertisement) before measuring.
    _ = try firstLine(lab, ["exec", "b", options.memoPeer, "browse", "--timeout", "10"], environment, prefix: "+")
    var ours: [Double] = []
    var theirs: [Double] = []
    for _ in 0..<10 {
      ours.append(
        try firstLine(lab, ["exec", "b", options.memoPeer, "browse", "--timeout", "10"], environment, prefix: "+"))
      theirs.append(
        try firstLine(lab, ["exec", "b", "avahi-browse", "-rp", "_memo-peer._tcp"], environment, prefix: "="))
    }
    let median = { (values: [Double]) in values.sorted()[values.count / 2] * 1000 }
    report.add(
      "memo-peer browse, first result (median of 10)", value: median(ours), unit: "ms",
      baselineName: "avahi-browse -r", baseline: median(theirs), target: "ratio ≤ 1.2",
      met: median(ours) / median(theirs) <= 1.2)
  }

  /// Seconds from start until the command prints a line starting with `prefix`; then it is
  /// stopped. Gives up after 10 s.
  private func firstLine(_ executable: String, _ arguments: [String], _ environment: [String: String], prefix: String)
    throws -> Double
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    let start = DispatchTime.now().uptimeNanoseconds
    try process.run()
    defer {
      kill(process.processIdentifier, SIGTERM)
      process.waitUntilExit()
    }
    var buffer = ""
    let deadline = start + 10_000_000_000
    while DispatchTime.now().uptimeNanoseconds < deadline {
      let data = pipe.fileHandleForReading.availableData
      if data.isEmpty { break }
      buffer += String(decoding: data, as: UTF8.self)
      if buffer.split(separator: "\n").contains(where: { $0.hasPrefix(prefix) }) {
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
      }
    }
    throw BenchError("\(arguments.joined(separator: " ")) printed no result")
  }

  /// The lab's directory and namespace prefix: the caller's MEMO_PEER_LAB_DIR and
  /// MEMO_PEER_LAB_PREFIX when set, so two labs on one machine never collide; otherwise a
  /// directory of the benchmark's own and the lab's default prefix.
  static func labEnvironment(_ inherited: [String: String]) -> [String: String] {
    [
      "MEMO_PEER_LAB_DIR": inherited["MEMO_PEER_LAB_DIR"] ?? "/tmp/memo-peer-lab-bench",
      "MEMO_PEER_LAB_PREFIX": inherited["MEMO_PEER_LAB_PREFIX"] ?? "mplab",
    ]
  }

  @discardableResult
  static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(executable) \(arguments) failed") }
    return process.terminationStatus
  }
}
