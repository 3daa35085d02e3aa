import MemoCore
import XCTest

@testable import MemoStore

/// What a kept-open connection sees of another's writes: the daemon's live sync reads the
/// feed through one store it keeps open, and the page asks for the change mark twice a
/// second. Both must move with each revision another connection (the CLI) stores.
final class ChangeMarkTests: XCTestCase {
  func testAKeptOpenStoreSeesTheFeedAndTheMarkMoveWithAnotherConnectionsWrites() throws {
    let node = try TemporaryNode()
    let reader = try node.open()
    let (feed, mark) = (try reader.feedEnd(), try reader.changeMark())
    XCTAssertEqual(try reader.feedEnd(), feed, "nothing written")
    let writer = try node.open()
    _ = try writer.create(MemoDraft(title: "from the CLI", body: "x", tags: []), now: 1)
    XCTAssertGreaterThan(try reader.feedEnd(), feed)
    XCTAssertNotEqual(try reader.changeMark(), mark)
    let later = try reader.changeMark()
    XCTAssertEqual(try reader.changeMark(), later, "nothing more written")
  }

  /// A purge and an emptied trash change what the page shows without storing a revision:
  /// the mark moves with both, so an open page drops a purged memo at once.
  func testThePurgeAndTheEmptiedTrashMoveTheMark() throws {
    let node = try TemporaryNode()
    let store = try node.open()
    let kept = try store.create(MemoDraft(title: "kept", body: "x", tags: []), now: 1)
    let doomed = try store.create(MemoDraft(title: "doomed", body: "y", tags: []), now: 1)
    try store.delete(kept.id, now: 2)
    let beforeEmpty = try store.changeMark()
    XCTAssertEqual(try store.emptyTrash(), 1)
    let beforePurge = try store.changeMark()
    XCTAssertNotEqual(beforePurge, beforeEmpty, "the trash emptied")
    _ = try store.purge(doomed.id, now: 3)
    XCTAssertNotEqual(try store.changeMark(), beforePurge, "a purge")
  }
}
