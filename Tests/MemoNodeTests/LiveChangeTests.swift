import MemoStore
import XCTest

@testable import MemoNode

/// What a change of the store asks of the live links (`LiveChange`), from its marks before
/// and after a wake: a revision is pushed, a change of what this device may read (an
/// accepted invitation, a share or unshare, a key generation) makes the links ask, and a
/// write that was only progress owes nothing.
final class LiveChangeTests: XCTestCase {
  let before = SyncMarks(feed: 7, membership: [2, 5, 2])

  func testTheFirstLookOwesASync() {
    XCTAssertEqual(LiveChange.between(nil, before), .push, "what changed while the daemon was down")
  }

  func testOnlyProgressOwesNothing() {
    XCTAssertEqual(LiveChange.between(before, before), .nothing)
    XCTAssertFalse(LiveChange.nothing.owesSync)
  }

  func testARevisionIsPushed() {
    var after = before
    after.feed = 8
    XCTAssertEqual(LiveChange.between(before, after), .push)
    after.membership = [3, 6, 2]
    XCTAssertEqual(LiveChange.between(before, after), .push, "a revision with a membership change is pushed")
  }

  func testAnAcceptAShareAnUnshareOrAKeyMakesTheLinksCatchUp() {
    // An accepted invitation (one more notebook held), an op arriving or made here (a share,
    // an unshare), a key generation: no revision, and still a sync is owed.
    for membership in [[3, 5, 2], [2, 6, 2], [2, 5, 3], [1, 5, 2]] as [[Int64]] {
      let after = SyncMarks(feed: 7, membership: membership)
      XCTAssertEqual(LiveChange.between(before, after), .catchUp, "\(membership)")
      XCTAssertTrue(LiveChange.between(before, after).owesSync)
    }
  }
}
