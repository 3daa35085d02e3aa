import Foundation
import MemoApp
import MemoCore
import MemoPresentation
import MemoSystem
import XCTest

@testable import MemoStore

final class CLIUsageTests: XCTestCase {
  static let commands = [
    "init", "new", "list", "show", "edit", "delete", "search", "export", "import", "protect", "unlock", "lock",
    "widget", "sync", "peers", "conflicts", "help", "completions",
  ]

  func testEveryCommandHasHelp() throws {
    let cli = try CLIProcess()
    for command in Self.commands {
      for arguments in [[command, "--help"], [command, "-h"], ["help", command]] {
        let result = try cli.run(arguments)
        XCTAssertEqual(result.status, 0, "\(arguments)")
        XCTAssertTrue(result.stdout.hasPrefix("Usage: memo-peer \(command)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("--help"))
      }
    }
    let overview = try cli.run(["--help"])
    XCTAssertEqual(overview.status, 0)
    for command in Self.commands { XCTAssertTrue(overview.stdout.contains("  \(command) "), command) }
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.dataDirectory), "help touches no files")
  }

  func testMistakesAreUsageErrorsWithSuggestions() throws {
    let cli = try CLIProcess()
    let cases: [([String], String)] = [
      (["lsit"], "did you mean `memo-peer list`?"), (["serch", "x"], "did you mean `memo-peer search`?"),
      (["list", "--jsno"], "did you mean --json?"), (["new", "--titel", "x"], "did you mean --title?"),
      (["show"], "missing ID"), (["show", "a", "b"], "too many arguments"), (["list", "--tag"], "needs a value"),
      (["list", "--json=yes"], "takes no value"), ([], "Usage: memo-peer"), (["--frobnicate"], "unknown option"),
    ]
    for (arguments, expected) in cases {
      let result = try cli.run(arguments)
      XCTAssertEqual(result.status, 2, "\(arguments): \(result.output)")
      XCTAssertTrue(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
      XCTAssertFalse(result.stderr.contains("Fatal error"), result.stderr)
    }
  }
}

final class CLIMemoTests: XCTestCase {
  /// `list --json` and `search --json` are written a memo at a time; the bytes are those of
  /// the whole object encoded at once, as before streaming.
  func testStreamedJSONIsByteForByteTheWholeEncoding() throws {
    let cli = try CLIProcess()
    let app = App(
      paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"]), clock: App.wallClock)
    func whole(_ value: some Encodable) -> String { String(decoding: JSONOutput.encode(value), as: UTF8.self) }
    XCTAssertEqual(
      try cli.run(["list", "--json"]).stdout, whole(MemoListJSON(try app.memos.list(), names: try app.names())))
    XCTAssertEqual(
      try cli.run(["search", "--json", "x"]).stdout,
      whole(MemoListJSON(try app.memos.search("x"), names: try app.names())))
    _ = try cli.new("a/b \"quoted\" ünïcode\nbody x", ["--tag", "Home", "--tag", "todo"])
    _ = try cli.new("second x", ["--title", "Report / Q3", "--private"])
    _ = try cli.new("third", [])
    for arguments in [["list", "--json"], ["list", "--json", "--tag", "home"]] {
      let listed = try cli.run(arguments)
      XCTAssertEqual(listed.status, 0, listed.stderr)
      let memos = try app.memos.list(tag: arguments.count > 2 ? "home" : nil)
      XCTAssertEqual(listed.stdout, whole(MemoListJSON(memos, names: try app.names())), "\(arguments)")
    }
    XCTAssertEqual(
      try cli.run(["search", "--json", "x"]).stdout,
      whole(MemoListJSON(try app.memos.search("x"), names: try app.names())))
    // The text lines come in the listing's order, one per memo.
    let lines = try cli.run(["list"]).stdout.split(separator: "\n")
    XCTAssertEqual(
      lines.map { String($0.prefix(8)) }, try app.memos.list().memos.map { String($0.id.rawValue.prefix(8)) })
  }

  func testCreateListShowEditSearchDeleteAsARealProcess() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["init"]).status, 0)
    let first = try cli.new("Call the plumber\nabout the leak", ["--tag", "Home", "--tag", "todo"])
    let second = try cli.new("quarterly numbers", ["--title", "Report", "--private"])
    XCTAssertNotNil(MemoID(first))
    XCTAssertEqual(try cli.listedIDs(), [second, first])

