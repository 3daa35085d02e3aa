import Foundation
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// The command line's rough edges: the right limit and hint per use of stdin, output that
/// cannot be written, empty input, a mistyped MEMO_PEER_HOME, an empty list on a terminal,
/// and id prefixes too short to be sure of.
final class CLIEdgeTests: XCTestCase {
  func testEachUseOfStdinHasItsOwnLimitAndHint() throws {
    let cli = try CLIProcess()
    let search = try cli.run(["search", "--stdin"], stdin: Array(repeating: 0x61, count: 5000))
    XCTAssertEqual(search.status, 4)
    XCTAssertTrue(search.stderr.contains("4096 bytes"), search.stderr)
    XCTAssertFalse(search.stderr.contains("64 KiB") || search.stderr.contains("several memos"), search.stderr)
    let new = try cli.run(["new"], stdin: Array(repeating: 0x61, count: 70_000))
    XCTAssertEqual(new.status, 4)
    XCTAssertTrue(new.stderr.contains("65536 bytes (64 KiB)") && new.stderr.contains("several memos"), new.stderr)
  }

  func testOutputThatCannotBeWrittenIsAFailure() throws {
    let cli = try CLIProcess()
    let id = try cli.new("Milk and eggs\n")
    for arguments in [["list"], ["show", id], ["list", "--json"], ["search", "milk"], ["search", "--json", "milk"]] {
      let result = try cli.run(
        executable: "/bin/sh", ["-c", "exec \"$0\" \"$@\" > /dev/full", CLIProcess.binary] + arguments, stdin: nil)
      XCTAssertEqual(result.status, 7, "\(arguments): \(result.stderr)")
      XCTAssertTrue(result.stderr.contains("cannot write the output to stdout"), result.stderr)
    }
    // A reader that stops early (`| head`) is not a failure.
    for _ in 0..<3 { _ = try cli.new("Another memo\n") }
    let early = try cli.run(
      executable: "/bin/bash", ["-c", "set -o pipefail; \"$0\" list | head -c 1 > /dev/null", CLIProcess.binary],
      stdin: nil)
    XCTAssertEqual(early.status, 0, early.stderr)
    let earlyJSON = try cli.run(
      executable: "/bin/bash",
      ["-c", "set -o pipefail; \"$0\" list --json | head -c 1 > /dev/null", CLIProcess.binary], stdin: nil)
    XCTAssertEqual(earlyJSON.status, 0, earlyJSON.stderr)
  }

  func testEmptyInputIsRefusedUnlessAllowed() throws {
    let cli = try CLIProcess()
    for stdin in ["", "  \n\n"] {
      let refused = try cli.run(["new"], stdin: Array(stdin.utf8))
      XCTAssertEqual(refused.status, 4, refused.stderr)
      XCTAssertTrue(refused.stderr.contains("stdin is empty") && refused.stderr.contains("--allow-empty"))
    }
    XCTAssertEqual(try cli.listedIDs(), [], "no memo was made")
    let titled = try cli.run(["new", "--title", "Just a title", "--allow-empty"], stdin: [])
    XCTAssertEqual(titled.status, 0, titled.stderr)
    let id = try cli.new("Keep this text\n")
    let emptied = try cli.run(["edit", id, "--stdin"], stdin: [])
    XCTAssertEqual(emptied.status, 4, emptied.stderr)
    XCTAssertEqual(
      try cli.json(["show", id])["memo"].flatMap { ($0 as? [String: Any])?["body"] as? String }, "Keep this text\n")
    XCTAssertEqual(try cli.run(["edit", id, "--stdin", "--allow-empty", "--title", "Empty now"], stdin: []).status, 0)
  }

