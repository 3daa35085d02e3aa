import MemoCore
import XCTest

final class PeerAddressBookTests: XCTestCase {
  let id = DeviceID(bytes: [UInt8](repeating: 7, count: 32))!

  func list() throws -> TrustList {
    var list = TrustList()
    try list.trust(TrustedPeer(deviceID: id, name: "nas", discoveryKey: nil, source: .command, added: 1))
    return list
  }

  func address(_ text: String) throws -> PeerAddress { try PeerAddress.parse(text) }

  func testGivenAddressesAreBoundedAndRemovedByValue() throws {
    var list = try list()
    for index in 1...TrustList.maximumGivenAddresses {
      _ = try list.addAddress(try address("10.0.0.\(index)"), for: "nas")
    }
    _ = try list.addAddress(try address("10.0.0.1"), for: "nas")
    XCTAssertEqual(list.peer(for: id)?.addresses?.count, TrustList.maximumGivenAddresses, "a repeat is no change")
    XCTAssertThrowsError(try list.addAddress(try address("10.0.0.99"), for: "nas")) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .tooLarge)
    }
    _ = try list.removeAddress(try address("10.0.0.1"), for: "nas")
    XCTAssertThrowsError(try list.removeAddress(try address("10.0.0.1"), for: "nas")) { error in
      XCTAssertEqual((error as? MemoPeerError)?.code, .notFound)
    }
    XCTAssertThrowsError(try list.addAddress(try address("10.0.0.1"), for: "nobody"))
  }

  func testReachedPlacesAreNewestFirstBoundedAndNotRewrittenTooOften() throws {
    var list = try list()
    let first = try address("169.254.1.2:7000")
    XCTAssertTrue(list.remember(first, network: nil, at: 1_000_000, for: id))
    XCTAssertFalse(list.remember(first, network: nil, at: 1_000_000 + 599_999, for: id), "reached again within 10 min")
    XCTAssertTrue(list.remember(first, network: nil, at: 1_000_000 + 600_000, for: id))
    XCTAssertTrue(
      list.remember(first, network: nil, at: 1_600_001, for: id, withoutDNSSD: true), "reached another way: said")
    XCTAssertEqual(try list.find("nas").reached?.first?.withoutDNSSD, true)
    XCTAssertFalse(list.remember(first, network: nil, at: 1_600_002, for: id, withoutDNSSD: true))
    XCTAssertFalse(list.remember(try address("nas:7000"), network: nil, at: 2_000_000, for: id), "never a name")
    XCTAssertFalse(list.remember(try address("169.254.1.2"), network: nil, at: 2_000_000, for: id), "never portless")
    XCTAssertFalse(
      list.remember(first, network: nil, at: 2_000_000, for: DeviceID(bytes: [UInt8](repeating: 8, count: 32))!),
      "never a device not trusted")
    for port in 7001...7010 {
      XCTAssertTrue(
        list.remember(try address("169.254.1.2:\(port)"), network: nil, at: Int64(3_000_000 + port), for: id))
    }
    let reached = try XCTUnwrap(list.peer(for: id)?.reached)
    XCTAssertEqual(reached.count, ReachedAddress.maximumKept)
    XCTAssertEqual(reached.first?.address, try address("169.254.1.2:7010"))
  }

  func testDialOrderIsGivenThenReachedOnThisNetworkEachOnce() throws {
    var list = try list()
    _ = list.remember(try address("10.0.0.5:7000"), network: nil, at: 10, for: id)
    _ = list.remember(try address("10.9.9.9:7100"), network: "elsewhere", at: 20, for: id)
    _ = list.remember(try address("10.0.0.6:7001"), network: nil, at: 30, for: id)
    _ = try list.addAddress(try address("nas.lan"), for: "nas")
    _ = try list.addAddress(try address("10.0.0.5:7000"), for: "nas")
    let peer = try XCTUnwrap(list.peer(for: id))
    XCTAssertEqual(
      peer.dialAddresses(on: nil, defaultPort: nil).map(\.description),
      ["nas.lan:7001", "10.0.0.5:7000", "10.0.0.6:7001"], "a portless address takes the last port reached")
    XCTAssertEqual(
      peer.dialAddresses(on: "elsewhere", defaultPort: nil).map(\.description),
      ["nas.lan:7100", "10.0.0.5:7000", "10.9.9.9:7100"])
    var bare = try self.list()
    _ = try bare.addAddress(try address("nas.lan"), for: "nas")
    XCTAssertEqual(bare.peer(for: id)?.dialAddresses(on: nil, defaultPort: nil), [], "no port known: left out")
  }

  func testTheBackoffDoublesToItsLongestAndASuccessForgets() throws {
    var backoff = AddressBackoff()
    let address = try address("10.0.0.5:7000")
    let start = MonotonicInstant(sinceOrigin: .seconds(100))
    XCTAssertTrue(backoff.mayDial(address, at: start))
    var now = start
    var pauses: [Duration] = []
    for _ in 0..<9 {
      backoff.failed(address, at: now)
      var wait = Duration.zero
      while !backoff.mayDial(address, at: now + wait) { wait += .milliseconds(500) }
      pauses.append(wait)
      now = now + wait
    }
    XCTAssertEqual(pauses.map { $0.components.seconds }, [1, 2, 4, 8, 16, 32, 60, 60, 60])
    backoff.succeeded(address)
    XCTAssertTrue(backoff.mayDial(address, at: now))
    XCTAssertEqual(backoff.failureCount(address), 0)
  }
}