    let list = try cli.run(["list"])
    XCTAssertTrue(list.stdout.contains("\(first.prefix(8))  "), list.stdout)
    XCTAssertTrue(list.stdout.contains("Call the plumber  #home #todo"), list.stdout)
    XCTAssertTrue(list.stdout.contains("● Report"), list.stdout)
    let tagged = try cli.json(["list", "--tag", "HOME"])["memos"] as? [[String: Any]]
    XCTAssertEqual(tagged?.compactMap { $0["id"] as? String }, [first])

    let shown = try cli.run(["show", String(first.prefix(6))])
    XCTAssertEqual(shown.status, 0, shown.stderr)
    XCTAssertTrue(shown.stdout.contains("Call the plumber\nabout the leak"), shown.stdout)
    let memo = try XCTUnwrap(try cli.json(["show", first])["memo"] as? [String: Any])
    XCTAssertEqual(memo["body"] as? String, "Call the plumber\nabout the leak")
    XCTAssertEqual(memo["tags"] as? [String], ["home", "todo"])
    XCTAssertEqual(memo["revision"] as? Int, 1)
    XCTAssertEqual(memo["private"] as? Bool, false)
    XCTAssertNotNil(
      (memo["created"] as? String).flatMap {
        ISO8601DateFormatter().date(
          from: $0.replacingOccurrences(of: ".\\d{3}Z", with: "Z", options: .regularExpression))
      })

    XCTAssertEqual(try cli.run(["edit", first, "--stdin"], stdin: Array("Plumber booked".utf8)).status, 0)
    XCTAssertEqual(try cli.run(["edit", first, "--title", "Plumber", "--no-tags", "--private"]).status, 0)
    let edited = try XCTUnwrap(try cli.json(["show", first])["memo"] as? [String: Any])
    XCTAssertEqual(edited["body"] as? String, "Plumber booked")
    XCTAssertEqual(edited["title"] as? String, "Plumber")
    XCTAssertEqual(edited["tags"] as? [String], [])
    XCTAssertEqual(edited["private"] as? Bool, true)
    XCTAssertEqual(edited["revision"] as? Int, 3)

    let found = try cli.json(["search", "BOOKED"])["memos"] as? [[String: Any]]
    XCTAssertEqual(found?.compactMap { $0["id"] as? String }, [first])
    let viaStdin = try cli.run(["search", "--stdin"], stdin: Array("quarterly\n".utf8))
    XCTAssertTrue(viaStdin.stdout.contains("Report"), viaStdin.output)

