import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import XCTest

/// A daemon stopped inside a write transaction (issue 39): a person's command on its host
/// either writes (the daemon held no lock) or fails within the documented bound
/// (`MemoStore.busyTimeoutMilliseconds`) with a message naming the daemon's pid; once the
/// daemon is continued nothing is lost.
final class StuckDaemonLabTests: LabTestCase {
  override class var hosts: [String] { ["a", "b"] }

  func serve(_ host: String) throws -> Background {
    let server = try start(host, ["--debug", "serve"])
    XCTAssertTrue(Lab.waitUntil(seconds: 10) { server.text.contains("advertising") }, server.text)
    return server
  }

  /// The live memos `list --json` shows on `host`.
  func titles(_ host: String) throws -> [String] {
    let listed = object(try ok(host, ["list", "--json"]))["memos"] as? [[String: Any]] ?? []
    return listed.compactMap { $0["title"] as? String }
  }

  /// Creates `count` memos of 8 KiB on `host` straight in its store; the store is closed
  /// when this returns.
  func fill(_ host: String, _ count: Int) throws {
    let store = try MemoStore.open(paths: try Lab.paths(host))
    let filler = String(repeating: "lorem ipsum ", count: 8192 / 12)
    let now = Timestamp((Date().timeIntervalSince1970 * 1000).rounded())
    _ = try store.createMany(
      (0..<count).map { MemoDraft(title: "bulk \($0)", body: "bulk \($0)\n\(filler)") }, now: now)
  }

  /// Whether `pid` holds the write lock of `host`'s database now, by `/proc/locks`.
  func holdsWriteLock(_ pid: Int32, on host: String) throws -> Bool {
    let database = try Lab.paths(host).databasePath
    func file(_ path: String) -> LockedFile? {
      var info = stat()
      guard stat(path, &info) == 0 else { return nil }
      return LockedFile(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
    let files = DatabaseFiles(database: file(database), sharedMemory: file(database + "-shm"))
    let locks = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
    return ProcLocks.writer(in: locks, of: files, own: getpid()) == pid
  }

  func testAPersonWritesOrIsToldWhoHoldsTheLockWhenServeStopsMidWrite() throws {
    for host in ["a", "b"] { try ok(host, ["consent", "grant"]) }
    let a = try deviceID("a")
    let b = try deviceID("b")
    try ok("a", ["trust", "add", b, "--name", "bee"])
    try ok("b", ["trust", "add", a, "--name", "ay"])
    try Lab.shareOneNotebook(["a", "b"])
    // b pushes a large sync to a's serve: many batches, each a write transaction on a.
    let count = 3000
    try fill("b", count)
    let serveA = try serve("a")
    let pid = serveA.process.processIdentifier
    let pusher = try start("b", ["sync", "--peer", "ay", "--timeout", "60"])

    // Stop a's serve until it is caught holding the write lock (bounded attempts).
    var caught = false
    var attempts = 0
    let deadline = Date().addingTimeInterval(120)
    while !caught && attempts < 2000 && pusher.process.isRunning && Date() < deadline {
      attempts += 1
      kill(pid, SIGSTOP)
      // The stop takes effect once the kernel schedules it: state T in /proc/PID/stat.
      _ = Lab.waitUntil(seconds: 2) {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return ProcLocks.state(fromStat: stat) == "T"
      }
      if try holdsWriteLock(pid, on: "a") {
        caught = true
      } else {
        kill(pid, SIGCONT)
        Thread.sleep(forTimeInterval: Double(attempts % 7) * 0.003)
      }
    }
    XCTAssertTrue(caught, "a's serve was never stopped inside a write (\(attempts) attempts): \(pusher.text)")
    print("stuck daemon lab: serve (pid \(pid)) stopped holding the write lock after \(attempts) attempts")

    // A person on a writes a memo while the daemon is stopped.
    let person = try XCTUnwrap(
      Lab.startTool("a", "sh", ["-c", "echo 'written while serve is stopped' | \"$0\" new --title stuck", Lab.binary]))
    background.append(person)
    let status = person.exitStatus(within: 60)
    XCTAssertNotNil(status, "memo-peer new never returned while serve was stopped: \(person.text)")
    print("stuck daemon lab: new exited \(status.map(String.init) ?? "-"): \(person.text)")
    if caught {
      XCTAssertTrue(status == 0 || status == 7, "new: \(String(describing: status)): \(person.text)")
      if status == 7 {
        XCTAssertTrue(person.text.contains("memo-peer serve, pid \(pid),"), "the error names serve: \(person.text)")
        XCTAssertTrue(person.text.contains("kill -CONT \(pid)"), "the error says what to do: \(person.text)")
      }
    }

    // Continued, the daemon finishes the sync and nothing is lost.
    kill(pid, SIGCONT)
    XCTAssertEqual(pusher.exitStatus(within: 180), 0, "b's sync: \(pusher.text)")
    let onA = try titles("a")
    XCTAssertEqual(onA.filter { $0.hasPrefix("bulk ") }.count, count, "every pushed memo is on a")
    XCTAssertEqual(onA.contains("stuck"), status == 0, "the person's memo is there exactly when new succeeded")
  }
}
