import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// `memo-peer widget` as a status bar runs it.
final class WidgetCLITests: XCTestCase {
  let passphrase = "widget test passphrase"

  func waybar(_ cli: CLIProcess, keyctlSession: Bool = false) throws -> [String: Any] {
    let result =
      keyctlSession
      ? try cli.run(
        executable: "/usr/bin/keyctl", ["session", "-", CLIProcess.binary, "widget", "--format", "waybar"],
        stdin: nil)
      : try cli.run(["widget", "--format", "waybar"])
    XCTAssertEqual(result.status, 0, result.output)
    XCTAssertEqual(result.stdout.filter { $0 == "\n" }.count, 1, "one JSON object per line")
    return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
  }

  func field(_ json: [String: Any], _ name: String) -> (value: Any?, redacted: String?) {
    let field = (json["fields"] as? [String: Any])?[name] as? [String: Any]
    let value = field?["value"]
    return (value is NSNull ? nil : value, field?["redacted"] as? String)
  }

  func writeConfig(_ cli: CLIProcess, _ json: String) throws {
    try FileManager.default.createDirectory(atPath: cli.home + "/node/config", withIntermediateDirectories: true)
    try json.write(toFile: cli.home + "/node/config/config.json", atomically: true, encoding: .utf8)
  }

  func testFormatsPinAndCounts() throws {
    let cli = try CLIProcess()
    let pinned = try cli.new("Groceries & <things>\nmilk", ["--tag", "home"])
    _ = try cli.new("Later memo\nx")
    let store = try MemoStore.open(paths: try NodePaths.resolve(environment: cli.environment))
    try store.enqueue(
      QueuedPayload(id: "e1", peer: TestDevices.id(named: "P"), payload: [1], time: 1),
      in: .outbox)
    try store.enqueue(
      QueuedPayload(id: "e2", peer: TestDevices.id(named: "P"), payload: [2], time: 2),
      in: .outbox)
    XCTAssertEqual(try cli.run(["widget"]).stdout, "Later memo · 0 online · 2 waiting\n")
    XCTAssertEqual(try cli.run(["edit", pinned, "--pin"]).status, 0)
    XCTAssertEqual(
      try cli.run(["widget", "--format", "plain"]).stdout, "Groceries & <things> · 0 online · 2 waiting\n")
    XCTAssertEqual(
      try cli.run(["widget", "--format", "i3blocks"]).stdout,
      "Groceries & <things> · 0 online · 2 waiting\nGroceries & <things>\n")
    let json = try waybar(cli)
    XCTAssertEqual(json["text"] as? String, "Groceries &amp; &lt;things&gt; · 0 online · 2 waiting")
    XCTAssertEqual(json["class"] as? [String], ["unprotected"])
    XCTAssertEqual(json["alt"] as? String, "unprotected")
    XCTAssertEqual(field(json, "title").value as? String, "Groceries & <things>")
    XCTAssertEqual(field(json, "tags").value as? [String], ["home"])
    XCTAssertEqual(field(json, "outbox_waiting").value as? Int, 2)
    XCTAssertEqual(field(json, "peers_online").value as? Int, 0)
    XCTAssertTrue((json["tooltip"] as? String ?? "").contains("(pinned)"))
    let withSchema = try cli.json(["widget"])
    XCTAssertEqual(withSchema["schema"] as? Int, 1)
    let bad = try cli.run(["widget", "--format", "waybra"])
    XCTAssertEqual(bad.status, 2)
    XCTAssertTrue(bad.stderr.contains("did you mean waybar?"), bad.stderr)
  }

  func testPrivateMemoIsAPlaceholderWhenTheUserSaysSo() throws {
    let cli = try CLIProcess()
    _ = try cli.new("Secret plan\nx", ["--private", "--tag", "hidden"])
    XCTAssertEqual(field(try waybar(cli), "title").value as? String, "Secret plan")
    try writeConfig(cli, #"{"widget": {"show-private-when-locked": false}}"#)
    let json = try waybar(cli)
    XCTAssertNil(field(json, "title").value)
    XCTAssertEqual(field(json, "title").redacted, "private")
    XCTAssertEqual(field(json, "tags").redacted, "private")
    XCTAssertEqual(json["class"] as? [String], ["unprotected", "redacted"])
    let text = try cli.run(["widget", "--format", "waybar"]).stdout + (try cli.run(["widget"]).stdout)
    XCTAssertFalse(text.contains("Secret plan"), text)
    XCTAssertFalse(text.contains("hidden"), text)
    try writeConfig(cli, #"{"widget": {"protection": "sometimes"}}"#)
    XCTAssertEqual(try cli.run(["widget"]).status, 4)
  }

  func testLockedAndBeforeTheFirstUnlock() throws {
    let cli = try CLIProcess()
    let open = try cli.new("Open title\nbody", ["--tag", "tagged"])
    let secret = try cli.new("Private title\nbody", ["--private"])
    let protected = try cli.run(["protect", "complete", "--new-passphrase-fd", "0"], stdin: Array(passphrase.utf8))
    XCTAssertEqual(protected.status, 0, protected.output)
    addTeardownBlock { [passphrase] in
      _ = try? cli.run(["protect", "none", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8))
      // XCTest keeps this block (and so `cli`) alive: remove the home here.
      try? FileManager.default.removeItem(atPath: cli.home)
    }
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    // The latest memo is the private one: a placeholder while locked.
    var json = try waybar(cli)
    XCTAssertEqual(field(json, "title").redacted, "locked")
    XCTAssertEqual(json["class"] as? [String], ["locked", "redacted"])
    XCTAssertEqual(field(json, "memo_id").value as? String, secret)
    // A memo not marked private keeps its title while locked; its tags are sealed.
    XCTAssertEqual(try cli.run(["edit", open, "--pin"]).status, 0)
    json = try waybar(cli)
    XCTAssertEqual(field(json, "title").value as? String, "Open title")
    XCTAssertEqual(field(json, "tags").redacted, "locked")
    // widget.protection=complete: before the first unlock after boot (a new keyring
    // session), every memo field is a placeholder; the counts stay.
    try writeConfig(cli, #"{"widget": {"protection": "complete"}}"#)
    XCTAssertEqual(field(try waybar(cli), "title").value as? String, "Open title", "unlocked since boot here")
    let rebooted = try waybar(cli, keyctlSession: true)
    XCTAssertEqual(field(rebooted, "title").redacted, "placeholder")
    XCTAssertEqual(field(rebooted, "tags").redacted, "placeholder")
    XCTAssertEqual(field(rebooted, "memo_id").redacted, "placeholder")
    XCTAssertEqual(field(rebooted, "outbox_waiting").value as? Int, 0)
    XCTAssertNil(field(rebooted, "outbox_waiting").redacted)
    let text = String(decoding: try JSONSerialization.data(withJSONObject: rebooted), as: UTF8.self)
    XCTAssertFalse(text.contains("Open title"), text)
    XCTAssertFalse(text.contains(open), text)
  }

  func testTheWidgetNeverCreatesANode() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(try cli.run(["widget"]).stdout, "no memos · 0 online · 0 waiting\n")
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.home + "/node/data"))
    XCTAssertFalse(FileManager.default.fileExists(atPath: cli.home + "/node/keys"))
  }
}
