import Foundation
import MemoCore
import XCTest

final class PeerAddressTests: XCTestCase {
  func testEachKindOfHostWithAndWithoutAPort() throws {
    XCTAssertEqual(try PeerAddress.parse("169.254.7.2"), PeerAddress(host: .ipv4("169.254.7.2"), port: nil))
    XCTAssertEqual(try PeerAddress.parse("10.0.0.5:7777"), PeerAddress(host: .ipv4("10.0.0.5"), port: 7777))
    XCTAssertEqual(try PeerAddress.parse("fd00::1"), PeerAddress(host: .ipv6("fd00::1", zone: nil), port: nil))
    XCTAssertEqual(try PeerAddress.parse("[FD00:0::1]:443"), PeerAddress(host: .ipv6("fd00::1", zone: nil), port: 443))
    XCTAssertEqual(
      try PeerAddress.parse("[fe80::2%veth-b]:5353"), PeerAddress(host: .ipv6("fe80::2", zone: "veth-b"), port: 5353))
    XCTAssertEqual(try PeerAddress.parse("fe80::2%3"), PeerAddress(host: .ipv6("fe80::2", zone: "3"), port: nil))
    XCTAssertEqual(try PeerAddress.parse("Server.Home.Arpa."), PeerAddress(host: .name("server.home.arpa"), port: nil))
    XCTAssertEqual(try PeerAddress.parse("nas:8443"), PeerAddress(host: .name("nas"), port: 8443))
  }

  func testTheTextReadsBackAsTheSameAddress() throws {
    for text in [
      "169.254.7.2", "10.0.0.5:1", "fd00::1", "[fd00::1]:65535", "[fe80::2%veth0]:7", "fe80::2%veth0", "nas.lan:80",
    ] {
      let address = try PeerAddress.parse(text)
      XCTAssertEqual(address.description, text)
      XCTAssertEqual(try PeerAddress.parse(address.description), address)
      let json = try JSONEncoder().encode([address])
      XCTAssertEqual(try JSONDecoder().decode([PeerAddress].self, from: json), [address])
    }
  }

  func testEveryBadTextIsRefusedWithItsReason() {
    let cases: [(String, String)] = [
      ("", "empty"),
      ("garbage!", "not an IP address"),
      ("10.0.0.5:0", "outside 1 to 65535"),
      ("10.0.0.5:70000", "outside 1 to 65535"),
      ("10.0.0.5:123456", "not a number from 1 to 65535"),
      ("10.0.0.5:65536", "outside 1 to 65535"),
      ("10.0.0.5:", "not a number"),
      ("10.0.0.5:+80", "not a number"),
      ("10.0.0.5%eth0", "not IPv4"),
      ("[fd00::1%eth0]:80", "link-local"),
      ("fe80::1%", "zone"),
      ("fe80::1%eth/0", "zone"),
      ("fe80::1%averyveryverylongname", "zone"),
      ("[fe80::1", "closing ]"),
      ("[fe80::1]x", "only :PORT"),
      ("[nas]:80", "not an IPv6 address"),
      ("300.1.2.3", "not a valid IPv4 address"),
      ("1.2.3", "not a valid IPv4 address"),
      ("-nas", "not a DNS name"),
      ("nas..lan", "not a DNS name"),
      ("nas lan", "spaces"),
      ("nas\u{1B}[31m", "control"),
      ("naïve", "non-ASCII"),
      (String(repeating: "a", count: 64) + ".lan", "not a DNS name"),
      (String(repeating: "a.", count: 140), "longer than"),
    ]
    for (text, words) in cases {
      XCTAssertThrowsError(try PeerAddress.parse(text), text) { error in
        let reason = (error as? PeerAddress.ParseError)?.reason ?? ""
        XCTAssertTrue(reason.contains(words), "\(text.debugDescription): \(reason)")
        XCTAssertFalse(reason.contains("\u{1B}"), "a control character is shown escaped")
      }
    }
  }

  func testAFileWithABadAddressIsADecodingErrorNotATrap() {
    let json = Data(#"["10.0.0.5:0"]"#.utf8)
    XCTAssertThrowsError(try JSONDecoder().decode([PeerAddress].self, from: json))
  }
}