  /// `new`, `edit --stdin` and `send -` each refuse empty input with their own hint: only
  /// the two that take `--allow-empty` offer it, each names itself and no other command,
  /// and nothing is saved or queued. Input over the limit gets each one's own hint too.
  func testEmptyInputGetsEachCommandsOwnHint() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["trust", "add", DeliveryCommandTests.peerID, "--name", "bee"]).status, 0)
    let id = try cli.new("Keep this text\n")
    let cases: [(arguments: [String], hint: String, takesAllowEmpty: Bool, tooLarge: String)] = [
      (["new"], "echo 'text' | memo-peer new), or pass --allow-empty", true, "split it into several memos"),
      (
        ["edit", id, "--stdin"], "echo 'text' | memo-peer edit ID --stdin), or pass --allow-empty", true,
        "keep the body under the limit"
      ),
      (["send", "-", "--to", "bee"], "echo 'text' | memo-peer send - --to PEER)", false, "send each"),
    ]
    for (arguments, hint, takesAllowEmpty, tooLarge) in cases {
      let named = "memo-peer " + arguments[0]
      for stdin in ["", " \n\t\n"] {
        let result = try cli.run(arguments, stdin: Array(stdin.utf8))
        XCTAssertEqual(result.status, 4, "\(arguments): \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("stdin is empty"), result.stderr)
        XCTAssertTrue(result.stderr.contains(hint), "\(arguments): \(result.stderr)")
        XCTAssertEqual(result.stderr.contains("--allow-empty"), takesAllowEmpty, "\(arguments): \(result.stderr)")
        for other in ["memo-peer new", "memo-peer edit", "memo-peer send"] where other != named {
          XCTAssertFalse(result.stderr.contains(other), "\(arguments) names \(other): \(result.stderr)")
        }
      }
      let large = try cli.run(arguments, stdin: Array(repeating: 0x61, count: 70_000))
      XCTAssertEqual(large.status, 4, "\(arguments): \(large.stderr)")
      XCTAssertTrue(
        large.stderr.contains("65536 bytes (64 KiB)") && large.stderr.contains(tooLarge),
        "\(arguments): \(large.stderr)")
    }
    XCTAssertEqual(try cli.listedIDs().count, 1, "no memo was made")
    XCTAssertEqual(
      try cli.json(["show", id])["memo"].flatMap { ($0 as? [String: Any])?["body"] as? String }, "Keep this text\n")
    XCTAssertEqual((try cli.json(["outbox"])["entries"] as? [Any])?.count, 0, "nothing was queued")
    XCTAssertNotEqual(try cli.run(["send", "-", "--to", "bee", "--allow-empty"], stdin: []).status, 0)
  }

  func testAMistypedHomeIsRefusedUnlessInit() throws {
    let cli = try CLIProcess()
    let missing = cli.home + "/nodd"
    for arguments in [["list"], ["new"], ["status"], ["consent", "status"]] {
      let result = try cli.run(arguments, stdin: Array("text\n".utf8), extraEnvironment: ["MEMO_PEER_HOME": missing])
      XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
      XCTAssertTrue(result.stderr.contains("does not exist") && result.stderr.contains("memo-peer init"), result.stderr)
      XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "no node was made by \(arguments)")
    }
    XCTAssertEqual(try cli.run(["init"], extraEnvironment: ["MEMO_PEER_HOME": missing]).status, 0)
    XCTAssertEqual(try cli.run(["list"], extraEnvironment: ["MEMO_PEER_HOME": missing]).status, 0)
  }

  func testAnEmptyListSaysSoOnATerminalOnly() throws {
    let cli = try CLIProcess()
    let piped = try cli.run(["list"])
    XCTAssertEqual(piped.status, 0)
    XCTAssertEqual(piped.stdout, "", "a script counting lines gets none")
    let terminal = try cli.run(
      executable: "/usr/bin/script", ["-qec", "\(CLIProcess.binary) list", "/dev/null"], stdin: nil,
      extraEnvironment: ["TERM": "xterm"])
    XCTAssertEqual(terminal.status, 0, terminal.stderr)
    XCTAssertTrue(terminal.stdout.contains("No memos yet"), terminal.stdout)
  }

  func testPrefixesShorterThanFourCharactersAreRefused() throws {
    let cli = try CLIProcess()
    let id = try cli.new("Only memo\n")
    for length in 1...3 {
      let result = try cli.run(["show", String(id.prefix(length))])
      XCTAssertEqual(result.status, 3, result.stderr)
      XCTAssertTrue(result.stderr.contains("at least 4 characters"), result.stderr)
      XCTAssertEqual(try cli.run(["delete", String(id.prefix(length)), "--yes"]).status, 3)
    }
    let four = try cli.run(["show", String(id.prefix(4))])
    XCTAssertEqual(four.status, 0, four.stderr)
    XCTAssertTrue(four.stdout.contains("Only memo"), four.stdout)
    XCTAssertEqual(try cli.listedIDs(), [id], "nothing was deleted")
  }
}
