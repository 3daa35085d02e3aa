import Foundation
import MemoCore
import MemoNode
import MemoProtocol
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// `serve` as a user daemon tells the desktop about memos arriving in the inbox, through a
/// real session bus (dbus-run-session) and python3-dbusmock's notification daemon: summary,
/// body, redaction of private memos, `notifications: false`, and the Open action.
final class DesktopNotificationTests: XCTestCase {
  /// Waits for `condition`, up to a deadline that only stops a broken run from hanging.
  func eventually(_ what: String, _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(60)
    while !condition() {
      guard Date() < deadline else { return XCTFail("gave up waiting for \(what)") }
      Thread.sleep(forTimeInterval: 0.1)
    }
  }

  func testArrivalsAreAnnouncedRedactedWhenPrivateAndTheOpenActionRunsATerminal() throws {
    let session = try RequiredTool.path("dbus-run-session", package: "dbus")
    _ = try RequiredTool.file("/usr/lib/python3/dist-packages/dbusmock/__init__.py", package: "python3-dbusmock")
    let cli = try CLIProcess()
    _ = try cli.new("Something here\nbody")
    let desk = try CLIProcess()
    let deskID = try desk.run(["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertEqual(try cli.run(["trust", "add", deskID, "--name", "desk"]).status, 0)
    try FileManager.default.createDirectory(atPath: cli.home + "/bin", withIntermediateDirectories: true)
    _ = try cli.script(
      "bin/x-terminal-emulator",
      "printf '%s\\n' \"$@\" > \"$HOME/terminal.args.tmp\"; mv \"$HOME/terminal.args.tmp\" \"$HOME/terminal.args\"\n")
    let home = cli.home
    let script = try cli.script(
      "session.sh",
      """
      cd "$HOME"
      /usr/bin/python3 -m dbusmock --template notification_daemon -l "$HOME/notify.log" &
      mock=$!
      i=0
      until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q true; do
        i=$((i + 1)); [ "$i" -gt 600 ] && exit 3; sleep 0.1
      done
      memo-peer serve 2>"$HOME/serve.err" &
      serve=$!
      echo "$DBUS_SESSION_BUS_ADDRESS" > "$HOME/bus.tmp" && mv "$HOME/bus.tmp" "$HOME/bus"
      i=0
      until [ -e "$HOME/done" ]; do i=$((i + 1)); [ "$i" -gt 1200 ] && break; sleep 0.1; done
      kill "$serve"; wait "$serve"; echo "serve_status=$?"
      kill "$mock"
      """)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: session)
    process.arguments = ["--", "/bin/sh", script]
    let binaries = (CLIProcess.binary as NSString).deletingLastPathComponent
    process.environment = cli.environment.merging([
      "PATH": "\(home)/bin:\(binaries):/usr/bin:/bin",
      // Nothing here may reach an avahi-daemon of the root namespace.
      "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(home)/no-bus",
    ]) { $1 }
    let output = home + "/session.out"
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: output)
    process.standardError = FileHandle(forWritingAtPath: output)
    try process.run()
    defer {
      _ = FileManager.default.createFile(atPath: home + "/done", contents: nil)
      process.waitUntilExit()
    }
    eventually("the session bus") { FileManager.default.fileExists(atPath: home + "/bus") }
    let paths = try NodePaths.resolve(environment: cli.environment)
    eventually("serve to start") { FileManager.default.fileExists(atPath: paths.stateDirectory + "/serve.json") }
    // serve takes its baseline on its first check, at start: what came before is not news.
    Thread.sleep(forTimeInterval: 2)
    let log = home + "/notify.log"
    func notices() -> [String] {
      let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
      return text.components(separatedBy: "Notify \"memo-peer\"").dropFirst().map { $0 }
    }
    func deliver(_ id: String, title: String, isPrivate: Bool) throws {
      let store = try MemoStore.open(paths: paths)
      let content = DeliveryMessage.Content(
        title: title, body: "SECRET-BODY \(id)", tags: [], isPrivate: isPrivate, sent: 1)
      let outcome = try store.receiveDelivery(
        id: id, from: DeviceID(deskID)!, memo: content, size: 100, policy: .ask, limits: ReceiveLimits(),
        now: 2)
      XCTAssertEqual(outcome, .stored("inbox", duplicate: false))
    }

    try deliver("a1b2c3d4-entry-one", title: "Groceries <b>&", isPrivate: false)
    eventually("the first notice") { notices().count == 1 }
    let first = notices()[0]
    XCTAssertTrue(first.contains("\"A memo from desk\""), first)
    XCTAssertTrue(first.contains("Groceries &lt;b&gt;&amp;"), "the title, markup escaped: \(first)")
    XCTAssertTrue(first.contains("memo-peer inbox accept a1b2c3d4"), first)
    XCTAssertTrue(first.contains("[\"default\", \"Open\"]"), first)
    XCTAssertFalse(first.contains("SECRET-BODY"), "never the body")

    try deliver("e5f6a7b8-entry-two", title: "SECRET-TITLE", isPrivate: true)
    eventually("the second notice") { notices().count == 2 }
    let second = notices()[1]
    XCTAssertTrue(second.contains("A memo arrived from desk"), second)
    XCTAssertFalse(second.contains("SECRET"), "a private memo's title is not shown: \(second)")

    // The Open action of the first notice (id 1) opens a terminal on `memo-peer inbox`.
    let emit = try ProcessRunner.run(
      "/usr/bin/python3",
      [
        "-c",
        "import dbus,sys; b=dbus.bus.BusConnection(sys.argv[1]); "
          + "o=b.get_object('org.freedesktop.Notifications','/org/freedesktop/Notifications'); "
          + "o.EmitSignal('org.freedesktop.Notifications','ActionInvoked','us',[dbus.UInt32(1),'default'],"
          + "dbus_interface='org.freedesktop.DBus.Mock')",
        try String(contentsOfFile: home + "/bus", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
      ], environment: ["PATH": "/usr/bin:/bin"])
    XCTAssertEqual(emit.status, 0, emit.stderr)
    eventually("the terminal") { FileManager.default.fileExists(atPath: home + "/terminal.args") }
    let arguments = try String(contentsOfFile: home + "/terminal.args", encoding: .utf8).split(separator: "\n")
    XCTAssertEqual(arguments.first, "-e")
    XCTAssertTrue(arguments.dropFirst().first?.hasSuffix("/memo-peer") ?? false, "\(arguments)")
    XCTAssertEqual(arguments.last, "inbox")

    // notifications: false silences it; the widget still counts the inbox.
    try FileManager.default.createDirectory(atPath: home + "/node/config", withIntermediateDirectories: true)
    try #"{"notifications": false}"#.write(toFile: home + "/node/config/config.json", atomically: true, encoding: .utf8)
    try deliver("c9d0e1f2-entry-three", title: "Third", isPrivate: false)
    Thread.sleep(forTimeInterval: 3)  // several checks; none may announce it
    XCTAssertEqual(notices().count, 2)
    XCTAssertTrue(try cli.run(["widget"]).stdout.contains("· 3 in inbox"))
  }
}
