import Foundation
import MemoCore
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// The canary audit of the issue: memos full of unique canaries, then every command at the
/// highest verbosity (`--debug`). No canary may appear on the stdout of a command that was
/// not asked to show it, on any stderr (where the logs go), in the raw bytes of the data,
/// key, state and config directories, of /tmp, /dev/shm and the runtime directory, or in
/// any process's /proc/PID/cmdline or environ while commands run.
///
/// `web` is audited while its API serves memo text (Tests/browser covers the browser's side:
/// its disk cache and request URLs).
///
/// This part needs no network: it covers every command on one machine (the network
/// commands only as far as they go without consent). LabTests/CanaryLabAuditTests covers
/// the advertisement, browsing, avahi-browse and a packet capture; send and sync join that
/// list when they exist.
final class CanaryAuditTests: XCTestCase {
  let canaries = Canaries()
  var findings: [String] = []
  var processScans = 0

  func testNoCanaryEscapesThroughAnyCommand() throws {
    // A second early, so a write in the second the audit starts is read.
    let started = Int(Date().timeIntervalSince1970) - 1
    let cli = try CLIProcess()
    let runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-audit-runtime")
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    cli.environment["XDG_RUNTIME_DIR"] = runtime
    // No D-Bus system bus: `doctor` must not reach any daemon of this machine.
    cli.environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(cli.home)/no-such-bus"
    let c = canaries

    // The memos. Tags go through argv here, in setup only: the user's own choice, and
    // these processes are gone before any /proc scan.
    let open = try cli.new("\(c[.publicTitle])\n\(c[.publicBody])", ["--tag", c[.publicTag]])
    let secret = try cli.new("\(c[.privateTitle])\n\(c[.privateBody])", ["--tag", c[.privateTag], "--private"])
    let spare = try cli.new("Spare memo\nfor edits")
    XCTAssertEqual(try cli.run(["edit", open, "--pin"]).status, 0)
    let archive = cli.home + "/audit.mpa"
    let (editor, editorReady, editorGo) = try waitingEditor(cli)
    let serveStatus = cli.home + "/node/state/serve.json"
    let titles: Set<Canaries.Kind> = [.publicTitle, .privateTitle, .publicTag, .privateTag]

    let unlocked: [AuditScenario] = [
      AuditScenario(["init"]), AuditScenario(["init", "--json"]),
      AuditScenario(["list"], mayShow: titles), AuditScenario(["list", "--json"], mayShow: titles),
      AuditScenario(["show", open], mayShow: [.publicTitle, .publicBody, .publicTag]),
      AuditScenario(["show", open, "--json"], mayShow: [.publicTitle, .publicBody, .publicTag]),
      AuditScenario(["show", secret, "--plain"], mayShow: [.privateTitle, .privateBody, .privateTag]),
      AuditScenario(["search", "--stdin"], stdin: c[.publicBody], mayShow: [.publicTitle, .publicTag]),
      AuditScenario(["search", "--stdin", "--json"], stdin: c[.privateBody], mayShow: [.privateTitle, .privateTag]),
      AuditScenario(["new"], stdin: "Audit memo\nplain text"),
      AuditScenario(["new", "--json"], stdin: "Another memo"),
      AuditScenario(["edit", spare, "--stdin"], stdin: "changed"),
      AuditScenario(["edit", spare, "--title", "Renamed", "--json"]),
      AuditScenario(
        ["edit", secret], status: 0,
        run: .inBackground(
          ready: { FileManager.default.fileExists(atPath: editorReady) },
          finish: { _ in _ = FileManager.default.createFile(atPath: editorGo, contents: nil) }),
        environment: ["EDITOR": editor]),
      AuditScenario(["edit", open, "--pin"]),
      AuditScenario(["export", "-o", archive, "--passphrase-fd", "0"], stdin: c[.archivePassphrase]),
      AuditScenario(["import", archive, "--passphrase-fd", "0"], stdin: c[.archivePassphrase]),
      AuditScenario(["delete", spare, "--yes"]),
      AuditScenario(["consent"]), AuditScenario(["consent", "status", "--json"]),
      AuditScenario(["browse", "--timeout", "1"], status: 11),
      AuditScenario(["consent", "deny"]),
      AuditScenario(["browse", "--timeout", "1", "--json"], status: 12),
      AuditScenario(
        ["serve"], status: 0,
        run: .inBackground(
          ready: { FileManager.default.fileExists(atPath: serveStatus) }, finish: AuditScenario.terminate)),
      AuditScenario(["status"]), AuditScenario(["status", "--json"]),
      AuditScenario(["doctor"], status: nil), AuditScenario(["doctor", "--json"], status: nil),
      AuditScenario(["widget"], mayShow: [.publicTitle]),
      AuditScenario(["widget", "--format", "i3blocks"], mayShow: [.publicTitle]),
      AuditScenario(["widget", "--format", "waybar"], mayShow: [.publicTitle, .publicTag]),
      AuditScenario(["widget", "--json"], mayShow: [.publicTitle, .publicTag]),
      AuditScenario(["protect", "complete", "--new-passphrase-fd", "0"], stdin: c[.passphrase]),
      AuditScenario(["protect"]), AuditScenario(["protect", "--json"]),
      AuditScenario(["help", "protect"]), AuditScenario(["--help"]),
      webScenario(cli, runtime: runtime, secret: secret, locked: false),
    ]
    let locked: [AuditScenario] = [
      AuditScenario(["lock"]), AuditScenario(["lock", "--json"]),
      AuditScenario(["list"], mayShow: [.publicTitle]), AuditScenario(["list", "--json"], mayShow: [.publicTitle]),
      AuditScenario(["show", open], status: 18), AuditScenario(["show", secret, "--json"], status: 18),
      AuditScenario(["search", "--stdin"], stdin: c[.publicBody], status: 18),
      AuditScenario(["edit", open, "--stdin"], stdin: "x", status: 18),
      AuditScenario(["export", "-o", archive + "2", "--passphrase-fd", "0"], stdin: c[.archivePassphrase], status: 18),
      AuditScenario(["widget"], mayShow: [.publicTitle]), AuditScenario(["widget", "--json"], mayShow: [.publicTitle]),
      AuditScenario(
        ["serve"], status: 0,
        run: .inBackground(
          ready: { (try? String(contentsOfFile: serveStatus, encoding: .utf8))?.contains("\"locked\"") ?? false },
          finish: AuditScenario.terminate)),
      AuditScenario(["status", "--json"]),
      webScenario(cli, runtime: runtime, secret: secret, locked: true),
      AuditScenario(["unlock", "--passphrase-fd", "0"], stdin: "not the passphrase", status: 5),
      AuditScenario(["unlock", "--passphrase-fd", "0"], stdin: c[.passphrase]),
      AuditScenario(["unlock"]),
      AuditScenario(["protect", "none", "--passphrase-fd", "0"], stdin: c[.passphrase]),
    ]
    for scenario in unlocked + locked { try audit(scenario, cli) }
    XCTAssertEqual(processScans, 5, "every background scenario scanned the processes")

    // Files: the node's directories, the runtime directory, /dev/shm and /tmp (which holds
    // the node's home and the archive).
    // The node's and the runtime directory whole; elsewhere what was written meanwhile.
    let whole = [cli.home + "/node", runtime]
    for root in whole + ["/dev/shm", NSTemporaryDirectory(), "/tmp"] {
      for (path, kinds) in LeakScanner.scanFiles(
        under: root, for: canaries, modifiedSince: whole.contains(root) ? nil : started)
      {
        findings.append("\(path) holds \(kinds.map(\.rawValue))")
      }
    }
    XCTAssertTrue(FileManager.default.fileExists(atPath: cli.home + "/node/data/memos.sqlite"))
    XCTAssertTrue(FileManager.default.fileExists(atPath: archive))
    scanProcesses("after every command")
    XCTAssertEqual(findings, [], findings.joined(separator: "\n"))
  }

