import Foundation

/// One command of a canary audit and what it may print. Audits are lists of these, so a
/// new command (send and sync, when they exist) is one more entry.
public struct AuditScenario: Sendable {
  /// How a long-running command is audited while it runs.
  public enum Run: Sendable {
    /// Runs to its end.
    case toCompletion
    /// Started; once `ready` holds (bounded wait) every process's /proc entries are
    /// scanned; then `finish` ends it (by default SIGTERM).
    case inBackground(ready: @Sendable () -> Bool, finish: @Sendable (Int32) -> Void)
  }

  public let arguments: [String]
  public var stdin: String?
  /// Canaries this command was asked to show. They may appear on stdout only; stderr (where
  /// `--debug` logs go) must never hold any.
  public var mayShow: Set<Canaries.Kind>
  /// nil: any exit status is fine (the audit is about what is printed).
  public var expectedStatus: Int32?
  public var run: Run
  public var environment: [String: String]

  public init(
    _ arguments: [String], stdin: String? = nil, mayShow: Set<Canaries.Kind> = [], status: Int32? = 0,
    run: Run = .toCompletion, environment: [String: String] = [:]
  ) {
    self.arguments = arguments
    self.stdin = stdin
    self.mayShow = mayShow
    self.expectedStatus = status
    self.run = run
    self.environment = environment
  }

  public var name: String { arguments.joined(separator: " ") }

  /// SIGTERM, the way a service manager stops memo-peer.
  public static let terminate: @Sendable (Int32) -> Void = { pid in kill(pid, SIGTERM) }

  /// Checks one finished command's output; returns what leaked, as readable findings.
  public func findings(stdout: String, stderr: String, status: Int32, canaries: Canaries) -> [String] {
    var findings: [String] = []
    if let expectedStatus, status != expectedStatus {
      findings.append("`\(name)` exited \(status), expected \(expectedStatus): \(stderr.prefix(300))")
    }
    let out = canaries.found(in: stdout, allowing: mayShow)
    if !out.isEmpty { findings.append("`\(name)` printed \(out.map(\.rawValue)) on stdout") }
    let err = canaries.found(in: stderr)
    if !err.isEmpty { findings.append("`\(name)` printed \(err.map(\.rawValue)) on stderr") }
    return findings
  }

  /// Polls `condition` every 100 ms for at most `seconds` (a bound against hanging, not a
  /// timing assertion).
  public static func waitUntil(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      Thread.sleep(forTimeInterval: 0.1)
    }
    return condition()
  }
}