    let refused = try cli.run(["delete", first])
    XCTAssertEqual(refused.status, 2)
    XCTAssertTrue(refused.stderr.contains("--yes"))
    XCTAssertEqual(try cli.run(["delete", first, "--yes"]).status, 0)
    XCTAssertEqual(try cli.listedIDs(), [second])
  }

  func testEditorRunsOnAPrivateMemoryFileThatIsRemovedAfterwards() throws {
    let cli = try CLIProcess()
    let id = try cli.new("before")
    let log = cli.home + "/editor.log"
    let editor = try cli.script(
      "fake-editor",
      """
      echo "$1" > '\(log)'
      stat -f -c %T "$1" >> '\(log)'
      stat -c %a "$(dirname "$1")" >> '\(log)'
      stat -c %a "$1" >> '\(log)'
      cat "$1" >> '\(log)'
      printf 'after the editor' > "$1"
      """)
    let result = try cli.run(["edit", id], extraEnvironment: ["EDITOR": editor])
    XCTAssertEqual(result.status, 0, result.output)
    let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
    XCTAssertEqual(lines.count, 5, lines.description)
    XCTAssertEqual(lines[1], "tmpfs")
    XCTAssertEqual(lines[2], "700")
    XCTAssertEqual(lines[3], "600")
    XCTAssertEqual(lines[4], "before")
    XCTAssertFalse(FileManager.default.fileExists(atPath: lines[0]), "the plaintext file is gone")
    XCTAssertFalse(FileManager.default.fileExists(atPath: (lines[0] as NSString).deletingLastPathComponent))
    let memo = try XCTUnwrap(try cli.json(["show", id])["memo"] as? [String: Any])
    XCTAssertEqual(memo["body"] as? String, "after the editor")

    let failing = try cli.script("failing-editor", "printf 'half-typed' > \"$1\"; exit 3")
    let failed = try cli.run(["edit", id], extraEnvironment: ["VISUAL": failing])
    XCTAssertEqual(failed.status, 9, failed.output)
    XCTAssertEqual((try cli.json(["show", id])["memo"] as? [String: Any])?["body"] as? String, "after the editor")
    let noEditor = try cli.run(["edit", id])
    XCTAssertEqual(noEditor.status, 9)
    XCTAssertTrue(noEditor.stderr.contains("set EDITOR"), noEditor.stderr)
  }

  func testUniqueBodyIsNotInTheDataDirectory() throws {
    let cli = try CLIProcess()
    let marker = "GREP-ME-\(UUID().uuidString)"
    _ = try cli.new("the body is \(marker)", ["--title", "title \(marker)", "--tag", "t"])
    let raw = try cli.rawDataBytes()
    XCTAssertFalse(raw.isEmpty)
    XCTAssertNil(raw.range(of: Data(marker.utf8)))
    let grep = try cli.run(executable: "/bin/grep", ["-r", "-a", "-c", marker, cli.home + "/node"], stdin: nil)
    XCTAssertEqual(grep.status, 1, "grep finds nothing: \(grep.stdout)")
  }

  func testUnknownAndAmbiguousIDs() throws {
    let cli = try CLIProcess()
    var ids: [String] = []
    for index in 0..<20 { ids.append(try cli.new("memo \(index)")) }
    let missing = try cli.run(["show", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
    XCTAssertEqual(missing.status, 3)
    // One character is too short to act on, however many memos it would match.
    let short = try cli.run(["show", String(ids[0].prefix(1))])
    XCTAssertEqual(short.status, 3)
    XCTAssertTrue(short.stderr.contains("at least 4 characters"), short.stderr)
    // Two memos whose ids share their first 8 characters (imported with those ids).
    let shared = ["abcd1234-0000-4000-8000-000000000001", "abcd1234-0000-4000-8000-000000000002"]
    let folder = cli.home + "/same-prefix"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    for (index, id) in shared.enumerated() {
      try "---\nid: \(id)\ntitle: Same prefix \(index)\n---\nbody \(index)\n".write(
        toFile: folder + "/\(index).md", atomically: true, encoding: .utf8)
    }
    XCTAssertEqual(try cli.run(["import", "--markdown", folder]).status, 0)
    let ambiguous = try cli.run(["show", "abcd"])
    XCTAssertEqual(ambiguous.status, 3)
    for id in shared { XCTAssertTrue(ambiguous.stderr.contains(id), ambiguous.stderr) }
    let json = try cli.run(["show", "ffff", "--json"])
    let error = try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: Any]
    XCTAssertEqual((error?["error"] as? [String: Any])?["code"] as? String, "not-found")
    let notACommand = try cli.run(["my secret plan"])
    XCTAssertEqual(notACommand.status, 2)
    XCTAssertFalse(notACommand.stderr.contains("secret"))
    let notAnID = try cli.run(["show", "my secret plan"])
    XCTAssertEqual(notAnID.status, 2)
    XCTAssertFalse(notAnID.stderr.contains("secret"))
  }
}

