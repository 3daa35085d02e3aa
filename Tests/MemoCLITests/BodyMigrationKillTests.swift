import Foundation
import MemoCore
import MemoNode
import MemoSystem
import XCTest

@testable import MemoStore

#if canImport(Glibc)
  import Glibc
#endif

/// Schema 12 moves every body into its record, a batch per transaction, when a command
/// first opens a store written by the code of schema 11. A `kill -9` in the middle of that
/// (twice) loses nothing: the next command goes on, and `show`, `search`, `history` and
/// `export` read every memo as before.
final class BodyMigrationKillTests: XCTestCase {
  func testKilledTwiceWhileMovingBodiesEveryMemoReadsAsBefore() throws {
    let cli = try CLIProcess()
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"])
    let count = MemoStore.bodyMigrationBatch * 5
    let bodies = (0..<count).map { "body-\($0)-end " + String(repeating: "lorem ipsum ", count: 80) }
    let made: [Memo]
    do {
      let old = try MemoStore.openForFixture(
        paths: paths, secrets: VaultStoreSecrets(paths: paths), schemaVersion: 11)
      made = try old.createMany(
        bodies.enumerated().map { MemoDraft(title: "memo \($0.offset)", body: $0.element) }, now: 1)
      try old.update(made[0].id, MemoChange(body: "edited once"), now: 2)
    }
    let database = paths.databasePath
    func moved() -> Int64? {
      guard let db = try? SQLiteConnection(path: database, create: false) else { return nil }
      return try? db.scalarInt("SELECT count(*) FROM memos WHERE length(body) = 0")
    }
    XCTAssertEqual(moved(), 0)

    // Twice: a command starts moving, and is killed once more rows are moved than before.
    var seen: Int64 = 0
    for round in 1...2 {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
      process.arguments = ["list", "--json"]
      process.environment = cli.environment
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
      let deadline = Date().addingTimeInterval(120)
      var killedAt: Int64?
      while process.isRunning && Date() < deadline {
        if let now = moved(), now > seen {
          kill(process.processIdentifier, SIGKILL)
          killedAt = now
          break
        }
        usleep(1_000)
      }
      process.waitUntilExit()
      XCTAssertEqual(process.terminationReason, .uncaughtSignal, "round \(round): killed while it moved bodies")
      let after = try XCTUnwrap(moved())
      XCTAssertGreaterThanOrEqual(after, killedAt ?? 0)
      XCTAssertLessThan(after, Int64(count), "round \(round): stopped part way")
      seen = after
    }

    // The next command finishes the move and reads every memo.
    let listed = try cli.listedIDs()
    XCTAssertEqual(listed.count, count)
    XCTAssertEqual(moved(), Int64(count), "every body is kept once, in its record")
    for index in [1, count / 2, count - 1] {
      let shown = try cli.run(["show", made[index].id.rawValue])
      XCTAssertEqual(shown.status, 0, shown.stderr)
      XCTAssertTrue(shown.stdout.contains("body-\(index)-end"), "memo \(index)")
    }
    let found = try cli.json(["search", "body-\(count - 7)-end"])["memos"] as? [[String: Any]]
    XCTAssertEqual(found?.compactMap { $0["id"] as? String }, [made[count - 7].id.rawValue])
    let history = try cli.run(["history", made[0].id.rawValue])
    XCTAssertEqual(history.status, 0, history.stderr)
    XCTAssertTrue(history.stdout.contains("edited once"), history.stdout)
    let first = try cli.run(["show", made[0].id.rawValue, "--revision", "1"])
    XCTAssertEqual(first.status, 0, first.stderr)
    XCTAssertTrue(first.stdout.contains("body-0-end"), "the revision kept before the move")
    let folder = cli.home + "/exported"
    let exported = try cli.run(["export", "--format", "markdown", folder, "--json"])
    XCTAssertEqual(exported.status, 0, exported.stderr)
    let files = try FileManager.default.contentsOfDirectory(atPath: folder)
    XCTAssertEqual(files.count, count)
    var checked = 0
    for name in files.prefix(200) {
      let text = try String(contentsOfFile: folder + "/" + name, encoding: .utf8)
      guard let index = made.firstIndex(where: { text.contains($0.id.rawValue) }), index != 0 else { continue }
      XCTAssertTrue(text.contains(bodies[index]), name)
      checked += 1
    }
    XCTAssertGreaterThan(checked, 100)
  }
}
