import Foundation
import XCTest

/// A node with a passphrase, locked, cannot act as itself: not on its own host after a
/// "reboot", and not from a copy of its whole home on another host. A new kernel keyring
/// session stands for the reboot and for the other machine (the lab's hosts share this
/// machine's kernel): `keyctl session -` makes a fresh one per command, a named session
/// (`keyctl session NAME`, made joinable with `setperm`) one shared by several commands.
final class LockedNodeLabTests: LabTestCase {
  let passphrase = "lab passphrase \(UUID().uuidString.prefix(6))"

  override func setUpWithError() throws {
    try super.setUpWithError()
    // The lab's hosts share root's user keyring: leave nothing of a's in it.
    addTeardownBlock { [passphrase] in
      _ = try? Lab.exec("a", ["protect", "none", "--passphrase-fd", "0"], stdin: passphrase)
    }
  }

  /// a and b trust each other and have consent; b serves (and logs its connections); a
  /// protects itself with `after-first-unlock`.
  func protectedPair() throws -> Background {
    for host in ["a", "b"] { _ = try ok(host, ["consent", "grant", "--provisioning"]) }
    // Each shares its own notebook with the other: what either writes reaches the other.
    _ = try ok("a", ["trust", "add", try deviceID("b"), "--name", "bee", "--share", "personal"])
    _ = try ok("b", ["trust", "add", try deviceID("a"), "--name", "ay", "--share", "personal"])
    let server = try start("b", ["--debug", "serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { server.text.contains("advertising") }, server.text)
    // A first sync brings each notebook to the other as an invitation; a person on each
    // accepts it.
    _ = try ok("a", ["sync", "--peer", "bee", "--timeout", "30"])
    for host in ["a", "b"] { XCTAssertEqual(try acceptInvitations(host).count, 1, host) }
    _ = try ok("a", ["protect", "after-first-unlock", "--new-passphrase-fd", "0"], stdin: passphrase)
    return server
  }

  /// memo-peer on `host` in a fresh keyring session: a machine that never unlocked this node.
  func fresh(_ host: String, _ arguments: [String], stdin: String? = nil) throws -> Lab.Result {
    try Lab.exec(host, ["session", "-", Lab.binary] + arguments, tool: "/usr/bin/keyctl", stdin: stdin)
  }

  /// The command line that runs memo-peer in the named keyring session `session`.
  func inSession(_ session: String, _ arguments: [String]) -> [String] {
    ["session", session, "/bin/sh", "-c", "keyctl setperm @s 0x3f3f0000 >/dev/null; exec \"$0\" \"$@\"", Lab.binary]
      + arguments
  }

  func daemon(_ host: String, session: String? = nil) throws -> [String: Any]? {
    let result =
      try session.map { try Lab.exec(host, inSession($0, ["status", "--json"]), tool: "/usr/bin/keyctl") }
      ?? Lab.exec(host, ["status", "--json"])
    return (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])?["serve"]
      as? [String: Any]
  }

  func titles(_ result: Lab.Result) throws -> [String] {
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    return (json?["memos"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
  }

  /// Locks a, then starts its daemon as after a reboot: in a keyring session that never
  /// unlocked it (kept open by a `sleep`), and waits until it says it is locked.
  func daemonAfterAReboot() throws -> (session: String, serve: Background) {
    _ = try ok("a", ["lock"])
    let session = "memo-peer-lab-\(UUID().uuidString.prefix(8))"
    let holder = try XCTUnwrap(Lab.startTool("a", "keyctl", inSession(session, []).dropLast() + ["sleep", "600"]))
    background.append(holder)
    let serve = try XCTUnwrap(Lab.startTool("a", "keyctl", inSession(session, ["--debug", "serve"])))
    background.append(serve)
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) {
        (try daemon("a", session: session)?["waiting_for"] as? String)?.hasPrefix("locked") == true
      }, serve.text)
    return (session, serve)
  }

  func requireKeyctl() throws {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/keyctl") else {
      if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("keyctl is missing (scripts/deps.sh installs it)")
      }
      throw XCTSkip("keyctl is missing: run `make deps`")
    }
  }

  func testACopiedLockedHomeGivesNothingAndOnlyThePassphraseOpensIt() throws {
    try requireKeyctl()
    let server = try protectedPair()
    let memo = try ok("a", ["new"], stdin: "a's own memo").trimmingCharacters(in: .whitespacesAndNewlines)
    _ = try ok("a", ["sync", "--peer", "bee", "--timeout", "20"])
    _ = try ok("a", ["lock"])
    _ = try ok("b", ["new"], stdin: "written on b after the copy")
    // The whole home, to a fresh host.
    let copy = try Lab.run(
      "/bin/cp", ["-a", "\(Lab.directory)/a/home/.", "\(Lab.directory)/c/home/"], environment: [:])
    XCTAssertEqual(copy.status, 0, copy.output)
    let connectionsBefore = server.text.components(separatedBy: "trusted connection from").count

    for arguments in [
      ["sync"], ["sync", "--peer", "bee", "--timeout", "5"], ["ping", "bee", "--timeout", "5"],
      ["send", memo, "--to", "bee", "--wait", "5"], ["trust", "list"], ["id", "--certificate"],
    ] {
      let result = try fresh("c", arguments)
      XCTAssertEqual(result.status, 18, "\(arguments): \(result.output)")
      XCTAssertTrue(result.stderr.contains("locked"), "\(arguments): \(result.stderr)")
    }
    // serve waits, locked, and puts nothing on the network.
    let serve = try XCTUnwrap(Lab.startTool("c", "keyctl", ["session", "-", Lab.binary, "serve"]))
    background.append(serve)
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) { (try daemon("c")?["waiting_for"] as? String)?.hasPrefix("locked") == true },
      serve.text)
    XCTAssertEqual(try daemon("c")?["state"] as? String, "waiting")
    let browse = try Lab.exec("b", ["browse", "--json", "--timeout", "3"])
    XCTAssertFalse(
      browse.jsonLines.contains { ($0["addresses"] as? [String] ?? []).contains("169.254.77.13") },
      "the copy advertises nothing: \(browse.stdout)")
    XCTAssertEqual(serve.terminate(), 0)
    XCTAssertEqual(try fresh("c", ["unlock", "--passphrase-fd", "0"], stdin: "not the passphrase").status, 5)

    // Nothing reached b from the copy, and nothing of b's reached the copy.
    XCTAssertEqual(server.text.components(separatedBy: "trusted connection from").count, connectionsBefore, server.text)
    let listed = try titles(try fresh("c", ["list", "--json"]))
    XCTAssertTrue(listed.contains("a's own memo"), "the copy lists its public titles while locked: \(listed)")
    XCTAssertFalse(listed.contains("written on b after the copy"))

    // The passphrase is the only way on, exactly as on the original.
    let unlocked = try Lab.exec(
      "c",
      [
        "session", "-", "/bin/sh", "-c",
        "\"$0\" unlock --passphrase-fd 0 >/dev/null && exec \"$0\" sync --peer bee --timeout 20", Lab.binary,
      ], tool: "/usr/bin/keyctl", stdin: passphrase)
    XCTAssertEqual(unlocked.status, 0, unlocked.output)
    XCTAssertTrue(try titles(try Lab.exec("c", ["list", "--json"])).contains("written on b after the copy"))
  }

  func testTheDaemonWaitsLockedAfterARebootGoesOnAtUnlockAndLockClosesItsSessions() throws {
    try requireKeyctl()
    _ = try protectedPair()
    let (session, serve) = try daemonAfterAReboot()
    XCTAssertEqual(try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "3"]).status, 17, "not advertised")

    // unlock in that session: the same daemon goes on, no restart.
    let unlock = try Lab.exec(
      "a", inSession(session, ["unlock", "--passphrase-fd", "0"]), tool: "/usr/bin/keyctl", stdin: passphrase)
    XCTAssertEqual(unlock.status, 0, unlock.output)
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 10) { try daemon("a", session: session)?["state"] as? String == "advertising" },
      serve.text)
    XCTAssertTrue(serve.process.isRunning)
    let pinger = try start("b", ["ping", "ay", "--count", "600", "--interval", "0.1", "--timeout", "20"])
    XCTAssertTrue(Lab.waitUntil(seconds: 20) { pinger.text.contains("pong from ay") }, pinger.text)

    // lock: the live session is closed at once. `lock` wakes the daemon (state/lock-changed);
    // the bound here is looser (2 s) because it is observed from another host's process,
    // which needs its next ping (0.1 s apart) and its exit, and lab commands start slowly.
    let locked = Date()
    let lock = try Lab.exec("a", inSession(session, ["lock"]), tool: "/usr/bin/keyctl")
    XCTAssertEqual(lock.status, 0, lock.output)
    XCTAssertEqual(pinger.exitStatus(within: 10), 17, pinger.text)
    XCTAssertLessThan(Date().timeIntervalSince(locked), 2, "the session outlived the lock: \(pinger.text)")
    XCTAssertTrue(
      try Lab.waitUntil(seconds: 5) {
        (try daemon("a", session: session)?["waiting_for"] as? String)?.hasPrefix("locked") == true
      }, serve.text)
    XCTAssertTrue(serve.text.contains("locked: advertisement withdrawn, sessions closed"), serve.text)
    XCTAssertEqual(try Lab.exec("b", ["ping", "ay", "--count", "1", "--timeout", "3"]).status, 17)
  }

  /// Live push waits while the node is locked and goes on at the unlock: a memo written
  /// before a "reboot" reaches b only once a's daemon, started locked, is unlocked, with
  /// nobody running `sync`.
  func testLivePushWaitsWhileLockedAndSendsWhatWasMissedAtTheUnlock() throws {
    try requireKeyctl()
    _ = try protectedPair()
    _ = try ok("a", ["consent", "grant", "--scope", "background-sync", "--provisioning"])
    let missed = "written before the reboot"
    _ = try ok("a", ["new", "--title", missed], stdin: "body\n")
    let (session, serve) = try daemonAfterAReboot()
    let onB = { try self.titles(try Lab.exec("b", ["list", "--json"])) }
    XCTAssertFalse(Lab.waitUntil(seconds: 3) { (try? onB().contains(missed)) ?? false }, "locked: nothing moves")

    let unlock = try Lab.exec(
      "a", inSession(session, ["unlock", "--passphrase-fd", "0"]), tool: "/usr/bin/keyctl", stdin: passphrase)
    XCTAssertEqual(unlock.status, 0, unlock.output)
    XCTAssertTrue(Lab.waitUntil(seconds: 20) { (try? onB().contains(missed)) ?? false }, serve.text)
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { serve.text.contains("live sync: bee:") }, serve.text)
  }
}
