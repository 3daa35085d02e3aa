import Foundation
import MemoCore
import MemoNode
import MemoSystem
import XCTest

@testable import MemoStore

/// `history`, `show --revision`, `diff`, `restore`, `trash`, `undo` and `delete --purge` as a
/// real process: their output, their JSON, terminal safety and the refusals.
final class HistoryCommandTests: XCTestCase {
  func testEveryHistoryCommandHasHelp() throws {
    let cli = try CLIProcess()
    for command in ["history", "diff", "restore", "trash", "undo"] {
      let result = try cli.run([command, "--help"])
      XCTAssertEqual(result.status, 0, command)
      XCTAssertTrue(result.stdout.hasPrefix("Usage: memo-peer \(command)"), result.stdout)
    }
  }

  /// `history --from` names a trusted device: another name is refused before anything
  /// touches the network, and `--timeout` alone is a usage error.
  func testHistoryFromRefusesAnUnknownDeviceAndATimeoutAlone() throws {
    let cli = try CLIProcess()
    let id = try cli.new("kept here", ["--title", "Plan"])
    let unknown = try cli.run(["history", id, "--from", "nobody\u{1b}[2J"])
    XCTAssertNotEqual(unknown.status, 0)
    XCTAssertTrue(unknown.stderr.contains("nobody\\x1b[2J"), unknown.stderr)
    XCTAssertFalse(unknown.output.contains("\u{1b}"), "the name is shown escaped")
    let alone = try cli.run(["history", id, "--timeout", "3"])
    XCTAssertEqual(alone.status, 2, alone.output)
    XCTAssertTrue(alone.stderr.contains("--timeout goes with --from PEER"), alone.stderr)
  }

  /// `edit --json` says who made the edit as `new` and `show` do: this device, in its
  /// notebook (it said `this_device: false` and left the notebook out).
  func testEditJSONNamesThisDeviceAndTheNotebook() throws {
    let cli = try CLIProcess()
    let id = try cli.new("before", ["--title", "Plan"])
    let shown = try XCTUnwrap(try cli.json(["show", id])["memo"] as? [String: Any])
    let edited = try XCTUnwrap(
      try cli.json(["edit", id, "--stdin"], stdin: Array("after\n".utf8))["memo"] as? [String: Any])
    XCTAssertEqual((edited["author"] as? [String: Any])?["this_device"] as? Bool, true, "\(edited)")
    XCTAssertNotNil(shown["notebook"] as? String)
    XCTAssertEqual(edited["notebook"] as? String, shown["notebook"] as? String)
    XCTAssertEqual(edited["notebook_id"] as? String, shown["notebook_id"] as? String)
  }

