import MemoApp
import MemoCore
import MemoPresentation
import MemoProtocol
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

  /// `outbox --json` and `inbox --json` (and the page's inbox) name devices by their
  /// compact ID, byte for byte as when the store handed out the IDs as the rows' text; a
  /// device not trusted here is named by the ID's first 8 characters.
  func testTheOutboxAndInboxJSONNameDevicesAsBefore() throws {
    let node = try AppFixture()
    let memo = try node.memo("for the desk", title: "Desk")
    try node.app().trustStore.update { try $0.trust(SyncUseCaseTests.desk) }
    let sent = try node.app().delivery.send(.memo(memo.id.short), to: "desk", prompt: NobodyToAsk())
    let desk = SyncUseCaseTests.desk.deviceID.compact
    let names = try node.app().peerNames()
    let outbox = OutboxJSON(entries: try node.app().delivery.outbox().map { .init($0, name: names[$0.recipient]) })
    XCTAssertEqual(
      String(decoding: JSONOutput.encode(outbox), as: UTF8.self),
      #"{"entries":[{"attempts":0,"created":"\#(TimeText.iso(sent.entry.created))","device_id":"\#(desk)","#
        + #""id":"\#(sent.entry.id)","state":"queued","to":"desk"}],"schema":1}"# + "\n")

    let stranger = try XCTUnwrap(DeviceID(String(repeating: "B", count: 51) + "Q"))
    let content = DeliveryMessage.Content(title: "Hi", body: "b", tags: ["x"], isPrivate: false, sent: 1_000)
    let store = try node.app().store()
    for (id, sender) in [("e-1", stranger), ("e-2", SyncUseCaseTests.desk.deviceID)] {
      _ = try store.receiveDelivery(
        id: id, from: sender, memo: content, size: 10, policy: nil, limits: ReceiveLimits(), now: 2_000)
    }
    let inbox = InboxJSON(try node.app().delivery.inbox(), names: try node.app().peerNames())
    let entry = { (id: String, from: String, device: String) in
      #"{"device_id":"\#(device)","from":"\#(from)","id":"\#(id)","received":"\#(TimeText.iso(2_000))","#
        + #""sent":"\#(TimeText.iso(1_000))","tags":["x"],"title":"Hi"}"#
    }
    XCTAssertEqual(
      String(decoding: JSONOutput.encode(inbox), as: UTF8.self),
      #"{"entries":["# + entry("e-1", "BBBBBBBB…", stranger.compact) + "," + entry("e-2", "desk", desk)
        + #"],"schema":1}"# + "\n")
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
