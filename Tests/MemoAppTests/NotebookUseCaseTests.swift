import MemoApp
import MemoCore
import MemoStore
import XCTest

/// The notebook use cases: which memos go where, and to whom.
final class NotebookUseCaseTests: XCTestCase {
  func testANewDefaultNotebookTakesNewMemosAndADeleteMovesThemFirst() throws {
    let node = try AppFixture()
    let work = try node.app().notebooks.create("work")
    XCTAssertEqual(try node.app().notebooks.makeDefault("work").id, work.id)
    let memo = try node.memo("in work now")
    XCTAssertEqual(memo.notebook, work.id)
    XCTAssertEqual(try node.app().notebooks.summary(of: work).memos, 1)
    let home = try node.app().notebooks.create("home")
    XCTAssertThrowsError(try node.app().notebooks.delete("work", moveTo: nil), "it has a memo") { _ in }
    _ = try node.app().notebooks.makeDefault("home")
    let deleted = try node.app().notebooks.delete("work", moveTo: "home")
    XCTAssertEqual(deleted.moved, 1)
    XCTAssertEqual(try node.app().memos.show(memo.id.rawValue).notebook, home.id)
    XCTAssertThrowsError(try node.app().notebooks.summary(of: work)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
  }

  func testSharingNeedsATrustedDeviceAndUnsharingNamesAMember() throws {
    let node = try AppFixture()
    _ = try node.app().notebooks.create("family")
    XCTAssertThrowsError(try node.app().notebooks.share("family", with: "desk", as: .member)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound, "nobody is trusted yet")
    }
    let desk = TrustedPeer(
      deviceID: try XCTUnwrap(DeviceID(String(repeating: "A", count: 52))), name: "desk", discoveryKey: nil,
      source: .command, added: 1)
    try node.app().trustStore.update { try $0.trust(desk) }
    let shared = try node.app().notebooks.share("family", with: "desk", as: .relay)
    XCTAssertEqual(shared.peer.deviceID, desk.deviceID)
    XCTAssertEqual(try node.app().notebooks.summary(of: shared.notebook).members.map(\.role), [.relay])
    XCTAssertThrowsError(try node.app().notebooks.unshare("family", from: "laptop")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    let unshared = try node.app().notebooks.unshare("family", from: "desk")
    XCTAssertEqual(unshared.device, desk.deviceID)
    XCTAssertEqual(unshared.result.role, .relay)
    XCTAssertFalse(unshared.result.rotated, "a relay never had the key")
  }
}