  func testHistoryShowRevisionDiffAndRestore() throws {
    let cli = try CLIProcess()
    let id = try cli.new("first line\nsecond", ["--title", "Plan"])
    // A revision with an escape sequence in it, as a peer could write.
    let edit = try cli.run(["edit", id, "--stdin"], stdin: Array("first line\n\u{1b}]0;pwned\u{07}\nthird\n".utf8))
    XCTAssertEqual(edit.status, 0, edit.output)

    let history = try cli.run(["history", String(id.prefix(8))])
    XCTAssertEqual(history.status, 0, history.output)
    let lines = history.stdout.split(separator: "\n")
    XCTAssertEqual(lines.count, 2, history.stdout)
    XCTAssertTrue(lines[0].hasPrefix("   1  "), history.stdout)
    XCTAssertTrue(lines[0].contains("this device  17 B  first line"), history.stdout)
    XCTAssertTrue(lines[1].hasSuffix("(current)"), history.stdout)

    let json = try cli.json(["history", id])
    let revisions = try XCTUnwrap(json["revisions"] as? [[String: Any]])
    XCTAssertEqual(revisions.compactMap { $0["revision"] as? Int }, [1, 2])
    XCTAssertEqual((revisions[0]["author"] as? [String: Any])?["this_device"] as? Bool, true)

    let shown = try cli.run(["show", id, "--revision", "1", "--plain"])
    XCTAssertEqual(shown.status, 0, shown.output)
    XCTAssertTrue(shown.stdout.contains("revision 1"), shown.stdout)
    XCTAssertTrue(shown.stdout.contains("edited on this device · "), shown.stdout)
    XCTAssertTrue(shown.stdout.hasSuffix("first line\nsecond\n"), shown.stdout)
    let shownJSON = try cli.json(["show", id, "--revision", "1"])
    XCTAssertEqual((shownJSON["memo"] as? [String: Any])?["body"] as? String, "first line\nsecond")

    let diff = try cli.run(["diff", id])
    XCTAssertEqual(diff.status, 0, diff.output)
    XCTAssertEqual(
      Array(diff.stdout.split(separator: "\n").dropFirst(2)),
      [" first line", "-second", "+\\x1b]0;pwned\\x07", "+third"], "escaped, even on a pipe")
    XCTAssertFalse(diff.stdout.contains("\u{1b}"))
    let diffJSON = try cli.json(["diff", id, "1", "2"])
    let ops = (diffJSON["lines"] as? [[String: Any]])?.compactMap { $0["op"] as? String }
    XCTAssertEqual(ops, ["same", "removed", "added", "added"])

    let restored = try cli.run(["restore", id, "--revision", "1"])
    XCTAssertEqual(restored.status, 0, restored.output)
    XCTAssertTrue(restored.stdout.contains("restored revision 1 as revision 3"), restored.stdout)
    let current = try cli.json(["show", id])
    XCTAssertEqual((current["memo"] as? [String: Any])?["body"] as? String, "first line\nsecond")
    XCTAssertNotNil((current["memo"] as? [String: Any])?["author"] as? [String: Any])

    // Bad input: usage errors (2) and an unknown revision (3), never memo text.
    for (arguments, status) in [
      (["show", id, "--revision", "0"], 2), (["show", id, "--revision", "x"], 2), (["restore", id], 2),
      (["diff", id, "-1"], 2), (["show", id, "--revision", "9"], 3), (["restore", id, "--revision", "9"], 3),
      (["diff", id, "1", "9"], 3), (["history", "ffffffff"], 3),
    ] {
      let result = try cli.run(arguments)
      XCTAssertEqual(result.status, Int32(status), "\(arguments): \(result.output)")
      XCTAssertFalse(result.stderr.contains("first line") || result.stderr.contains("pwned"), result.stderr)
    }
  }

  /// A revision from before signing — a memo row as the schema 8 migration leaves one,
  /// with no signed record and no author — is shown as such: `show` says `unsigned (before
  /// version 3) · TIME` where a signed one says `edited on DEVICE · TIME`, `history` names
  /// it the same way, and the JSON of both has no author.
  func testARevisionFromBeforeSigningShowsAsUnsigned() throws {
    let cli = try CLIProcess()
    let id = try cli.new("written before version 3", ["--title", "Old"])
    let signed = try cli.run(["show", id, "--plain"])
    XCTAssertTrue(signed.stdout.contains("\nedited on this device · "), signed.stdout)
    do {
      // Such a row has its body sealed in the row (schema 12 keeps it only in the record).
      let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"])
      let store = try MemoStore.open(paths: paths)
      let body = try store.sealedFields(of: try store.memo(try XCTUnwrap(MemoID(canonical: id)))).body
      let db = try SQLiteConnection(path: cli.dataDirectory + "/memos.sqlite", create: false)
      let update = try db.prepare(
        "UPDATE memos SET body = ?, record_key = NULL, record = NULL, signature = NULL, author = NULL WHERE id = ?")
      try update.bind([.blob(body), .text(id)])
      try update.step()
    }
    let shown = try cli.run(["show", id, "--plain"])
    XCTAssertEqual(shown.status, 0, shown.output)
    XCTAssertTrue(shown.stdout.contains("\nunsigned (before version 3) · "), shown.stdout)
    XCTAssertFalse(shown.stdout.contains("edited on"), shown.stdout)
    XCTAssertTrue(shown.stdout.hasSuffix("written before version 3\n"), shown.stdout)
    let history = try cli.run(["history", id])
    XCTAssertEqual(history.status, 0, history.output)
    XCTAssertTrue(history.stdout.contains("unsigned (before version 3)"), history.stdout)
    let json = try cli.json(["show", id])
    let author = (json["memo"] as? [String: Any])?["author"]
    XCTAssertTrue(author == nil || author is NSNull, "\(String(describing: author))")
    let revisions = try XCTUnwrap(try cli.json(["history", id])["revisions"] as? [[String: Any]])
    XCTAssertTrue(revisions.allSatisfy { $0["author"] == nil || $0["author"] is NSNull }, "\(revisions)")
  }

