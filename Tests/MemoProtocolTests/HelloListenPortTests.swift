import MemoProtocol
import XCTest

/// `hello`'s `listen_port`: a daemon's, carried both ways; a value out of range is ignored
/// without refusing the hello; a hello without one is an older peer's or a command's.
final class HelloListenPortTests: XCTestCase {
  func hello(_ json: String) -> PeerMessage.Hello? {
    PeerMessage.decode(PeerMessage.Hello.self, from: Array(json.utf8))
  }

  let key = String(repeating: "A", count: 43) + "="

  func testThePortRoundTripsAndOnlyOneInRangeCounts() throws {
    let sent = PeerMessage.Hello(discoveryKey: key, rotationSeconds: 900, listenPort: 7878)
    let received = try XCTUnwrap(PeerMessage.decode(PeerMessage.Hello.self, from: PeerMessage.encode(sent)))
    XCTAssertEqual(received.announcedPort, 7878)
    for (port, expected) in [("0", nil), ("70000", nil), ("-1", nil), ("65535", UInt16(65535)), ("1", UInt16(1))] {
      let decoded = try XCTUnwrap(
        hello(#"{"protocol": 1, "discovery_key": "\#(key)", "rotation_seconds": 900, "listen_port": \#(port)}"#), port)
      XCTAssertEqual(decoded.announcedPort, expected, port)
    }
    XCTAssertNil(try XCTUnwrap(hello(#"{"protocol": 1, "discovery_key": "\#(key)"}"#)).announcedPort)
    XCTAssertNil(
      hello(#"{"protocol": 1, "discovery_key": "\#(key)", "listen_port": "7878"}"#), "a port as text is malformed")
  }
}
