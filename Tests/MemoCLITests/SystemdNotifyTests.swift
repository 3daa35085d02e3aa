import Foundation
import MemoTestSupport
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: what `serve` tells it, in order.
final class NotifySocket {
  let path: String
  private let fd: Int32

  init(path: String) throws {
    self.path = path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
  }

  deinit {
    close(fd)
    unlink(path)
  }

  /// The next datagram, or nil after `seconds` without one (a deadline so a broken daemon
  /// fails the test instead of hanging it; not a measurement).
  func receive(within seconds: Double) -> String? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, Int32(seconds * 1000)) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = recv(fd, &buffer, buffer.count, 0)
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
  }
}

/// `serve` under a Type=notify unit: READY, STATUS, WATCHDOG, RELOADING/READY around a trust
/// reload, STOPPING on SIGTERM, through libsystemd's sd_notify; and journal priorities.
final class SystemdNotifyTests: XCTestCase {
  /// Waits for the next message that is not a watchdog ping, counting the pings.
  func next(_ socket: NotifySocket, _ pings: inout Int) -> String? {
    while let message = socket.receive(within: 30) {
      if message == "WATCHDOG=1" {
        pings += 1
        continue
      }
      return message
    }
    return nil
  }

  func testServeTellsTheServiceManagerItsStatesInOrder() throws {
    let cli = try CLIProcess()
    let socket = try NotifySocket(path: cli.home + "/notify.sock")
    let errPath = cli.home + "/serve.err"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let errHandle = try XCTUnwrap(FileHandle(forWritingAtPath: errPath))
    var info = stat()
    XCTAssertEqual(stat(errPath, &info), 0)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    process.arguments = ["serve"]
    process.environment = cli.environment.merging([
      "NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "400000",
      // stderr is "the journal": the file whose device and inode JOURNAL_STREAM names.
      "JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)",
      // No system bus: nothing here may reach an avahi-daemon of the root namespace.
      "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(cli.home)/no-bus",
    ]) { $1 }
    process.standardError = errHandle
    process.standardOutput = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    defer { if process.isRunning { process.terminate() } }

    var pings = 0
    XCTAssertEqual(next(socket, &pings), "STATUS=waiting: local-network consent")
    XCTAssertEqual(next(socket, &pings), "READY=1")
    // A change of the trust store is reloaded between RELOADING=1 and READY=1.
    let other = try CLIProcess()
    let device = try other.run(["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    XCTAssertEqual(try cli.run(["trust", "add", device, "--name", "desk"]).status, 0)
    XCTAssertEqual(next(socket, &pings), "RELOADING=1")
    XCTAssertEqual(next(socket, &pings), "READY=1")
    // `systemctl reload` (SIGHUP) does the same without a change.
    kill(process.processIdentifier, SIGHUP)
    XCTAssertEqual(next(socket, &pings), "RELOADING=1")
    XCTAssertEqual(next(socket, &pings), "READY=1")
    // Watchdog pings come every half WATCHDOG_USEC; wait for at least one.
    while pings == 0, let message = socket.receive(within: 30) {
      if message == "WATCHDOG=1" { pings += 1 } else { XCTFail("unexpected \(message)") }
    }
    XCTAssertGreaterThan(pings, 0)
    process.terminate()  // SIGTERM
    XCTAssertEqual(next(socket, &pings), "STOPPING=1")
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0)

    let journal = try String(contentsOfFile: errPath, encoding: .utf8)
    XCTAssertTrue(
      journal.hasPrefix("<5>memo-peer serve: waiting (local-network consent)\n"), "priority prefix: \(journal)")
    XCTAssertTrue(journal.split(separator: "\n").allSatisfy { $0.hasPrefix("<") }, journal)
  }

  /// Outside the journal (a terminal, a file) each of serve's lines starts with its time,
  /// RFC 3339 in UTC with milliseconds, so a fault can be lined up with what it did.
  func testServeLinesCarryTheirTimeOutsideTheJournal() throws {
    let cli = try CLIProcess()
    let errPath = cli.home + "/serve.err"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let errHandle = try XCTUnwrap(FileHandle(forWritingAtPath: errPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    process.arguments = ["serve"]
    // No consent: serve waits and says so; no system bus, so nothing reaches an
    // avahi-daemon of the root namespace.
    process.environment = cli.environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(cli.home)/no-bus"]) {
      $1
    }
    process.standardError = errHandle
    process.standardOutput = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var text = ""
    for _ in 0..<100 where !text.contains("\n") {
      usleep(100_000)
      text = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    }
    process.terminate()
    process.waitUntilExit()
    let first = try XCTUnwrap(text.split(separator: "\n").first.map(String.init), "serve said nothing")
    let stamp = try XCTUnwrap(first.split(separator: " ").first.map(String.init))
    XCTAssertNotNil(
      stamp.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/), "a time first: \(first)")
    XCTAssertTrue(first.dropFirst(stamp.count + 1).hasPrefix("memo-peer serve: waiting ("), first)
  }

  /// Without JOURNAL_STREAM (or when stderr is not that stream) lines carry no prefix; an
  /// error is priority 3 in the journal.
  func testJournalPrioritiesOnlyOnTheJournal() throws {
    let cli = try CLIProcess()
    let plain = try cli.run(["show", "abcd"])
    XCTAssertEqual(plain.status, 3)
    XCTAssertTrue(plain.stderr.hasPrefix("memo-peer: "), plain.stderr)
    let elsewhere = try cli.run(["show", "abcd"], extraEnvironment: ["JOURNAL_STREAM": "1:1"])
    XCTAssertTrue(elsewhere.stderr.hasPrefix("memo-peer: "), "a stream that is not stderr: no prefix")

    let errPath = cli.home + "/err"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    var info = stat()
    XCTAssertEqual(stat(errPath, &info), 0)
    let shell = try cli.run(
      executable: "/bin/sh", ["-c", "exec \"$0\" show abcd 2>>\"$1\"", CLIProcess.binary, errPath], stdin: nil,
      extraEnvironment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"])
    XCTAssertEqual(shell.status, 3)
    let lines = try String(contentsOfFile: errPath, encoding: .utf8).split(separator: "\n")
    XCTAssertEqual(lines.count, 2)
    XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("<3>") }, "\(lines)")
  }
}
