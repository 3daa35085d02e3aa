import MemoApp
import MemoCore
import MemoStore
import XCTest

/// The outbox and inbox use cases without a network: queueing, expiry, retry and cancel.
final class DeliveryUseCaseTests: XCTestCase {
  func testASendQueuesForATrustedDeviceOnly() throws {
    let node = try AppFixture()
    let memo = try node.memo("for the desk", title: "Desk")
    XCTAssertThrowsError(try node.app().delivery.send(.memo(memo.id.short), to: "desk", prompt: NobodyToAsk())) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
    try node.app().trustStore.update { try $0.trust(SyncUseCaseTests.desk) }
    let sent = try node.app().delivery.send(.memo(memo.id.short), to: "desk", prompt: NobodyToAsk())
    XCTAssertNil(sent.problem, "queued, not waited for")
    XCTAssertEqual(sent.entry.state, .queued)
    XCTAssertEqual(sent.peer.name, "desk")
    let json = OutboxJSON(entries: [.init(sent.entry, name: sent.peer.name)])
    XCTAssertEqual(json.entries.first?.deviceID, SyncUseCaseTests.desk.deviceID.compact)
    XCTAssertEqual(json.entries.first?.state, "queued")
    var read = false
    let text = try node.app().delivery.send(
      .text {
        read = true
        return "Typed on stdin\nand more"
      }, to: "desk", prompt: NobodyToAsk())
    XCTAssertTrue(read)
    XCTAssertEqual(try node.app().delivery.outbox().map(\.id), [sent.entry.id, text.entry.id])
  }

  func testAnEntryPastItsExpiryIsExpiredAndCanBeRetriedOrCancelledOnce() throws {
    let node = try AppFixture()
    let memo = try node.memo("soon stale")
    try node.app().trustStore.update { try $0.trust(SyncUseCaseTests.desk) }
    let sent = try node.app().delivery.send(
      .memo(memo.id.rawValue), to: "desk", expiresAfter: 1, prompt: NobodyToAsk())
    // The fixture's clock moves a second at every reading.
    XCTAssertEqual(try node.app().delivery.outbox().first?.state, .expired)
    XCTAssertEqual(try node.app().delivery.retry(String(sent.entry.id.prefix(8))).state, .expired)
    XCTAssertEqual(try node.app().delivery.cancel(sent.entry.id).id, sent.entry.id)
    XCTAssertThrowsError(try node.app().delivery.cancel(sent.entry.id)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .invalidInput)
      XCTAssertTrue(($0 as? MemoPeerError)?.message.hasSuffix("it cannot be cancelled") ?? false)
    }
    XCTAssertThrowsError(try node.app().delivery.retry(sent.entry.id)) {
      XCTAssertTrue(($0 as? MemoPeerError)?.message.hasSuffix("nothing to retry") ?? false)
    }
    XCTAssertEqual(try node.app().delivery.inbox().count, 0)
    XCTAssertThrowsError(try node.app().delivery.accept("abcdef12")) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
  }
}
