import Foundation
import MemoSystem
import XCTest

/// The watch `serve`'s live push wakes on: a write in the folder, by this process or
/// another, reads as a change once; nothing written, no change; it never waits.
final class FolderChangeWatchTests: XCTestCase {
  func testAWriteInTheFolderIsSeenOnceAndNothingElseIs() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let watch = try FolderChangeWatch(folder: folder.path)
    XCTAssertFalse(watch.takeChanges(), "nothing written yet")
    try Data("one".utf8).write(to: folder.appendingPathComponent("memos.sqlite-wal"))
    XCTAssertTrue(watch.takeChanges())
    XCTAssertFalse(watch.takeChanges(), "the queue was emptied")
    let handle = try FileHandle(forWritingTo: folder.appendingPathComponent("memos.sqlite-wal"))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data("two".utf8))
    try handle.close()
    XCTAssertTrue(watch.takeChanges(), "an append to a file that was there")
    _ = try Data(contentsOf: folder.appendingPathComponent("memos.sqlite-wal"))
    XCTAssertFalse(watch.takeChanges(), "reading is not a change")
  }

  func testAFolderThatIsNotThereIsRefusedWithItsErrno() {
    XCTAssertThrowsError(try FolderChangeWatch(folder: "/nonexistent/memo-peer-watch")) { error in
      XCTAssertEqual((error as? SystemError)?.errno, Errno(ENOENT), "\(error)")
    }
  }
}
