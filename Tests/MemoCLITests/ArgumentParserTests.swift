import XCTest

@testable import MemoCLI

final class ArgumentParserTests: XCTestCase {
  static let title = ValueOption("title", short: "t", value: "TITLE", "title")
  static let tag = RepeatedOption("tag", value: "TAG", "tag")
  static let json = Flag("json", "json")
  let options = [title.spec, tag.spec, json.spec]
  let positionals = [PositionalSpec(name: "ID", optional: true, help: "id")]

  func testParsesFlagsValuesAndPositionals() throws {
    let parsed = try ArgumentParser.parse(
      ["--title=A b", "--tag", "x", "--tag", "y", "--json", "abc"], options: options, positionals: positionals,
      command: "t")
    XCTAssertEqual(parsed[Self.title], "A b")
    XCTAssertEqual(parsed[Self.tag], ["x", "y"])
    XCTAssertTrue(parsed.has(Self.json))
    XCTAssertEqual(parsed.positionals, ["abc"])
    let short = try ArgumentParser.parse(
      ["-t", "T", "--", "--json"], options: options, positionals: positionals, command: "t")
    XCTAssertEqual(short[Self.title], "T")
    XCTAssertEqual(short[Self.tag], [])
    XCTAssertEqual(short.positionals, ["--json"])
    XCTAssertFalse(short.has(Self.json))
  }

  /// A parse knows which options its command declared, and as what: reading any other
  /// stops a debug build; this is the question it asks.
  func testParsedArgumentsKnowWhatTheCommandDeclared() throws {
    let parsed = try ArgumentParser.parse([], options: options, positionals: positionals, command: "t")
    XCTAssertTrue(parsed.declares(Self.title))
    XCTAssertTrue(parsed.declares(Self.json.withHelp("another command's words for it")))
    XCTAssertTrue(parsed.declares(CommonOptions.help))
    XCTAssertTrue(parsed.declares(CommonOptions.debug))
    XCTAssertFalse(parsed.declares(SharedOptions.notebook), "not declared")
    XCTAssertTrue(parsed.declares(SharedOptions.tag), "the same name and kind: the same option")
    XCTAssertFalse(parsed.declares(ValueOption("json", value: "X", "a flag read as a value")), "another kind")
    XCTAssertFalse(parsed.declares(ValueOption("tag", value: "TAG", "repeated read as single")), "another kind")
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