  /// A test of the audit itself: a planted leak is found in each place the audit looks.
  func testTheScannersFindAPlantedCanary() throws {
    let directory = try PrivateFiles.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "memo-peer-audit-control")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try Data("x \(canaries[.privateBody]) y".utf8).write(to: URL(fileURLWithPath: directory + "/leak"))
    XCTAssertEqual(LeakScanner.scanFiles(under: directory, for: canaries).map(\.kinds), [[.privateBody]])
    let now = Int(Date().timeIntervalSince1970)
    XCTAssertEqual(
      LeakScanner.scanFiles(under: directory, for: canaries, modifiedSince: now - 5).map(\.kinds), [[.privateBody]],
      "a file written since the audit began is read")
    XCTAssertEqual(
      LeakScanner.scanFiles(under: directory, for: canaries, modifiedSince: now + 60).count, 0,
      "one written before it is not")
    let sleeper = Process()
    sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
    sleeper.arguments = ["30"]
    sleeper.environment = ["LEAK": canaries[.passphrase]]
    try sleeper.run()
    defer {
      sleeper.terminate()
      sleeper.waitUntilExit()
    }
    // The child may not have reached exec yet when run() returns: wait for it (bounded).
    let environ = "/proc/\(sleeper.processIdentifier)/environ"
    XCTAssertTrue(
      AuditScenario.waitUntil { LeakScanner.scanProcesses(for: canaries).contains { $0.path == environ } },
      "the scan finds a canary in a process's environment")
    XCTAssertGreaterThan(LeakScanner.readableProcessCount(), 1)
    let scenario = AuditScenario(["show"], mayShow: [.publicBody])
    XCTAssertEqual(scenario.findings(stdout: canaries[.publicBody], stderr: "", status: 0, canaries: canaries), [])
    XCTAssertEqual(
      scenario.findings(stdout: canaries[.privateBody], stderr: canaries[.publicBody], status: 0, canaries: canaries)
        .count, 2)
  }

  /// Killing `edit` while the editor runs still removes the editor's plain-text file.
  func testTerminatingEditStillRemovesTheEditorFile() throws {
    let cli = try CLIProcess()
    let runtime = try PrivateFiles.makeUniqueDirectory(in: "/dev/shm", prefix: "memo-peer-audit-runtime")
    defer { try? FileManager.default.removeItem(atPath: runtime) }
    cli.environment["XDG_RUNTIME_DIR"] = runtime
    let id = try cli.new("Kill test\n\(canaries[.privateBody])")
    let (editor, ready, _) = try waitingEditor(cli)
    let process = try start(["edit", id], cli, environment: ["EDITOR": editor])
    XCTAssertTrue(AuditScenario.waitUntil { FileManager.default.fileExists(atPath: ready) })
    XCTAssertFalse(LeakScanner.scanFiles(under: runtime, for: canaries).isEmpty, "the editor's file exists meanwhile")
    kill(process.process.processIdentifier, SIGTERM)
    process.process.waitUntilExit()
    XCTAssertEqual(process.process.terminationStatus, 9, process.output().stderr)
    XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runtime), [])
    XCTAssertTrue(try cli.run(["show", id]).stdout.contains(canaries[.privateBody]), "the memo is unchanged")
  }

  // MARK: - Running scenarios

  func audit(_ scenario: AuditScenario, _ cli: CLIProcess) throws {
    let arguments = ["--debug"] + scenario.arguments
    switch scenario.run {
    case .toCompletion:
      let result = try cli.run(
        arguments, stdin: scenario.stdin.map { Array($0.utf8) }, extraEnvironment: scenario.environment)
      findings += scenario.findings(
        stdout: result.stdout, stderr: result.stderr, status: result.status, canaries: canaries)
    case .inBackground(let ready, let finish):
      let running = try start(arguments, cli, stdin: scenario.stdin, environment: scenario.environment)
      if !AuditScenario.waitUntil(ready) { findings.append("`\(scenario.name)` never became ready") }
      scanProcesses("while `\(scenario.name)` runs")
      finish(running.process.processIdentifier)
      running.process.waitUntilExit()
      let output = running.output()
      findings += scenario.findings(
        stdout: output.stdout, stderr: output.stderr, status: running.process.terminationStatus, canaries: canaries)
    }
  }

  func scanProcesses(_ when: String) {
    processScans += 1
    for (path, kinds) in LeakScanner.scanProcesses(for: canaries) {
      findings.append("\(path) holds \(kinds.map(\.rawValue)) \(when)")
    }
  }

  /// A memo-peer started in the background, its output going to files removed afterwards.
  struct Running {
    let process: Process
    let out: String
    let err: String

    func output() -> (stdout: String, stderr: String) {
      defer {
        unlink(out)
        unlink(err)
      }
      return (
        (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
        (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
      )
    }
  }

  func start(_ arguments: [String], _ cli: CLIProcess, stdin: String? = nil, environment: [String: String] = [:]) throws
    -> Running
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    process.arguments = arguments
    process.environment = cli.environment.merging(environment) { $1 }
    let out = cli.home + "/bg-\(UUID().uuidString).out"
    let err = cli.home + "/bg-\(UUID().uuidString).err"
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: out)
    process.standardError = FileHandle(forWritingAtPath: err)
    let input = Pipe()
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    return Running(process: process, out: out, err: err)
  }

  /// An editor that says it is running, then waits (bounded) for the test to let it finish,
  /// leaving the memo as it was.
  func waitingEditor(_ cli: CLIProcess) throws -> (path: String, ready: String, go: String) {
    let ready = cli.home + "/editor-ready"
    let go = cli.home + "/editor-go"
    let path = try cli.script(
      "waiting-editor",
      """
      touch '\(ready)'
      i=0
      while [ ! -e '\(go)' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
      exit 0
      """)
    return (path, ready, go)
  }
}
