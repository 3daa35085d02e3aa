import Foundation
import MemoTestSupport
import XCTest

@testable import MemoCLI

/// The generated completions, driven by the real shells: bash through COMP_WORDS/COMP_CWORD
/// with the bash-completion package, fish through `complete -C`, zsh checked for syntax.
final class CompletionTests: XCTestCase {
  var cli: CLIProcess!
  var ids: [String] = []

  override func setUpWithError() throws {
    cli = try CLIProcess()
    ids = [
      try cli.new("Secret plan\nthe body text", ["--tag", "hidden"]), try cli.new("Groceries\nmilk", ["--private"]),
    ]
    let other = try CLIProcess()
    let device = try other.run(["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertEqual(try cli.run(["trust", "add", device, "--name", "desk"]).status, 0)
  }

  /// PATH with the memo-peer under test first, as the scripts call `memo-peer`.
  var environment: [String: String] {
    cli.environment.merging(["PATH": (CLIProcess.binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin"]) {
      $1
    }
  }

  func script(_ shell: String) throws -> String {
    let result = try cli.run(["completions", shell])
    XCTAssertEqual(result.status, 0, result.stderr)
    let path = cli.home + "/completion." + shell
    try result.stdout.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// What bash offers for `words` (the last one is the word being completed).
  func bash(_ words: [String]) throws -> [String] {
    let bash = try RequiredTool.path("bash", package: "bash")
    let framework = try RequiredTool.file(
      "/usr/share/bash-completion/bash_completion", package: "bash-completion")
    let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    let driver = """
      source \(framework)
      source \(try script("bash"))
      COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
      COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
      _memo_peer memo-peer "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
      printf '%s\\n' "${COMPREPLY[@]}"
      """
    let result = try ProcessRunner.run(bash, ["--norc", "-c", driver], environment: environment)
    XCTAssertEqual(result.status, 0, result.stderr)
    XCTAssertEqual(result.stderr, "")
    return result.stdout.split(separator: "\n").map(String.init).sorted()
  }

  func testBashCompletesCommandsOptionsAndValues() throws {
    let short = ids.map { String($0.prefix(8)) }.sorted()
    XCTAssertEqual(try bash(["memo-peer", "sh"]), ["show"])
    XCTAssertEqual(try bash(["memo-peer", "--debug", "wid"]), ["widget"])
    XCTAssertTrue(try bash(["memo-peer", ""]).contains("completions"))
    XCTAssertEqual(try bash(["memo-peer", "new", "--t"]), ["--tag", "--title"])
    XCTAssertEqual(try bash(["memo-peer", "show", ""]), short)
    XCTAssertEqual(try bash(["memo-peer", "edit", "--title", "x", ""]), short, "an option's value is not a positional")
    XCTAssertEqual(try bash(["memo-peer", "show", short[0], ""]), [], "show takes one ID")
    XCTAssertEqual(try bash(["memo-peer", "send", short[0], "--to", ""]), ["desk"])
    XCTAssertEqual(try bash(["memo-peer", "sync", "--peer=d"]), ["desk"])
    XCTAssertEqual(try bash(["memo-peer", "consent", "g"]), ["grant"])
    XCTAssertEqual(
      try bash(["memo-peer", "consent", "grant", "--scope", ""]),
      ["all-service-types", "background-sync", "local-network"])
    XCTAssertEqual(try bash(["memo-peer", "trust", "rename", ""]), ["desk"])
    XCTAssertEqual(try bash(["memo-peer", "help", "comp"]), ["completions"])
    XCTAssertEqual(try bash(["memo-peer", "widget", "--format", "w"]), ["waybar"])
    XCTAssertEqual(try bash(["memo-peer", "completions", ""]), ["bash", "fish", "zsh"])
  }

  /// Ids and names only: nothing of a memo's title, tags or body, locked or not.
  func testValuesNeverCarryMemoContent() throws {
    let values = try cli.run(["completions", "--values", "memo-ids"])
    XCTAssertEqual(values.status, 0, values.stderr)
    XCTAssertEqual(values.stdout.split(separator: "\n").sorted(), ids.map { $0.prefix(8) }.sorted())
    let prefixed = try cli.run(["completions", "--values", "memo-ids", "--prefix", String(ids[0].prefix(3))])
    XCTAssertTrue(prefixed.stdout.hasPrefix(String(ids[0].prefix(8))), prefixed.stdout)
    XCTAssertEqual(try cli.run(["completions", "--values", "memo-ids", "--prefix", "zz not hex"]).stdout, "")
    XCTAssertEqual(try cli.run(["completions", "--values", "peers"]).stdout, "desk\n")
    for text in ["Secret", "body", "hidden", "Groceries", "milk"] {
      XCTAssertFalse((try bash(["memo-peer", "show", ""])).joined().contains(text))
      XCTAssertFalse(values.stdout.contains(text))
    }
    let fresh = try CLIProcess()
    XCTAssertEqual(try fresh.run(["completions", "--values", "memo-ids"]).stdout, "")
    XCTAssertFalse(FileManager.default.fileExists(atPath: fresh.dataDirectory), "completion creates no node")
    let bad = try cli.run(["completions", "--values", "memo-id"])
    XCTAssertEqual(bad.status, 2)
    XCTAssertTrue(bad.stderr.contains("did you mean memo-ids?"), bad.stderr)
  }

  func testShortestUniquePrefixes() {
    XCTAssertEqual(
      CompletionValues.shortestUnique(["abcdef0123", "abcdef0199", "12345678aa"]),
      ["abcdef012", "abcdef019", "12345678"])
  }

  func testFishCompletesCommandsOptionsAndValues() throws {
    let fish = try RequiredTool.path("fish", package: "fish")
    let path = try script("fish")
    func complete(_ line: String) throws -> [String] {
      let result = try ProcessRunner.run(
        fish, ["--no-config", "-c", "source \(path); complete -C '\(line)'"], environment: environment)
      XCTAssertEqual(result.status, 0, result.stderr)
      return result.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }.sorted()
    }
    XCTAssertEqual(try complete("memo-peer sh"), ["show"])
    XCTAssertEqual(try complete("memo-peer show "), ids.map { String($0.prefix(8)) }.sorted())
    XCTAssertEqual(try complete("memo-peer send --to "), ["desk"])
    XCTAssertEqual(try complete("memo-peer consent "), ["deny", "grant", "revoke", "status"])
    XCTAssertEqual(try complete("memo-peer trust rename "), ["desk"])
    XCTAssertEqual(try complete("memo-peer new --ti"), ["--title"])
  }

  func testZshScriptParses() throws {
    let zsh = try RequiredTool.path("zsh", package: "zsh")
    let result = try ProcessRunner.run(zsh, ["-n", try script("zsh")], environment: environment)
    XCTAssertEqual(result.status, 0, result.stderr)
    XCTAssertTrue(try String(contentsOfFile: try script("zsh"), encoding: .utf8).hasPrefix("#compdef memo-peer\n"))
  }
}
