import MemoCore
import XCTest

/// The rules of what a peer may announce about where it listens, and where it is dialled.
final class AnnouncedAddressesTests: XCTestCase {
  func address(_ text: String) throws -> PeerAddress { try PeerAddress.parse(text) }

  func testAGoodListIsKeptWithThePortAndEachAddressOnce() throws {
    let checked = try AnnouncedAddresses.check(["169.254.1.2", "2001:db8::1", "169.254.1.2"], port: 7878)
    XCTAssertEqual(checked?.map(\.description), ["169.254.1.2:7878", "[2001:db8::1]:7878"])
    XCTAssertNil(try AnnouncedAddresses.check(nil, port: 7878), "nothing said")
    XCTAssertEqual(try AnnouncedAddresses.check([], port: 7878), [], "said: nowhere")
  }

  func testEachKindOfBadListIsRefusedNamingWhy() {
    let cases: [([String], UInt16?, String)] = [
      ((0...8).map { "10.0.0.\($0 + 1)" }, 1, "9 listen addresses (at most 8)"),
      (["10.0.0.1"], nil, "without a valid listen_port"),
      (["nas.local"], 1, "is a name"),
      (["fe80::1%eth0"], 1, "with a zone"),
      (["127.0.0.1"], 1, "loopback, multicast or unspecified"),
      (["::1"], 1, "loopback, multicast or unspecified"),
      (["ff02::fb"], 1, "loopback, multicast or unspecified"),
      (["255.255.255.255"], 1, "loopback, multicast or unspecified"),
      (["::"], 1, "loopback, multicast or unspecified"),
      (["10.0.0.1:80"], 1, "a port of its own"),
      ([String(repeating: "a", count: 46)], 1, "longer than 45 bytes"),
      (["10.0.0.1 "], 1, "a listen address:"),
    ]
    for (texts, port, reason) in cases {
      XCTAssertThrowsError(try AnnouncedAddresses.check(texts, port: port), "\(texts)") { error in
        let refusal = error as? AnnouncedAddresses.Refusal
        XCTAssertTrue(refusal?.reason.contains(reason) == true, "\(texts): \(String(describing: refusal))")
      }
    }
  }

  func testAnnouncingAgainIsWrittenOnlyWhenSomethingChangedOrTimePassed() throws {
    let id = DeviceID(bytes: [UInt8](repeating: 7, count: 32))!
    var list = TrustList(peers: [TrustedPeer(deviceID: id, name: "nas", discoveryKey: nil, source: .command, added: 0)])
    let said = [try address("10.0.0.2:7878")]
    XCTAssertTrue(list.announce(said, network: "home", at: 1_000, for: id))
    XCTAssertFalse(list.announce(said, network: "home", at: 2_000, for: id), "the same, soon after")
    XCTAssertTrue(list.announce(said, network: "home", at: 601_000, for: id), "ten minutes later")
    XCTAssertTrue(list.announce(said, network: "cafe", at: 602_000, for: id), "another network")
    XCTAssertTrue(list.announce([], network: "cafe", at: 603_000, for: id), "another list")
    XCTAssertFalse(
      list.announce(said, network: "home", at: 4_000, for: DeviceID(bytes: [UInt8](repeating: 8, count: 32))!))
  }

  func testDialOrderIsGivenThenLastReachedThenAnnouncedThenOlderOnThisNetworkOnly() throws {
    let id = DeviceID(bytes: [UInt8](repeating: 7, count: 32))!
    var peer = TrustedPeer(deviceID: id, name: "nas", discoveryKey: nil, source: .command, added: 0)
    peer.addresses = [try address("nas.lan")]
    var list = TrustList(peers: [peer])
    _ = list.remember(try address("10.0.0.1:7000"), network: "home", at: 1, for: id)
    _ = list.remember(try address("10.0.0.2:7000"), network: "home", at: 2, for: id)
    _ = list.remember(try address("192.168.5.5:7000"), network: "cafe", at: 3, for: id)
    _ = list.announce([try address("10.0.0.3:7000"), try address("10.0.0.2:7000")], network: "home", at: 4, for: id)
    let home = try list.find("nas").dialAddresses(on: "home", defaultPort: 9)
    XCTAssertEqual(home.map(\.description), ["nas.lan:7000", "10.0.0.2:7000", "10.0.0.3:7000", "10.0.0.1:7000"])
    let cafe = try list.find("nas").dialAddresses(on: "cafe", defaultPort: 9)
    XCTAssertEqual(cafe.map(\.description), ["nas.lan:7000", "192.168.5.5:7000"], "home's places are not dialled")
  }

  func testADeviceAnnouncesItsUnicastAddressesButNotLinkLocalIPv6() {
    XCTAssertTrue(AnnouncedAddresses.isAnnounceable("169.254.77.11"))
    XCTAssertTrue(AnnouncedAddresses.isAnnounceable("2001:db8::7"))
    for text in ["fe80::1", "127.0.0.1", "::1", "224.0.0.251", "not an address"] {
      XCTAssertFalse(AnnouncedAddresses.isAnnounceable(text), text)
    }
  }
}
