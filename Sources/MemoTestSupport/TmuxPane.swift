import Foundation
import XCTest

/// A real terminal for tests: an interactive bash in a tmux pane on a private tmux server
/// (its own socket, so no other tmux is touched), killed when the test ends. Shared by the
/// privacy-screen tests and the lab's terminal-safety tests.
public final class TmuxPane {
  public static let tmux = "/usr/bin/tmux"
  let socket = "memo-peer-test-\(UUID().uuidString.prefix(8))"
  let session = "privacy"

  /// tmux (Debian package tmux, installed by scripts/deps.sh). Under CI=true its absence fails.
  public static func require() throws {
    guard FileManager.default.isExecutableFile(atPath: tmux) else {
      if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("tmux is missing (scripts/deps.sh installs it); CI=true requires the terminal tests")
      }
      throw XCTSkip("tmux is missing: run `make deps`")
    }
  }

  /// Starts bash (no rc files, job control on) with `environment`, 80×24.
  public init(environment: [String: String]) throws {
    var variables = environment
    variables["TERM"] = "xterm-256color"
    variables["PS1"] = "PROMPT$ "
    variables["HISTFILE"] = ""
    let assignments = variables.map { "\($0.key)=\(Self.quoted($0.value))" }.sorted().joined(separator: " ")
    let shell = "env -i \(assignments) /bin/bash --norc --noprofile -i"
    // The tmux server outlives this call; started directly it would inherit the descriptor
    // Foundation watches for the client's exit and keep the test waiting forever, so a
    // shell closes every descriptor above 2 first.
    let closeInherited =
      "for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""
    let started = try ProcessRunner.run(
      "/bin/bash",
      [
        "-c", closeInherited, "tmux", Self.tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", session,
        "-x", "80", "-y", "24", shell,
      ],
      environment: ["PATH": "/usr/bin:/bin"])
    guard started.status == 0 else { throw TmuxError("tmux new-session failed: \(started.output)") }
    guard waitFor({ $0.contains("PROMPT$") }) else { throw TmuxError("the shell did not start: \(screen())") }
  }

  deinit { _ = try? tmux(["kill-server"]) }

  @discardableResult
  public func tmux(_ arguments: [String]) throws -> ProcessOutput {
    try ProcessRunner.run(Self.tmux, ["-L", socket] + arguments, environment: ["PATH": "/usr/bin:/bin"])
  }

  /// Types `text` and Enter.
  public func type(_ text: String) throws {
    try tmux(["send-keys", "-t", session, "-l", text])
    try keys("Enter")
  }

  /// Sends tmux key names (`C-z`, `Enter`, `q`).
  public func keys(_ names: String...) throws { try tmux(["send-keys", "-t", session] + names) }

  /// Sends raw bytes, as the terminal would (focus reports: `1b 5b 4f`).
  public func bytes(_ hex: [String]) throws { try tmux(["send-keys", "-t", session, "-H"] + hex) }

  /// What the pane shows now.
  public func screen() -> String { (try? tmux(["capture-pane", "-p", "-t", session]).stdout) ?? "" }

  /// The pane and its whole scrollback (`capture-pane -S -`).
  public func history() -> String { (try? tmux(["capture-pane", "-p", "-S", "-", "-t", session]).stdout) ?? "" }

  /// Polls the screen every 100 ms, for at most 15 s, until `condition` holds. The bound
  /// only keeps a broken build from hanging; the tests assert what is shown, not how fast.
  public func waitFor(_ condition: (String) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(15)
    repeat {
      if condition(screen()) { return true }
      Thread.sleep(forTimeInterval: 0.1)
    } while Date() < deadline
    return condition(screen())
  }

  /// The pane and its whole scrollback with wrapped lines joined and attributes as escape
  /// sequences (`capture-pane -p -e -J -S -`): what a person saw, including any colour or
  /// hiding an escape sequence turned on.
  public func historyWithAttributes() -> String {
    (try? tmux(["capture-pane", "-p", "-e", "-J", "-S", "-", "-t", session]).stdout) ?? ""
  }

  /// From now on, every byte programs write to the pane is appended to `file`, raw
  /// (`pipe-pane -o`): escape sequences and carriage returns included, before the terminal
  /// acts on them.
  public func recordOutput(to file: String) throws {
    try tmux(["pipe-pane", "-o", "-t", session, "cat >> " + Self.quoted(file)])
  }

  public static func quoted(_ value: String) -> String {
    "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }
}

public struct TmuxError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}
