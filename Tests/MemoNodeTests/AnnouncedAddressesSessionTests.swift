import MemoCore
import MemoProtocol
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoNode

/// A trusted peer's hello says where its daemon listens (`listen_addresses`): the daemon
/// keeps it for that peer only; an oversized or malformed list is refused whole, logged
/// with the peer, and nothing of it is stored, while the rest of the hello still counts.
final class AnnouncedAddressesSessionTests: XCTestCase {
  /// `a` greets `b`'s daemon with `addresses` at `port`, then pings once and leaves.
  func greet(_ b: TestNode, from a: TestNode, addresses: [String]?, port: UInt16?, log: CapturingLog) throws {
    var identity = a.identity
    identity.listenPort = port
    identity.listenAddresses = addresses
    let responder = b.responder(logger: Logger(subsystem: "test", minimumLevel: .info, sink: log))
    let result = InMemorySession.run(
      firstID: a.id, secondID: b.id,
      first: { channel in
        _ = try PeerSession.greet(channel, identity: identity)
        try channel.send(PeerSession.goodbye("done"))
      },
      second: { responder.serve($0) })
    try result.first.get()
  }

  func testTheDaemonKeepsWhereATrustedPeerListensAndRefusesABadListWhole() throws {
    let (a, b) = try trustingPair(sharing: false)
    let log = CapturingLog()
    try greet(b, from: a, addresses: ["169.254.9.9", "fd00::5"], port: 7878, log: log)
    let announced = try XCTUnwrap(try b.peer("ay").announced)
    XCTAssertEqual(announced.addresses.map(\.description), ["169.254.9.9:7878", "[fd00::5]:7878"])
    // Tried after where it was last reached, before older places (here none was reached).
    XCTAssertEqual(try b.peer("ay").dialAddresses(on: nil, defaultPort: nil), announced.addresses)

    let bad: [[String]] = [
      (0..<9).map { "169.254.9.\($0 + 1)" }, ["host.example"], ["fe80::1%eth0"], ["127.0.0.1"], ["224.0.0.251"],
      ["0.0.0.0"], ["169.254.9.9:80"], [String(repeating: "1", count: 5000)], ["\u{1B}[31m"],
    ]
    for addresses in bad {
      let before = log.lines.count
      try greet(b, from: a, addresses: addresses, port: 7879, log: log)
      XCTAssertEqual(try b.peer("ay").announced, announced, "\(addresses): nothing stored")
      let said = log.lines.dropFirst(before).joined(separator: "\n")
      XCTAssertTrue(said.contains("\(a.id.short) sent a malformed address announcement"), said)
      XCTAssertFalse(said.contains("\u{1B}"), "no raw control characters in the journal")
    }
    // Addresses without a port to go with them say nothing that can be dialled.
    try greet(b, from: a, addresses: ["169.254.9.10"], port: nil, log: log)
    XCTAssertEqual(try b.peer("ay").announced, announced)
    // A new hello replaces what the last one said.
    try greet(b, from: a, addresses: ["169.254.9.10"], port: 7878, log: log)
    XCTAssertEqual(try b.peer("ay").announced?.addresses.map(\.description), ["169.254.9.10:7878"])
  }
}
