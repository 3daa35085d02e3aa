import Foundation
import MemoSystem
import XCTest

/// The watch `serve` sleeps on: a write in a watched folder, by this process or another,
/// reads as a change of that folder once; nothing written, no change; a poke from another
/// thread ends a wait; a folder that is not there is not watched until it is.
final class FolderChangeWatchTests: XCTestCase {
  private func makeFolder(_ name: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
    return folder
  }

  func testAWriteInAFolderIsSeenOnceAsThatFolderAndNothingElseIs() throws {
    let (data, state) = (try makeFolder("data"), try makeFolder("state"))
    let watch = try FolderChangeWatch()
    XCTAssertTrue(watch.watch(data.path))
    XCTAssertTrue(watch.watch(state.path))
    XCTAssertEqual(watch.takeChanges(), [], "nothing written yet")
    try Data("one".utf8).write(to: data.appendingPathComponent("memos.sqlite-wal"))
    XCTAssertEqual(watch.takeChanges(), [data.path])
    XCTAssertEqual(watch.takeChanges(), [], "the queue was emptied")
    let handle = try FileHandle(forWritingTo: data.appendingPathComponent("memos.sqlite-wal"))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data("two".utf8))
    try handle.close()
    try Data("{}".utf8).write(to: state.appendingPathComponent("consent.log"))
    XCTAssertEqual(watch.takeChanges(), [data.path, state.path], "an append to a file that was there, and a new file")
    _ = try Data(contentsOf: data.appendingPathComponent("memos.sqlite-wal"))
    XCTAssertEqual(watch.takeChanges(), [], "reading is not a change")
    let opened = open(data.appendingPathComponent("memos.sqlite").path, O_RDWR | O_CREAT, 0o600)
    XCTAssertGreaterThanOrEqual(opened, 0)
    close(opened)
    XCTAssertEqual(watch.takeChanges(), [], "opening for writing and closing unchanged is not a change")
    try Data("x".utf8).write(to: data.appendingPathComponent("memos.sqlite.tmp"))
    try FileManager.default.moveItem(
      at: data.appendingPathComponent("memos.sqlite.tmp"), to: data.appendingPathComponent("renamed"))
    XCTAssertEqual(watch.takeChanges(), [data.path], "a rename into the folder")
    try FileManager.default.removeItem(at: data.appendingPathComponent("renamed"))
    XCTAssertEqual(watch.takeChanges(), [data.path], "a removal")
  }

  func testWritesToIgnoredFilesDoNotCount() throws {
    let data = try makeFolder("data")
    let watch = try FolderChangeWatch()
    watch.watch(data.path, ignoring: ["-shm", ".open-lock"])
    try Data("shared memory".utf8).write(to: data.appendingPathComponent("memos.sqlite-shm"))
    try Data("lock".utf8).write(to: data.appendingPathComponent("memos.sqlite.open-lock"))
    XCTAssertEqual(watch.takeChanges(), [], "SQLite's shared memory and the open lock")
    try Data("wal".utf8).write(to: data.appendingPathComponent("memos.sqlite-wal"))
    XCTAssertEqual(watch.takeChanges(), [data.path])
  }

  func testAWaitEndsAtAWriteOrAPokeAndOtherwiseWhenItsTimeIsUp() throws {
    let data = try makeFolder("data")
    let watch = try FolderChangeWatch()
    watch.watch(data.path)
    XCTAssertEqual(watch.wait(upTo: 0.05), FolderChangeWatch.Wake(), "nothing happened")
    try Data("one".utf8).write(to: data.appendingPathComponent("memos.sqlite"))
    XCTAssertEqual(watch.wait(upTo: 30), FolderChangeWatch.Wake(folders: [data.path], poked: false))
    let poker = Thread { watch.poke() }
    poker.start()
    XCTAssertEqual(watch.wait(upTo: 30), FolderChangeWatch.Wake(folders: [], poked: true))
    watch.poke()
    watch.poke()
    XCTAssertEqual(watch.wait(upTo: 30).poked, true, "two pokes before the wait: one wake")
    XCTAssertEqual(watch.wait(upTo: 0.05), FolderChangeWatch.Wake(), "and not a second")
  }

  func testAFolderThatIsNotThereIsWatchedOnceItIs() throws {
    let parent = try makeFolder("parent")
    let later = parent.appendingPathComponent("later").path
    let watch = try FolderChangeWatch()
    XCTAssertFalse(watch.watch(later))
    XCTAssertFalse(watch.isWatching(later))
    try FileManager.default.createDirectory(atPath: later, withIntermediateDirectories: false)
    XCTAssertTrue(watch.watch(later))
    XCTAssertTrue(watch.watch(later), "a second watch of it is the same watch")
    try Data("x".utf8).write(to: URL(fileURLWithPath: later + "/f"))
    XCTAssertEqual(watch.takeChanges(), [later])
  }
}
