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
}
