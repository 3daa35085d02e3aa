import Foundation
import MemoTestSupport
import XCTest

/// `export --format markdown` and `import --markdown`, as a user runs them.
final class MarkdownCLITests: XCTestCase {
  func mode(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
  }

  func memos(_ cli: CLIProcess) throws -> [[String: AnyHashable]] {
    try cli.listedIDs().map { id in
      let memo = try XCTUnwrap(try cli.json(["show", id])["memo"] as? [String: Any])
      var fields: [String: AnyHashable] = [:]
      for key in ["id", "title", "body", "tags", "created", "updated", "private", "revision"] {
        fields[key] = memo[key] as? AnyHashable
      }
      return fields
    }.sorted { ($0["id"] as? String ?? "") < ($1["id"] as? String ?? "") }
  }

  func testRoundTripIntoAFreshNodeAndPandocReadsEveryFile() throws {
    let a = try CLIProcess()
    _ = try a.new(
      "Milk, eggs\nbread \"quoted\" \\ back\n", ["--title", "Groceries: \"weekly\" — list", "--tag", "home"])
    _ = try a.new("---\nlooks: like front matter\n---\n#nottag\n", ["--private", "--tag", "a/b.c", "--tag", "x"])
    let third = try a.new("Third\nedited later")
    XCTAssertEqual(try a.run(["edit", third, "--title", "Third, changed"]).status, 0)
    let folder = a.home + "/export"
    let exported = try a.json(["export", "--format", "markdown", folder])
    XCTAssertEqual(exported["exported"] as? Int, 3)
    XCTAssertEqual(try mode(folder), 0o700)
    let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    XCTAssertEqual(files.count, 3)
    let pandoc = try RequiredTool.path("pandoc", package: "pandoc")
    for file in files {
      XCTAssertEqual(try mode(folder + "/" + file), 0o600, file)
      let result = try ProcessRunner.run(
        pandoc, ["-f", "markdown", "-t", "json", folder + "/" + file], environment: ["PATH": "/usr/bin:/bin"])
      XCTAssertEqual(result.status, 0, "\(file): \(result.stderr)")
      let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
      let meta = try XCTUnwrap(json["meta"] as? [String: Any])
      XCTAssertNotNil(meta["title"], "\(file): pandoc sees the title")
      XCTAssertNotNil(meta["id"], "\(file): pandoc sees the id")
    }
    let b = try CLIProcess()
    let imported = try b.json(["import", "--markdown", folder])
    XCTAssertEqual(imported["added"] as? Int, 3)
    XCTAssertEqual(try memos(b), try memos(a))
    XCTAssertEqual(
      try b.json(["import", "--markdown", folder])["unchanged"] as? Int, 3, "a second import adds nothing")
    XCTAssertEqual(try memos(b), try memos(a))
  }

