import XCTest

@testable import MemoCLI

final class ArgumentParserTests: XCTestCase {
  let options = [
    OptionSpec("title", short: "t", value: "TITLE", "title"), OptionSpec("tag", value: "TAG", repeatable: true, "tag"),
    OptionSpec("json", "json"),
  ]
  let positionals = [PositionalSpec(name: "ID", optional: true, help: "id")]

  func testParsesFlagsValuesAndPositionals() throws {
    let parsed = try ArgumentParser.parse(
      ["--title=A b", "--tag", "x", "--tag", "y", "--json", "abc"], options: options, positionals: positionals,
      command: "t")
    XCTAssertEqual(parsed.value("title"), "A b")
    XCTAssertEqual(parsed.all("tag"), ["x", "y"])
    XCTAssertTrue(parsed.has("json"))
    XCTAssertEqual(parsed.positionals, ["abc"])
    let short = try ArgumentParser.parse(
      ["-t", "T", "--", "--json"], options: options, positionals: positionals, command: "t")
    XCTAssertEqual(short.value("title"), "T")
    XCTAssertEqual(short.positionals, ["--json"])
    XCTAssertFalse(short.has("json"))
  }

  func testRejectsRepeatsOfSingleOptions() {
    XCTAssertThrowsError(
      try ArgumentParser.parse(["-t", "a", "--title", "b"], options: options, positionals: positionals, command: "t"))
  }

  func testSuggestionsUseTranspositions() {
    XCTAssertEqual(ArgumentParser.editDistance("lsit", "list"), 1)
    XCTAssertEqual(ArgumentParser.editDistance("", "abc"), 3)
    XCTAssertEqual(ArgumentParser.closest(to: "lsit", among: ["init", "list", "show"]), "list")
    XCTAssertEqual(ArgumentParser.closest(to: "exp", among: ["export", "import"]), "export")
    XCTAssertNil(ArgumentParser.closest(to: "zzzzzz", among: ["list", "show"]))
  }
}

final class EchoTests: XCTestCase {
  /// Words that may be memo text typed in the wrong place are never repeated in errors.
  func testOnlyOptionLikeWordsAreRepeated() throws {
    XCTAssertEqual(ArgumentParser.echo("--jsno"), "--jsno")
    XCTAssertEqual(ArgumentParser.echo("after-first-unlok"), "after-first-unlok")
    for text in ["--my secret plan", "Geheimnis ünd mehr", String(repeating: "a", count: 40), "-x\u{1B}[2J"] {
      XCTAssertFalse(ArgumentParser.echo(text).contains(text), text)
    }
    let cli = try CLIProcess()
    for arguments in [["new", "--Secret plan for Ana"], ["protect", "my passphrase is hunter2"], ["--Secret plan"]] {
      let result = try cli.run(arguments)
      XCTAssertEqual(result.status, 2, result.output)
      XCTAssertFalse(result.stderr.contains("plan for Ana") || result.stderr.contains("hunter2"), result.stderr)
      XCTAssertFalse(result.stderr.contains("Secret plan"), result.stderr)
    }
  }
}
