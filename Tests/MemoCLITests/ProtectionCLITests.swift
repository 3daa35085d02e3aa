import Foundation
import MemoTestSupport
import XCTest

/// protect, unlock and lock with the real binary and the real kernel keyring. A new keyring
/// session (`keyctl session -`) stands for a reboot, as the issue asks.
final class ProtectionCLITests: XCTestCase {
  let passphrase = "correct horse battery staple"

  /// Runs memo-peer with `fd3` readable on descriptor 3 (for a second passphrase) and
  /// `stdin` on 0, through a shell that only redirects.
  func run(
    _ cli: CLIProcess, _ arguments: [String], stdin: String? = nil, fd3: String? = nil, keyctlSession: Bool = false
  )
    throws -> CLIProcess.Result
  {
    var command = keyctlSession ? ["keyctl", "session", "-"] : []
    command += [CLIProcess.binary] + arguments
    var script = "exec \"$@\""
    if let fd3 {
      let file = cli.home + "/fd3-\(UUID().uuidString)"
      try fd3.write(toFile: file, atomically: true, encoding: .utf8)
      script += " 3<'\(file)'; "
    }
    return try cli.run(
      executable: "/bin/sh", ["-c", script, "sh"] + command, stdin: stdin.map { Array($0.utf8) },
      extraEnvironment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
  }

  /// A node protected with `protection`, torn down (keyring entries removed) at the end.
  func protectedNode(_ protection: String = "complete") throws -> CLIProcess {
    try requireKeyctl()
    let cli = try CLIProcess()
    let result = try run(cli, ["protect", protection, "--new-passphrase-fd", "0"], stdin: passphrase + "\n")
    XCTAssertEqual(result.status, 0, result.output)
    addTeardownBlock { [passphrase] in
      _ = try? cli.run(["protect", "none", "--passphrase-fd", "0"], stdin: Array((passphrase + "\n").utf8))
      // XCTest keeps this block (and so `cli`) alive: remove the home here.
      try? FileManager.default.removeItem(atPath: cli.home)
    }
    return cli
  }

  /// `keyctl` (Debian's keyutils) makes new keyring sessions. Under CI=true its absence fails.
  func requireKeyctl() throws {
    if FileManager.default.isExecutableFile(atPath: "/usr/bin/keyctl")
      || FileManager.default.isExecutableFile(
        atPath: "/bin/keyctl")
    {
      return
    }
    if ProcessInfo.processInfo.environment["CI"] == "true" {
      XCTFail("keyctl is missing (Debian package keyutils, installed by scripts/deps.sh)")
    }
    throw XCTSkip("keyctl is missing: run `make deps`")
  }

  func status(_ cli: CLIProcess) throws -> [String: Any] {
    try XCTUnwrap(try cli.json(["status"])["protection"] as? [String: Any])
  }

  /// Every file under the node, to show a failed operation changed nothing.
  func snapshot(_ cli: CLIProcess) throws -> [String: Data] {
    var files: [String: Data] = [:]
    let root = cli.home + "/node"
    let enumerator = FileManager.default.enumerator(atPath: root)
    while let name = enumerator?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue {
        files[name] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + name))
      }
    }
    return files
  }

  func testLockedNodeRevealsNoContentAndUnlockRestoresIt() throws {
    let cli = try protectedNode()
    let canary = "CANARY-\(UUID().uuidString.prefix(8))"
    let open = try cli.new("Open title\nbody \(canary)-body", ["--tag", "x\(canary.suffix(8).lowercased())"])
    let secret = try cli.new("secret \(canary)-private-title\nbody \(canary)-private-body", ["--private"])
    XCTAssertEqual(try status(cli)["state"] as? String, "unlocked")

    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    XCTAssertEqual(try status(cli)["state"] as? String, "locked")
    for (arguments, expected) in [
      (["show", secret], Int32(18)), (["show", open], 18), (["search", "secret"], 18), (["list"], 0),
      (["list", "--json"], 0), (["widget"], 0), (["widget", "--format", "waybar"], 0), (["export", "-o", "-"], 18),
      (["edit", open, "--stdin"], 18), (["delete", open, "--yes"], 18), (["list", "--tag", "x"], 18),
    ] {
      let result = try cli.run(arguments, stdin: Array("new text".utf8))
      XCTAssertEqual(result.status, expected, "\(arguments): \(result.output)")
      XCTAssertFalse(result.output.contains("\(canary)-private"), "\(arguments): \(result.output)")
      XCTAssertFalse(result.output.contains("\(canary)-body"), "\(arguments): \(result.output)")
      XCTAssertFalse(result.output.contains("x\(canary.suffix(8).lowercased())"), "tag: \(arguments): \(result.output)")
      if expected == 18 { XCTAssertTrue(result.stderr.contains("memo-peer unlock"), result.stderr) }
    }
    // The title of the memo not marked private stays listable; the private one does not.
    let list = try cli.run(["list"])
    XCTAssertTrue(list.stdout.contains("Open title"), list.stdout)
    XCTAssertTrue(list.stdout.contains("● (private, locked)"), list.stdout)
    XCTAssertTrue(list.stderr.contains("locked"), list.stderr)
    let new = try cli.run(["new"], stdin: Array("typed while locked".utf8))
    XCTAssertEqual(new.status, 18, new.output)

    let unlocked = try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array((passphrase + "\n").utf8))
    XCTAssertEqual(unlocked.status, 0, unlocked.output)
    XCTAssertTrue(try cli.run(["show", secret]).stdout.contains("\(canary)-private-body"))
    XCTAssertTrue(try cli.run(["list"]).stdout.contains("\(canary)-private-title"))
  }

  func testWrongPassphraseIsClearNeverEchoedAndChangesNothing() throws {
    let cli = try protectedNode()
    _ = try cli.new("some memo")
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    let before = try snapshot(cli)
    let typed = "WRONG-\(UUID().uuidString)"
    let wrong = try cli.run(["unlock", "--passphrase-fd", "0", "--debug"], stdin: Array(typed.utf8))
    XCTAssertEqual(wrong.status, 5, wrong.output)
    XCTAssertTrue(wrong.stderr.contains("does not unlock"), wrong.stderr)
    XCTAssertFalse(wrong.output.contains(typed))
    let json = try cli.run(["unlock", "--passphrase-fd", "0", "--json"], stdin: Array(typed.utf8))
    XCTAssertTrue(json.stderr.contains("\"code\":\"passphrase\""), json.stderr)
    XCTAssertFalse(json.output.contains(typed))
    for arguments in [["protect", "none"], ["protect", "after-first-unlock"], ["protect", "--change-passphrase"]] {
      let result = try run(
        cli, arguments + ["--passphrase-fd", "0", "--new-passphrase-fd", "3"], stdin: typed, fd3: typed)
      XCTAssertEqual(result.status, 5, "\(arguments): \(result.output)")
      XCTAssertFalse(result.output.contains(typed))
    }
    XCTAssertEqual(try snapshot(cli).filter { !$0.key.hasPrefix("fd3-") }, before)
    XCTAssertEqual(try status(cli)["state"] as? String, "locked")
  }

  func testProtectNoneFromProtectedAsksForThePassphraseFirst() throws {
    let cli = try protectedNode()
    let id = try cli.new("kept")
    let noTerminal = try cli.run(["protect", "none"])
    XCTAssertEqual(noTerminal.status, 2, noTerminal.output)
    XCTAssertTrue(noTerminal.stderr.contains("terminal"), noTerminal.stderr)
    XCTAssertEqual(try status(cli)["protection"] as? String, "complete")
    let done = try cli.run(["protect", "none", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8))
    XCTAssertEqual(done.status, 0, done.output)
    XCTAssertEqual(try status(cli)["protection"] as? String, "none")
    XCTAssertEqual(try cli.run(["show", id]).status, 0)
    XCTAssertEqual(try cli.run(["lock"]).status, 5)
  }

  func testPassphraseChangeKeepsEveryMemoReadable() throws {
    let cli = try protectedNode()
    let ids = try (0..<3).map { try cli.new("memo \($0)", $0 == 1 ? ["--private"] : []) }
    let dataBefore = try cli.rawDataBytes()
    let newPassphrase = "a different passphrase"
    let changed = try run(
      cli, ["protect", "--change-passphrase", "--passphrase-fd", "0", "--new-passphrase-fd", "3"],
      stdin: passphrase, fd3: newPassphrase)
    XCTAssertEqual(changed.status, 0, changed.output)
    XCTAssertEqual(try cli.rawDataBytes(), dataBefore, "memos were not re-encrypted")
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    XCTAssertEqual(try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8)).status, 5)
    XCTAssertEqual(try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array(newPassphrase.utf8)).status, 0)
    for (index, id) in ids.enumerated() {
      XCTAssertEqual((try cli.json(["show", id])["memo"] as? [String: Any])?["body"] as? String, "memo \(index)")
    }
    // Teardown uses the first passphrase: put it back.
    let back = try run(
      cli, ["protect", "--change-passphrase", "--passphrase-fd", "0", "--new-passphrase-fd", "3"],
      stdin: newPassphrase, fd3: passphrase)
    XCTAssertEqual(back.status, 0, back.output)
  }

  func testANewKeyringSessionIsARebootForAfterFirstUnlock() throws {
    let cli = try protectedNode("after-first-unlock")
    let id = try cli.new("needs the key")
    XCTAssertEqual(try cli.run(["show", id]).status, 0)
    let rebooted = try run(cli, ["status", "--json"], keyctlSession: true)
    XCTAssertEqual(rebooted.status, 0, rebooted.output)
    let protection = try XCTUnwrap(
      (try JSONSerialization.jsonObject(with: Data(rebooted.stdout.utf8)) as? [String: Any])?["protection"]
        as? [String: Any])
    XCTAssertEqual(protection["state"] as? String, "locked")
    XCTAssertEqual(protection["unlocked_since_boot"] as? Bool, false)
    XCTAssertEqual(try run(cli, ["show", id], keyctlSession: true).status, 18)
    // In that new session, unlock works again.
    let script = """
      "$0" unlock --passphrase-fd 0 >/dev/null && "$0" show "$1"
      """
    let again = try cli.run(
      executable: "/usr/bin/keyctl", ["session", "-", "/bin/sh", "-c", script, CLIProcess.binary, id],
      stdin: Array(passphrase.utf8))
    XCTAssertEqual(again.status, 0, again.output)
    XCTAssertTrue(again.stdout.contains("needs the key"), again.stdout)

    // `protect none` leaves nothing of this node in the user keyring, whichever session
    // unlocked it last (the key id is bytes 30–45 of the wrapped key file).
    let keyFile = try Data(contentsOf: URL(fileURLWithPath: cli.keyDirectory + "/device.key"))
    let keyID = keyFile[30..<46].map { String(format: "%02x", $0) }.joined()
    XCTAssertEqual(try cli.run(["protect", "none", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8)).status, 0)
    for entry in ["device-key", "unlocked-since-boot"] {
      let search = try cli.run(
        executable: "/usr/bin/keyctl", ["search", "@u", "user", "memo-peer:\(keyID):\(entry)"], stdin: nil)
      XCTAssertNotEqual(search.status, 0, "\(entry) is still in the user keyring: \(search.output)")
    }
  }

  /// Another login session (a new keyring session that links the user keyring, as
  /// pam_keyinit makes) shares the one unlocked key: a lock in either locks both.
  func testLockAndUnlockReachEverySessionOfTheUser() throws {
    let cli = try protectedNode()
    func inOtherSession(_ arguments: [String], stdin: String? = nil) throws -> CLIProcess.Result {
      try cli.run(
        executable: "/usr/bin/keyctl",
        ["session", "-", "/bin/sh", "-c", "keyctl link @u @s >/dev/null && exec \"$0\" \"$@\"", CLIProcess.binary]
          + arguments, stdin: stdin.map { Array($0.utf8) })
    }
    func state(_ result: CLIProcess.Result) throws -> String? {
      let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
      return (json?["protection"] as? [String: Any])?["state"] as? String
    }
    XCTAssertEqual(try state(try inOtherSession(["status", "--json"])), "unlocked")
    XCTAssertEqual(try inOtherSession(["lock"]).status, 0)
    XCTAssertEqual(try status(cli)["state"] as? String, "locked")
    XCTAssertEqual(try inOtherSession(["unlock", "--passphrase-fd", "0"], stdin: passphrase).status, 0)
    XCTAssertEqual(try status(cli)["state"] as? String, "unlocked")
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    XCTAssertEqual(try state(try inOtherSession(["status", "--json"])), "locked")
  }

  /// Locked, the node cannot prove who it is: everything that would act as this device
  /// stops with status 18 before touching the network; only the public device ID shows.
  func testALockedNodeCannotActAsItselfAndItsKeyFilesHoldNothingInClear() throws {
    let cli = try protectedNode("after-first-unlock")
    let other = try CLIProcess()
    let peerID = try other.run(["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertEqual(try cli.run(["trust", "add", peerID, "--name", "nasbox"]).status, 0)
    let memo = try cli.new("to send")
    let deviceID = try cli.run(["id"]).stdout
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    for arguments in [
      ["sync"], ["sync", "--peer", "nasbox", "--timeout", "1"], ["send", memo, "--to", "nasbox"],
      ["send", memo, "--to", "nasbox", "--wait", "1"], ["ping", "nasbox", "--timeout", "1"], ["trust", "list"],
      ["trust", "add", peerID, "--name", "again"], ["peers"], ["id", "--certificate"],
    ] {
      let result = try cli.run(arguments)
      XCTAssertEqual(result.status, 18, "\(arguments): \(result.output)")
      XCTAssertTrue(result.stderr.contains("memo-peer unlock"), "\(arguments): \(result.stderr)")
      XCTAssertFalse(result.output.contains("nasbox"), "the trusted names stay sealed: \(arguments)")
    }
    XCTAssertEqual(try cli.run(["id"]).stdout, deviceID, "the device ID is public and stays readable")
    XCTAssertEqual(try cli.run(["outbox"]).status, 0, "the outbox lists, without the sealed names")
    for name in ["identity.key", "discovery.key"] {
      // The discovery key is made by the first command that needs it (serve, browse, pair).
      guard let bytes = FileManager.default.contents(atPath: cli.keyDirectory + "/" + name) else { continue }
      XCTAssertEqual(bytes[4], 3, "\(name) is sealed")
    }
    XCTAssertTrue(FileManager.default.fileExists(atPath: cli.keyDirectory + "/identity.key"))
    let trust = try Data(contentsOf: URL(fileURLWithPath: cli.keyDirectory + "/trusted-peers.json"))
    XCTAssertNil(trust.range(of: Data("nasbox".utf8)), "the trust store is sealed")
    XCTAssertNil(trust.range(of: Data(peerID.utf8)))
    XCTAssertEqual(try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8)).status, 0)
    XCTAssertTrue(try cli.run(["trust", "list"]).stdout.contains("nasbox"))
  }

  func testDoctorReportsHowTheProcessProtectsWhatItHolds() throws {
    let cli = try CLIProcess()
    // Without a daemon or avahi here other checks fail (status 1); these two do not depend on them.
    let doctor = try cli.run(["doctor", "--json"])
    let json = try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [String: Any]
    let checks = try XCTUnwrap(json?["checks"] as? [[String: Any]], doctor.output)
    let byName = Dictionary(
      uniqueKeysWithValues: checks.compactMap { check in (check["name"] as? String).map { ($0, check) } })
    XCTAssertEqual(byName["process protection"]?["ok"] as? Bool, true, "\(checks)")
    XCTAssertNotNil(byName["key memory"])
    if getuid() == 0 { XCTAssertEqual(byName["key memory"]?["ok"] as? Bool, true, "root may lock memory") }
  }

  func testServeWaitsWhileLockedAndGoesOnAfterUnlockWithoutARestart() throws {
    let cli = try protectedNode()
    // No consent: serve waits and touches no network.
    let serve = Process()
    serve.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    serve.arguments = ["serve"]
    serve.environment = cli.environment
    serve.standardOutput = FileHandle.nullDevice
    serve.standardError = FileHandle.nullDevice
    try serve.run()
    defer {
      serve.terminate()
      serve.waitUntilExit()
    }
    func daemon() throws -> [String: Any]? { (try cli.json(["status"])["serve"]) as? [String: Any] }
    func waitFor(_ state: String, waitingFor: String) throws -> Bool {
      let deadline = Date().addingTimeInterval(20)
      while Date() < deadline {
        let serve = try daemon()
        if serve?["store"] as? String == state, (serve?["waiting_for"] as? String)?.hasPrefix(waitingFor) == true {
          return true
        }
        Thread.sleep(forTimeInterval: 0.1)
      }
      return false
    }
    XCTAssertTrue(try waitFor("unlocked", waitingFor: "local-network consent"), "\(String(describing: try? daemon()))")
    XCTAssertEqual(try cli.run(["lock"]).status, 0)
    XCTAssertTrue(try waitFor("locked", waitingFor: "locked"), "\(String(describing: try? daemon()))")
    XCTAssertTrue(serve.isRunning)
    XCTAssertTrue(try cli.run(["status"]).stdout.contains("memos locked"))
    XCTAssertEqual(try cli.run(["unlock", "--passphrase-fd", "0"], stdin: Array(passphrase.utf8)).status, 0)
    XCTAssertTrue(try waitFor("unlocked", waitingFor: "local-network consent"), "the same daemon goes on")
  }

  func testIdleTimeoutLocksComplete() throws {
    let cli = try protectedNode()
    let result = try run(
      cli, ["protect", "complete", "--idle-timeout", "1", "--passphrase-fd", "0"], stdin: passphrase)
    XCTAssertEqual(result.status, 0, result.output)
    XCTAssertEqual(try status(cli)["idle_timeout"] as? Int, 1)
    // The kernel removes the key once the second is up; wait for it, bounded.
    let deadline = Date().addingTimeInterval(30)
    while try status(cli)["state"] as? String != "locked" && Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
    XCTAssertEqual(try status(cli)["state"] as? String, "locked")
    XCTAssertEqual(try status(cli)["unlocked_since_boot"] as? Bool, true)
  }
}