final class CLIBadInputTests: XCTestCase {
  func testInvalidUTF8AndOversizedInputAreRefusedWithoutEcho() throws {
    let cli = try CLIProcess()
    let invalid = try cli.run(["new"], stdin: Array("PRIVATE-TEXT ".utf8) + [0xC3, 0x28])
    XCTAssertEqual(invalid.status, 4)
    XCTAssertTrue(invalid.stderr.contains("not valid UTF-8"), invalid.stderr)
    XCTAssertTrue(invalid.stderr.contains("offset 13"), invalid.stderr)
    XCTAssertFalse(invalid.stderr.contains("PRIVATE-TEXT"))

    let big = Array(String(repeating: "PRIVATE-TEXT ", count: 6000).utf8)
    let tooLarge = try cli.run(["new"], stdin: big)
    XCTAssertEqual(tooLarge.status, 4)
    XCTAssertTrue(tooLarge.stderr.contains("65536"), tooLarge.stderr)
    XCTAssertFalse(tooLarge.stderr.contains("PRIVATE-TEXT"))
    let id = try cli.new("short")
    XCTAssertEqual(try cli.run(["edit", id, "--stdin"], stdin: big).status, 4)
    XCTAssertEqual(try cli.listedIDs(), [id], "nothing half-stored")
    let empty = try cli.run(["new"], stdin: [])
    XCTAssertEqual(empty.status, 4)
  }

  func testPermissionsTooOpenAreRefusedWithAFix() throws {
    let cli = try CLIProcess()
    _ = try cli.new("x")
    chmod(cli.keyDirectory, 0o755)
    let dir = try cli.run(["list"])
    XCTAssertEqual(dir.status, 5)
    XCTAssertTrue(dir.stderr.contains("chmod 700 '\(cli.keyDirectory)'"), dir.stderr)
    chmod(cli.keyDirectory, 0o700)
    chmod(cli.keyDirectory + "/device.key", 0o640)
    let file = try cli.run(["list"])
    XCTAssertEqual(file.status, 5)
    XCTAssertTrue(file.stderr.contains("chmod 600"), file.stderr)
    chmod(cli.keyDirectory + "/device.key", 0o600)
    XCTAssertEqual(try cli.run(["list"]).status, 0)
  }

