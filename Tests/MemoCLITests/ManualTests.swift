import Foundation
import MemoCore
import MemoTestSupport
import XCTest

@testable import MemoCLI

/// memo-peer(1) and docs/CLI.md are checked against the command table that makes `--help`.
final class ManualTests: XCTestCase {
  static let cliDoc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("docs/CLI.md").path

  func manPage(_ cli: CLIProcess) throws -> String {
    let result = try cli.run(["help", "--man"], extraEnvironment: ["SOURCE_DATE_EPOCH": "1764547200"])
    XCTAssertEqual(result.status, 0, result.stderr)
    return result.stdout
  }

  /// The page as a person reads it (groff's plain-text rendering, no overstriking).
  func rendered(_ roff: String) throws -> String {
    let groff = try RequiredTool.path("groff", package: "groff")
    let result = try ProcessRunner.run(
      groff, ["-man", "-Tutf8", "-P-cbou", "-rLL=200n"], stdin: Array(roff.utf8), environment: ["PATH": "/usr/bin:/bin"]
    )
    XCTAssertEqual(result.status, 0, result.stderr)
    return result.stdout.replacingOccurrences(of: "\u{2010}", with: "-").replacingOccurrences(of: "\u{2212}", with: "-")
  }

  func testGroffFindsNoWarning() throws {
    let groff = try RequiredTool.path("groff", package: "groff")
    let page = try manPage(try CLIProcess())
    for device in [[], ["-Tutf8"], ["-Tascii"]] {
      let result = try ProcessRunner.run(
        groff, ["-man", "-ww", "-z"] + device, stdin: Array(page.utf8), environment: ["PATH": "/usr/bin:/bin"])
      XCTAssertEqual(result.status, 0, "\(device): \(result.stderr)")
      XCTAssertEqual(result.stderr, "", "\(device): groff warned")
    }
    XCTAssertTrue(page.hasPrefix(".TH MEMO\\-PEER 1 \"2025-12-01\" \"memo\\-peer \(MemoPeerCLI.version)\""), page)
  }

  /// The sections of the rendered page, by command name.
  func commandSections(_ text: String) -> [String: String] {
    var sections: [String: String] = [:]
    var current: String?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("   memo-peer "), !line.hasPrefix("    ") {
        current = line.dropFirst(13).split(separator: " ").first.map(String.init)
      } else if !line.hasPrefix(" ") && !line.isEmpty {
        current = nil  // the next top-level section
      }
      if let current { sections[current, default: ""] += line + "\n" }
    }
    return sections
  }

  /// What the table has and the rendered page lacks: commands, options, statuses, variables.
  func missing(from text: String, commands: [Command]) -> [String] {
    let sections = commandSections(text)
    var missing: [String] = []
    for command in commands {
      guard let section = sections[command.name] else {
        missing.append(command.name)
        continue
      }
      // An option's own item starts a line (a mention in the prose does not count).
      for option in command.options {
        let item = "\n       " + (option.short.map { "-\($0), " } ?? "") + "--" + option.name
        if !section.contains(item + " ") && !section.contains(item + "\n") {
          missing.append("\(command.name) --\(option.name)")
        }
      }
      for positional in command.positionals where !section.contains(positional.name) {
        missing.append("\(command.name) \(positional.name)")
      }
    }
    for option in ArgumentParser.common where !text.contains("--" + option.name) { missing.append("--" + option.name) }
    for status in Manual.exitStatuses where !text.contains("\n       \(status.status)") {
      missing.append("exit status \(status.status)")
    }
    for variable in Manual.environment where !text.contains(variable.name) { missing.append(variable.name) }
    for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"] where !text.contains("\n" + section)
    {
      missing.append(section)
    }
    return missing
  }

  func testEveryCommandAndOptionOfTheTableIsInTheManPage() throws {
    let text = try rendered(try manPage(try CLIProcess()))
    XCTAssertEqual(missing(from: text, commands: MemoPeerCLI.commands), [])
    XCTAssertTrue(text.contains("avahi-daemon(8)"), "SEE ALSO names avahi-daemon(8)")
    XCTAssertTrue(text.contains("memo-peer.service"), "SEE ALSO names the unit")
  }

  /// The check above can fail: a page written from a table without one option and one
  /// command is caught.
  func testTheCheckCatchesAnOptionMissingFromThePage() throws {
    var table = MemoPeerCLI.commands.filter { $0.name != "peers" }
    let show = table.firstIndex { $0.name == "show" }!
    let full = table[show]
    table[show] = Command(
      name: full.name, summary: full.summary, details: full.details,
      options: full.options.filter { $0.name != "plain" },
      positionals: full.positionals, run: full.run)
    let text = try rendered(ManPage.render(commands: table, version: "0", date: "2025-01-01"))
    XCTAssertEqual(missing(from: text, commands: MemoPeerCLI.commands), ["show --plain", "peers"])
  }

  /// Every error code's exit status is documented, and statuses agree with MemoPeerError.
  func testEveryExitStatusIsDocumented() {
    let documented = Set(Manual.exitStatuses.map(\.status))
    for code in MemoPeerError.Code.allCases {
      XCTAssertTrue(documented.contains(MemoPeerError(code, "").exitStatus), code.rawValue)
    }
    XCTAssertEqual(Manual.exitStatuses.first { $0.status == 18 }?.codes, ["locked"])
  }

  /// docs/CLI.md has a row for every command naming each of its options, and names no
  /// option a command does not have.
  func testCLIDocAgreesWithTheTable() throws {
    let doc = try String(contentsOfFile: Self.cliDoc, encoding: .utf8)
    let rows = doc.split(separator: "\n").filter { $0.hasPrefix("| `") }
    for command in MemoPeerCLI.commands {
      let mine = rows.filter { $0.hasPrefix("| `\(command.name) ") || $0.hasPrefix("| `\(command.name)`") }
        .map { String($0.replacingOccurrences(of: "\\|", with: "/").split(separator: "|").first ?? "") }
      XCTAssertFalse(mine.isEmpty, "docs/CLI.md has no row for \(command.name)")
      let usage = mine.joined(separator: " ")
      for option in command.options where !usage.contains("--" + option.name) {
        XCTFail("docs/CLI.md: \(command.name) lacks --\(option.name)")
      }
      let known = Set(command.options.map(\.name) + ArgumentParser.common.map(\.name))
      let mentioned = usage.matches(of: /--([a-z][a-z-]*)/).map { String($0.1) }
      for name in mentioned where !known.contains(name) {
        XCTFail("docs/CLI.md: \(command.name) has no option --\(name)")
      }
    }
  }
}
