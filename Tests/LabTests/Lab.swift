import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// Drives the virtual home lab (scripts/lab) from tests: hosts a, b, c with real
/// avahi-daemons, each command run on a host through `lab exec`.
enum Lab {
  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
  static let script = repository + "/scripts/lab"
  /// Where the test lab lives and how its namespaces are named; overridable so that two
  /// checkouts can run their lab tests side by side.
  static let directory = ProcessInfo.processInfo.environment["MEMO_PEER_LAB_TEST_DIR"] ?? "/tmp/memo-peer-lab-tests"
  static let prefix = ProcessInfo.processInfo.environment["MEMO_PEER_LAB_TEST_PREFIX"] ?? "mplabt"
  static let labEnvironment = ["MEMO_PEER_LAB_DIR": directory, "MEMO_PEER_LAB_PREFIX": prefix]
  static var binary: String { builtProduct("memo-peer") }
  /// memo-peer with test-only knobs (Tests/memo-peer-test-node): `--receipt-delay-ms N` first.
  static var testNodeBinary: String { builtProduct("memo-peer-test-node") }

  static func builtProduct(_ name: String) -> String {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
  }

  typealias Result = ProcessOutput

  /// The lab needs root. Under CI=true it must run, so a missing lab fails the test there.
  static func require() throws {
    guard getuid() == 0 else {
      if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("the lab needs root, and CI=true requires the lab tests to run")
        throw XCTSkip("lab unavailable under CI=true: reported as a failure above")
      }
      throw XCTSkip("the lab needs root; CI (CI=true, as root) runs these tests")
    }
  }

  static func up(_ hosts: Int) throws {
    let result = try run(script, ["up", String(hosts)], environment: labEnvironment)
    guard result.status == 0 else {
      throw LabError("scripts/lab up failed (\(result.status)): \(result.stderr)\(result.stdout)")
    }
  }

  /// Makes sure the first `count` hosts answer over D-Bus before a test uses them: a lab
  /// that did not come up (the class's `up` failed under load) or whose daemon died is
  /// brought up once more, and a test on a lab that still fails says why, with the
  /// daemons' logs, instead of failing later on an unrelated assertion.
  static func ensureHealthy(_ count: Int) throws {
    guard let problem = check(count) else { return }
    print("lab: not healthy before the test, bringing it up again: \(problem)")
    try up(count)
    if let still = check(count) { throw LabError("the lab is not healthy after a fresh `lab up`: \(still)") }
  }

  /// nil when the first `count` hosts answer, otherwise what `scripts/lab check` said.
  static func check(_ count: Int) -> String? {
    guard let result = try? run(script, ["check", String(count)], environment: labEnvironment) else {
      return "scripts/lab check could not run"
    }
    return result.status == 0 ? nil : result.stderr + result.stdout
  }

  static func down() { _ = try? run(script, ["down"], environment: labEnvironment) }

  /// Stops a host's avahi-daemon and waits for the new one the lab starts in its place.
  static func restartAvahi(_ host: String) throws {
    let result = try run(script, ["restart-avahi", host], environment: labEnvironment)
    guard result.status == 0 else {
      throw LabError("scripts/lab restart-avahi failed (\(result.status)): \(result.stderr)\(result.stdout)")
    }
  }

  /// Empties every host's memo-peer home (consent, keys, state), for a fresh node.
  static func resetHomes(_ hosts: [String] = ["a", "b", "c"]) throws {
    for host in hosts {
      let home = "\(directory)/\(host)/home"
      for entry in (try? FileManager.default.contentsOfDirectory(atPath: home)) ?? [] {
        try FileManager.default.removeItem(atPath: home + "/" + entry)
      }
    }
  }

  /// The memo-peer home of a host.
  static func paths(_ host: String) throws -> NodePaths {
    try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "\(directory)/\(host)/home"])
  }

  /// Shares the first host's default notebook with every other host (as members, the
  /// default notebook everywhere), straight in their stores, as a setup from before
  /// notebooks has it after the upgrade: for tests of sync that are not about notebooks.
  /// Needs the hosts' identities (`memo-peer id` makes them) and no memo-peer running.
  static func shareOneNotebook(_ hosts: [String]) throws {
    let devices = try hosts.map { host -> TestDevice in
      let id = try exec(host, ["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
      guard let device = DeviceID(id) else { throw LabError("\(host) has no device ID: \(id)") }
      return (try MemoStore.open(paths: try paths(host)), device)
    }
    try shareNotebook(try devices[0].store.defaultNotebook().id, among: devices)
  }

  /// Runs memo-peer (or `tool`) on a host and waits for it.
  static func exec(
    _ host: String, _ arguments: [String], tool: String? = nil, stdin: String? = nil,
    environment: [String: String] = [:]
  ) throws -> Result {
    var command = ["exec", host]
    if !environment.isEmpty { command += ["env"] + environment.map { "\($0.key)=\($0.value)" } }
    command += [tool ?? binary] + arguments
    return try run(script, command, stdin: stdin, environment: labEnvironment)
  }

  /// Starts memo-peer on a host in the background; its output goes to a file.
  static func start(_ host: String, _ arguments: [String]) throws -> Background {
    try launch(host, [binary] + arguments, label: host, input: FileHandle(forReadingAtPath: "/dev/null"))
  }

  /// Starts another program (not memo-peer) on a host in the background.
  static func startTool(_ host: String, _ tool: String, _ arguments: [String]) -> Background? {
    guard
      let process = try? launch(
        host, [tool] + arguments, label: "\(host)-\(URL(fileURLWithPath: tool).lastPathComponent)",
        input: FileHandle(forReadingAtPath: "/dev/null"))
    else { return nil }
    Thread.sleep(forTimeInterval: 1)
    return process
  }

  /// Starts memo-peer on a host under a pseudo-terminal (`script`), so it prompts as it
  /// would for a person; the returned handle types the person's answers.
  static func startOnTerminal(_ host: String, _ arguments: [String]) throws -> (Background, FileHandle) {
    let command = ([binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
      .joined(separator: " ")
    let input = Pipe()
    let process = try launch(host, ["script", "-qfec", command, "/dev/null"], label: host, input: input)
    return (process, input.fileHandleForWriting)
  }

  private static func launch(_ host: String, _ command: [String], label: String, input: Any?) throws -> Background {
    let output = "\(directory)/\(label)-\(UUID().uuidString).log"
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.arguments = ["exec", host] + command
    process.environment = ProcessInfo.processInfo.environment.merging(labEnvironment) { $1 }
    process.standardInput = input
    process.standardOutput = FileHandle(forWritingAtPath: output)
    process.standardError = process.standardOutput
    try process.run()
    return Background(process: process, output: output)
  }

  /// Runs memo-peer on a host and times it around the command there (start-up and exit
  /// included; the lab's own `exec` excluded): its exit status, the milliseconds, and its
  /// output.
  static func timed(_ host: String, _ arguments: [String]) throws -> (
    status: Int, milliseconds: Int, stdout: String, stderr: String
  ) {
    let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    let result = try exec(
      host,
      [
        "-c",
        "start=$(date +%s%N); \"$0\" \(quoted); status=$?; "
          + "echo \"elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 )) status=$status\" >&2",
        binary,
      ], tool: "sh")
    guard let summary = result.stderr.split(separator: "\n").last(where: { $0.hasPrefix("elapsed_ms=") }) else {
      throw LabError("no timing from \(arguments): \(result.stderr)")
    }
    let fields = Dictionary(
      uniqueKeysWithValues: summary.split(separator: " ").map { field in
        let parts = field.split(separator: "=")
        return (String(parts[0]), Int(parts[1]) ?? -1)
      })
    return (fields["status"] ?? -1, fields["elapsed_ms"] ?? -1, result.stdout, result.stderr)
  }
  /// tcpdump on one of the lab's bridges (`br0`, home; `cafe0`, the café: inside the lab's bridge namespace, never the machine's
  /// own interfaces), writing every packet as it arrives.
  static func startCapture(_ path: String, on bridge: String = "br0") throws -> Process {
    let log = path + ".log"
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
    process.arguments = [
      "netns", "exec", "\(Lab.prefix)-bridge", "/usr/bin/tcpdump", "-i", bridge, "-n", "-U", "-s", "0", "-Z", "root",
      "-w", path,
    ]
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    process.standardOutput = FileHandle(forWritingAtPath: log)
    process.standardError = FileHandle(forWritingAtPath: log)
    try process.run()
    let listening = waitUntil(seconds: 10) {
      ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on")
    }
    guard listening else {
      stopCapture(process)
      throw LabError("tcpdump did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }
    return process
  }

  /// SIGINT (tcpdump flushes and exits); `ip netns exec` has exec'd tcpdump, so this is its pid.
  static func stopCapture(_ process: Process) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGINT)
    process.waitUntilExit()
  }

  /// Polls `condition` every 100 ms for at most `seconds`; true if it held.
  static func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    repeat {
      if try condition() { return true }
      Thread.sleep(forTimeInterval: 0.1)
    } while Date() < deadline
    return try condition()
  }

  static func run(_ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String])
    throws -> Result
  {
    try ProcessRunner.run(
      executable, arguments, stdin: Array((stdin ?? "").utf8),
      environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
  }
}

/// A test case on a fresh three-host lab: up once per class, homes emptied before each
/// test, background processes ended after it.
class LabTestCase: XCTestCase {
  var background: [Background] = []

  /// The lab's hosts: a, b, c (a subclass may ask for more).
  class var hosts: [String] { ["a", "b", "c"] }

  override class func setUp() {
    super.setUp()
    if getuid() == 0 { try? Lab.up(hosts.count) }
  }

  override class func tearDown() {
    if getuid() == 0 { Lab.down() }
    super.tearDown()
  }

  override func setUpWithError() throws {
    try Lab.require()
    try Lab.ensureHealthy(Self.hosts.count)
    try Lab.resetHomes(Self.hosts)
  }

  override func tearDown() {
    for process in background { process.terminate() }
    background = []
    super.tearDown()
  }

  /// Starts memo-peer on a host in the background; it is ended after the test.
  func start(_ host: String, _ arguments: [String]) throws -> Background {
    let process = try Lab.start(host, arguments)
    background.append(process)
    return process
  }

  /// Runs memo-peer on a host and asserts it succeeded; returns its stdout.
  @discardableResult
  func ok(
    _ host: String, _ arguments: [String], stdin: String? = nil, file: StaticString = #filePath, line: UInt = #line
  ) throws -> String {
    let result = try Lab.exec(host, arguments, stdin: stdin)
    XCTAssertEqual(result.status, 0, "\(host) \(arguments): \(result.stderr)", file: file, line: line)
    return result.stdout
  }

  /// The six-digit code a pairing prompt shows.
  func code(in text: String) -> String? {
    guard let range = text.range(of: #"code:\s+(\d{3} \d{3})"#, options: .regularExpression) else { return nil }
    return String(text[range].suffix(7))
  }

  /// A JSON object a command printed (`--json`); empty when it is not one.
  func object(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
  }

  /// The host's device ID, as `memo-peer id` prints it.
  func deviceID(_ host: String) throws -> String {
    try ok(host, ["id"]).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// A person on `host` accepts every notebook invitation waiting there (`notebook
  /// invitations`, `notebook accept`): the ids accepted.
  @discardableResult
  func acceptInvitations(_ host: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
    let listed = object(try ok(host, ["notebook", "invitations", "--json"], file: file, line: line))
    let ids = (listed["invitations"] as? [[String: Any]] ?? []).compactMap { $0["notebook"] as? String }
    for id in ids { try ok(host, ["notebook", "accept", id], file: file, line: line) }
    return ids
  }
}

/// A memo-peer process running on a lab host.
final class Background {
  let process: Process
  let output: String

  init(process: Process, output: String) {
    self.process = process
    self.output = output
  }

  var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

  var jsonLines: [[String: Any]] {
    text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
  }

  /// SIGTERM (the process is memo-peer itself: `lab exec` and `ip netns exec` exec it), then
  /// the exit status.
  /// Waits at most `seconds` for the process to exit by itself; its status, or nil.
  func exitStatus(within seconds: Double) -> Int32? {
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    return process.isRunning ? nil : process.terminationStatus
  }

  @discardableResult
  func terminate() -> Int32 {
    if process.isRunning {
      kill(process.processIdentifier, SIGTERM)
      process.waitUntilExit()
    }
    return process.terminationStatus
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}

struct LabError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