  func testTheTrashRestoresEmptiesAndPurgeAsks() throws {
    let cli = try CLIProcess()
    let id = try cli.new("to the trash", ["--title", "Binned"])
    XCTAssertEqual(try cli.run(["delete", id, "--yes"]).status, 0)
    let trash = try cli.run(["trash"])
    XCTAssertTrue(trash.stdout.contains("\(id.prefix(8))  "), trash.stdout)
    XCTAssertTrue(trash.stdout.contains("Binned  (deleted by this device)"), trash.stdout)
    let entries = try cli.json(["trash", "list"])["trash"] as? [[String: Any]]
    XCTAssertEqual(entries?.compactMap { $0["memo"] as? String }, [id])

    let restored = try cli.run(["trash", "restore", String(id.prefix(8))])
    XCTAssertEqual(restored.status, 0, restored.output)
    XCTAssertEqual(try cli.listedIDs(), [id])
    XCTAssertEqual(try cli.run(["trash", "restore", id]).status, 3, "no longer in the trash")

    XCTAssertEqual(try cli.run(["delete", id, "--yes"]).status, 0)
    let unconfirmed = try cli.run(["trash", "empty"], stdin: [])
    XCTAssertEqual(unconfirmed.status, 2, unconfirmed.output)
    XCTAssertEqual((try cli.json(["trash"])["trash"] as? [[String: Any]])?.count, 1, "nothing emptied")
    XCTAssertEqual(try cli.json(["trash", "empty", "--yes"])["emptied"] as? Int, 1)
    XCTAssertEqual((try cli.json(["trash"])["trash"] as? [[String: Any]])?.count, 0)
    XCTAssertEqual(try cli.run(["trash", "frobnicate"]).status, 2)

    let other = try cli.new("purge me please")
    XCTAssertEqual(try cli.run(["delete", other, "--purge"], stdin: []).status, 2, "asks first")
    XCTAssertEqual(try cli.listedIDs(), [other])
    XCTAssertEqual(try cli.json(["delete", other, "--purge", "--yes"])["purged"] as? String, other)
    XCTAssertEqual(try cli.listedIDs(), [])
    XCTAssertEqual((try cli.json(["trash"])["trash"] as? [[String: Any]])?.count, 0)
    XCTAssertNil(try cli.rawDataBytes().range(of: Data("purge me please".utf8)))
  }

  func testUndoIsADryRunWithoutYesAndRefusesBadInput() throws {
    let cli = try CLIProcess()
    let id = try cli.new("made here")
    let device = try XCTUnwrap(try cli.json(["id"])["device_id"] as? String)
    let dry = try cli.json(["undo", "--device", device, "--since", "1d"])
    XCTAssertEqual(dry["applied"] as? Bool, false)
    XCTAssertEqual((dry["memos"] as? [[String: Any]])?.compactMap { $0["memo"] as? String }, [id])
    XCTAssertEqual(try cli.listedIDs(), [id], "a dry run changes nothing")
    let done = try cli.run(["undo", "--device", device, "--since", "1d", "--yes"])
    XCTAssertEqual(done.status, 0, done.output)
    XCTAssertTrue(done.stdout.contains("→ deleted"), done.stdout)
    XCTAssertEqual(try cli.listedIDs(), [])
    for arguments in [
      ["undo", "--since", "1d"], ["undo", "--device", device], ["undo", "--device", device, "--since", "soon"],
      ["undo", "--device", "laptop-b", "--since", "1d"],
    ] {
      let result = try cli.run(arguments)
      XCTAssertNotEqual(result.status, 0, "\(arguments)")
      XCTAssertFalse(result.stderr.contains("made here"), result.stderr)
    }
  }
}