  func testMissingKeyAndDamagedDatabaseAreExplainedAndLeftAlone() throws {
    let cli = try CLIProcess()
    _ = try cli.new("keep me")
    let keyPath = cli.keyDirectory + "/device.key"
    let key = try Data(contentsOf: URL(fileURLWithPath: keyPath))
    unlink(keyPath)
    let missing = try cli.run(["list"])
    XCTAssertEqual(missing.status, 5, missing.output)
    XCTAssertTrue(missing.stderr.contains("missing"), missing.stderr)
    XCTAssertFalse(FileManager.default.fileExists(atPath: keyPath))
    try key.write(to: URL(fileURLWithPath: keyPath))
    chmod(keyPath, 0o600)

    let database = cli.dataDirectory + "/memos.sqlite"
    let garbage = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
    try garbage.write(to: URL(fileURLWithPath: database))
    let corrupt = try cli.run(["list"])
    XCTAssertEqual(corrupt.status, 6, corrupt.output)
    XCTAssertTrue(corrupt.stderr.contains("left untouched"), corrupt.stderr)
    XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: database)), garbage)
  }

  func testTamperedMemoGivesAnIntegrityErrorWithoutItsText() throws {
    let cli = try CLIProcess()
    let id = try cli.new("TAMPER-TARGET body", ["--title", "TAMPER-TITLE"])
    let other = try cli.new("untouched")
    let db = try SQLiteConnection(path: cli.dataDirectory + "/memos.sqlite", create: false)
    try db.execute("UPDATE memos SET record = substr(record, 1, length(record) - 1) WHERE id = '\(id)'")
    let shown = try cli.run(["show", id])
    XCTAssertEqual(shown.status, 6)
    XCTAssertTrue(shown.stderr.contains(id), shown.stderr)
    XCTAssertFalse(shown.output.contains("TAMPER"))
    XCTAssertEqual(try cli.run(["show", other]).status, 0)
  }

  /// A real full disk: a 1 MiB tmpfs in a private mount namespace (needs root; CI is root).
  func testDiskFullKeepsThePreviousState() throws {
    let isRoot = getuid() == 0
    try XCTSkipUnless(isRoot || ProcessInfo.processInfo.environment["CI"] == "true", "needs root; CI=true runs it")
    let cli = try CLIProcess()
    let node = cli.home + "/node"
    try FileManager.default.createDirectory(atPath: node, withIntermediateDirectories: true)
    let body = cli.home + "/body.txt"
    try String(repeating: "filler text ", count: 5000).write(toFile: body, atomically: true, encoding: .utf8)
    let script = try cli.script(
      "fill-disk",
      """
      set -u
      mount -t tmpfs -o size=1m,mode=700 memo-peer-test "\(node)" || exit 90
      ok=0
      i=0
      while [ $i -lt 200 ]; do
        i=$((i + 1))
        if "\(CLIProcess.binary)" new --title "memo $i" < "\(body)" > /dev/null 2> "\(cli.home)/err"; then
          ok=$((ok + 1))
        else
          echo "status=$?"; break
        fi
      done
      echo "ok=$ok"
      "\(CLIProcess.binary)" list --json > "\(cli.home)/after.json" 2> "\(cli.home)/list-err"; echo "list=$?"
      cat "\(cli.home)/err"
      """)
    let result = try cli.run(
      executable: "/usr/bin/unshare", ["--mount", "--propagation", "private", script], stdin: nil)
    XCTAssertEqual(result.status, 0, result.output)
    XCTAssertTrue(result.stdout.contains("status=7"), result.stdout)
    XCTAssertTrue(result.stdout.contains("disk"), result.stdout)
    XCTAssertTrue(result.stdout.contains("list=0"), result.stdout)
    let ok = Int(result.stdout.split(separator: "\n").first { $0.hasPrefix("ok=") }?.dropFirst(3) ?? "") ?? -1
    XCTAssertGreaterThan(ok, 0)
    let listed = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: cli.home + "/after.json")))
    XCTAssertEqual(
      ((listed as? [String: Any])?["memos"] as? [Any])?.count, ok, "every memo saved before the disk filled is intact")
  }
}

final class CLIArchiveTests: XCTestCase {
  func testExportImportWithPassphraseFromADescriptor() throws {
    let source = try CLIProcess()
    let ids = try (0..<5).map { try source.new("memo number \($0)", ["--tag", "t\($0)"]) }
    let archive = source.home + "/memos.mpa"
    let passphrase = Array("a long passphrase\n".utf8)
    let exported = try source.run(["export", "--output", archive, "--passphrase-fd", "0"], stdin: passphrase)
    XCTAssertEqual(exported.status, 0, exported.output)
    XCTAssertTrue(exported.stdout.contains("exported 5"))
    let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
    XCTAssertNil(bytes.range(of: Data("memo number".utf8)))

    let target = try CLIProcess()
    let wrong = try target.run(["import", archive, "--passphrase-fd", "0"], stdin: Array("the wrong passphrase".utf8))
    XCTAssertEqual(wrong.status, 5, wrong.output)
    XCTAssertEqual(try target.listedIDs(), [])
    let imported = try target.json(["import", archive, "--passphrase-fd", "0"], stdin: passphrase)
    XCTAssertEqual(imported["added"] as? Int, 5)
    XCTAssertEqual(Set(try target.listedIDs()), Set(ids))
    let again = try target.json(["import", archive, "--passphrase-fd", "0"], stdin: passphrase)
    XCTAssertEqual(again["unchanged"] as? Int, 5)

    let short = try source.run(["export", "--output", archive, "--passphrase-fd", "0"], stdin: Array("short".utf8))
    XCTAssertEqual(short.status, 5)
    let noTerminal = try source.run(["export", "--output", source.home + "/x.mpa"])
    XCTAssertEqual(noTerminal.status, 2, noTerminal.output)
    XCTAssertFalse(FileManager.default.fileExists(atPath: source.home + "/x.mpa"))
  }
}