  func testExportRefusesAFolderThatIsNotEmptyWithoutForce() throws {
    let cli = try CLIProcess()
    _ = try cli.new("One\nbody")
    let folder = cli.home + "/full"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try "keep me".write(toFile: folder + "/notes.txt", atomically: true, encoding: .utf8)
    let refused = try cli.run(["export", "--format", "markdown", folder])
    XCTAssertEqual(refused.status, 2)
    XCTAssertTrue(refused.stderr.contains("is not empty"), refused.stderr)
    XCTAssertTrue(refused.stderr.contains("--force"), refused.stderr)
    XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["notes.txt"])
    XCTAssertEqual(try cli.run(["export", "--format", "markdown", folder, "--force"]).status, 0)
    XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).count, 2)
    XCTAssertEqual(try mode(folder), 0o700)
    XCTAssertEqual(try cli.run(["export", "--format", "markdown"]).status, 2, "a folder is needed")
    XCTAssertEqual(try cli.run(["export", "--format", "pdf", folder]).status, 2)
  }

  /// Issue 40: one file a real vault holds that memo-peer refuses must not keep the others
  /// out. The valid files are imported, each refused one is listed (its name escaped for
  /// the terminal, never its text) and the exit status is 4; `--all-or-nothing` imports none.
  func testImportTakesTheValidFilesAndListsEachRefusedOne() throws {
    let cli = try CLIProcess()
    let folder = cli.home + "/in"
    try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
    try "# Good one\nText with #todo\n".write(toFile: folder + "/good.md", atomically: true, encoding: .utf8)
    let mtime = Date(timeIntervalSince1970: 1_700_000_000)
    try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: folder + "/good.md")
    try "plain text note\n".write(toFile: folder + "/sub/note.txt", atomically: true, encoding: .utf8)
    try "---\ntitle: \"Vault\\_note\"\ntags:\n  - kept\n---\nvault body\n".write(
      toFile: folder + "/vault.md", atomically: true, encoding: .utf8)
    let evil = folder + "/sub/evil\u{1B}[2J.md"
    try "---\ntitle: SECRET-TITLE\nmeta:\n  nested: SECRET\n---\nbody\n".write(
      toFile: evil, atomically: true, encoding: .utf8)

    let whole = try cli.run(["import", "--markdown", "--all-or-nothing", folder])
    XCTAssertEqual(whole.status, 4, whole.stderr)
    XCTAssertTrue(whole.stderr.contains("sub/evil\\x1b[2J.md: line 4: a value is a mapping"), whole.stderr)
    XCTAssertTrue(whole.stderr.contains("1 of 4 file(s) refused, so none was imported"), whole.stderr)
    XCTAssertTrue(whole.stdout.contains("imported nothing (--all-or-nothing)"), whole.stdout)
    XCTAssertFalse(whole.output.contains("SECRET"), whole.output)
    XCTAssertFalse(whole.output.contains("\u{1B}"), "the name is escaped")
    XCTAssertEqual(try cli.listedIDs(), [], "nothing was added")

    // --json lists the refused files too; the error itself goes to stderr.
    let json = try cli.run(["import", "--markdown", "--all-or-nothing", "--json", folder])
    XCTAssertEqual(json.status, 4, json.stderr)
    let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    XCTAssertEqual(object["added"] as? Int, 0)
    let refused = try XCTUnwrap(object["refused"] as? [[String: Any]])
    XCTAssertEqual(refused.count, 1)
    XCTAssertEqual(refused.first?["path"] as? String, evil, "exact in JSON")
    XCTAssertEqual(refused.first?["code"] as? String, "invalid-input")
    XCTAssertFalse(json.output.contains("SECRET"), json.output)

    let partial = try cli.run(["import", "--markdown", folder])
    XCTAssertEqual(partial.status, 4, partial.stderr)
    XCTAssertTrue(partial.stderr.contains("refused \(folder)/sub/evil\\x1b[2J.md: line 4"), partial.stderr)
    XCTAssertTrue(partial.stderr.contains("1 of 4 file(s) refused; the others were imported"), partial.stderr)
    XCTAssertTrue(partial.stdout.contains("imported 3 of 4 file(s): 3 added"), partial.stdout)
    XCTAssertFalse(partial.output.contains("SECRET"), partial.output)
    XCTAssertFalse(partial.output.contains("\u{1B}"), "the name is escaped")
    let listed = try XCTUnwrap(try cli.json(["list"])["memos"] as? [[String: Any]])
    XCTAssertEqual(listed.count, 3)
    let good = try XCTUnwrap(listed.first { $0["title"] as? String == "Good one" })
    XCTAssertEqual(good["tags"] as? [String], ["todo"])
    XCTAssertEqual(good["created"] as? String, "2023-11-14T22:13:20.000Z")
    XCTAssertTrue(listed.contains { $0["title"] as? String == "plain text note" })
    let vault = try XCTUnwrap(listed.first { $0["title"] as? String == "Vault\u{00A0}note" }, "\\_ is U+00A0")
    XCTAssertEqual(vault["tags"] as? [String], ["kept"])

    try FileManager.default.removeItem(atPath: evil)
    let evilPath = folder + "/sub/evil.md"

    // Too large, not UTF-8, and a memo the rules refuse are refused the same way (with
    // --all-or-nothing, so the files without an id are not added again as new memos).
    try Data(repeating: 0x61, count: 70_000).write(to: URL(fileURLWithPath: evilPath))
    XCTAssertEqual(try cli.run(["import", "--markdown", "--all-or-nothing", folder]).status, 4)
    try Data([0x61, 0xFF, 0x62]).write(to: URL(fileURLWithPath: evilPath))
    let utf8 = try cli.run(["import", "--markdown", "--all-or-nothing", folder])
    XCTAssertEqual(utf8.status, 4)
    XCTAssertTrue(utf8.stderr.contains("evil.md is not valid UTF-8"), utf8.stderr)
    try "---\ntitle: \(String(repeating: "x", count: 600))\n---\nbody\n".write(
      toFile: evilPath, atomically: true, encoding: .utf8)
    XCTAssertEqual(try cli.run(["import", "--markdown", "--all-or-nothing", folder]).status, 4, "a title too long")
    XCTAssertEqual(try cli.listedIDs().count, 3, "nothing more was added")
    XCTAssertEqual(try cli.run(["import", "--all-or-nothing", "a.mpa"]).status, 2, "only for --markdown")

    try FileManager.default.removeItem(atPath: evilPath)
    try Data([0x89, 0x50]).write(to: URL(fileURLWithPath: folder + "/picture.png"))
    try "hidden".write(toFile: folder + "/.hidden.md", atomically: true, encoding: .utf8)
    try FileManager.default.createSymbolicLink(atPath: folder + "/link.md", withDestinationPath: "/etc/passwd")
    let summary = try cli.json(["import", "--markdown", folder])
    XCTAssertEqual((summary["refused"] as? [Any])?.count, 0, "none refused")
    XCTAssertEqual(summary["ignored"] as? Int, 3, "the picture, the hidden file and the link")
    let named = try cli.run(["import", "--markdown", folder + "/picture.png"])
    XCTAssertEqual(named.status, 4)
    XCTAssertTrue(named.stderr.contains("is not a .md, .markdown or .txt file"), named.stderr)
    XCTAssertEqual(try cli.run(["import", "a.mpa", "b.mpa"]).status, 2, "one archive at a time")
  }
}
