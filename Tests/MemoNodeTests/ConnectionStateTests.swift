import MemoNode
import XCTest

final class ConnectionStateTests: XCTestCase {
  func testTheStateMachineAllowsWaitingBackAndForthButNothingAfterAnEnd() {
    let reasons: [WaitReason] = [.localNetworkConsent, .peerNotFound, .peerUnreachable]
    XCTAssertTrue(ConnectionState.setup.allows(.waiting(.localNetworkConsent)))
    XCTAssertTrue(ConnectionState.waiting(.peerNotFound).allows(.preparing))
    XCTAssertTrue(ConnectionState.preparing.allows(.waiting(.peerUnreachable)))
    XCTAssertTrue(ConnectionState.preparing.allows(.ready))
    XCTAssertFalse(ConnectionState.waiting(.peerNotFound).allows(.ready), "ready only after preparing")
    XCTAssertFalse(ConnectionState.ready.allows(.preparing))
    XCTAssertTrue(ConnectionState.ready.allows(.cancelled))
    for reason in reasons {
      XCTAssertFalse(ConnectionState.waiting(reason).allows(.waiting(reason)), "no repeated report")
      XCTAssertFalse(ConnectionState.failed("x").allows(.waiting(reason)))
      XCTAssertFalse(ConnectionState.cancelled.allows(.waiting(reason)))
    }
  }
}
