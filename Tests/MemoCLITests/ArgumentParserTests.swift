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
