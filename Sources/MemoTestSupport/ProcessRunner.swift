import Foundation

/// What a finished process printed, and how it ended.
public struct ProcessOutput: Sendable {
  public let status: Int32
  public let stdout: String
  public let stderr: String

  public var output: String { stdout + stderr }

  /// stdout read as JSON Lines (lines that do not parse are skipped).
  public var jsonLines: [[String: Any]] {
    stdout.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }
}

/// Runs real processes for tests. Output goes through files rather than pipes, so a
/// chatty process can never block on a full pipe while the test waits for it.
public enum ProcessRunner {
  public static func run(
    _ executable: String, _ arguments: [String], stdin: [UInt8] = [], environment: [String: String]
  ) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    let scratch = NSTemporaryDirectory() + "memo-peer-process-\(UUID().uuidString)"
    let paths = (out: scratch + ".out", err: scratch + ".err", input: scratch + ".in")
    _ = FileManager.default.createFile(atPath: paths.out, contents: nil)
    _ = FileManager.default.createFile(atPath: paths.err, contents: nil)
    _ = FileManager.default.createFile(atPath: paths.input, contents: Data(stdin))
    defer { for path in [paths.out, paths.err, paths.input] { unlink(path) } }
    process.standardOutput = FileHandle(forWritingAtPath: paths.out)
    process.standardError = FileHandle(forWritingAtPath: paths.err)
    process.standardInput = FileHandle(forReadingAtPath: paths.input)
    try process.run()
    process.waitUntilExit()
    // Decoded leniently: a tool's output may hold bytes that are not UTF-8 (a frame's
    // length printed raw), and the text around them is what a test looks at.
    func text(_ path: String) -> String {
      FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
    return ProcessOutput(status: process.terminationStatus, stdout: text(paths.out), stderr: text(paths.err))
  }
}
