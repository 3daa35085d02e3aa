import Foundation
import XCTest

/// Errors made below the application layer carry a `Remedy`, never a `memo-peer` command: the
/// command line and the page word the remedy each for its reader (issue 40). This reads the
/// sources of every module below MemoApp and fails on a command quoted in an error.
final class ErrorWordsBelowAppTests: XCTestCase {
  static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Sources")

  /// The targets at or above the application layer (they word errors for a reader), and the
  /// ones that are no part of the node's layers. Every other Swift module is below, new ones too.
  static let wordingTargets: Set<String> = [
    "MemoApp", "MemoWeb", "MemoWebApp", "MemoCLI", "memo-peer", "memo-peer-bench", "MemoTestSupport",
  ]

  /// What a quoted command looks like in a message or a hint.
  static let command = "`memo-peer "

  func testNoErrorBelowTheApplicationLayerNamesACommand() throws {
    var calls = 0
    var found: [String] = []
    for file in try Self.filesBelowApp() {
      let source = Self.withoutCommentLines(try String(contentsOf: file, encoding: .utf8))
      let spans = Self.errorSpans(source)
      calls += spans.count
      let hints = source.split(separator: "\n").filter { $0.contains("hint") }.map(String.init)
      for text in spans + hints where text.contains(Self.command) {
        found.append("\(file.lastPathComponent): \(text.prefix(160))")
      }
    }
    XCTAssertGreaterThan(calls, 200, "the scan found the errors it is meant to read")
    XCTAssertEqual(found, [], "errors below MemoApp carry a Remedy instead of a command")
  }

  /// The scan itself finds a command in a call over several lines, and in a hint set apart.
  func testTheScanFindsACommandInAnError() {
    let source = Self.withoutCommentLines(
      """
      // MemoPeerError(.io, "`memo-peer doctor` in a comment")
      throw MemoPeerError(
        .io, "a (parenthesised) message",
        hint: "first "
          + "`memo-peer doctor` then")
      hint = "see `memo-peer --debug`"
      """)
    let spans = Self.errorSpans(source)
    XCTAssertEqual(spans.count, 1)
    XCTAssertTrue(spans[0].contains(Self.command) && spans[0].hasSuffix("then\")"), spans[0])
    XCTAssertFalse(source.contains("in a comment"))
  }

  static func filesBelowApp() throws -> [URL] {
    let manager = FileManager.default
    let targets = try manager.contentsOfDirectory(atPath: sources.path).filter {
      !wordingTargets.contains($0) && !($0.hasPrefix("C") && $0.dropFirst().first?.isUppercase == true)
    }
    XCTAssertTrue(targets.contains("MemoStore") && targets.contains("MemoCore"), "\(targets)")
    return targets.flatMap { target -> [URL] in
      let root = sources.appendingPathComponent(target)
      let paths = manager.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
      return paths.filter { $0.hasSuffix(".swift") }.map { root.appendingPathComponent($0) }
    }
  }

  static func withoutCommentLines(_ source: String) -> String {
    source.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
  }

  /// The text of each `MemoPeerError(…)` call, to its closing parenthesis.
  static func errorSpans(_ source: String) -> [String] {
    let text = Array(source)
    let opener = Array("MemoPeerError(")
    var spans: [String] = []
    var index = 0
    while index + opener.count <= text.count {
      guard Array(text[index..<index + opener.count]) == opener else {
        index += 1
        continue
      }
      var depth = 0
      var end = index + opener.count - 1
      repeat {
        if text[end] == "(" { depth += 1 } else if text[end] == ")" { depth -= 1 }
        end += 1
      } while depth > 0 && end < text.count
      spans.append(String(text[index..<end]))
      index += opener.count
    }
    return spans
  }
}
