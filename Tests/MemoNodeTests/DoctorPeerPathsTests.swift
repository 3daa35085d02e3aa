import MemoCore
import XCTest

@testable import MemoNode

/// What `doctor` concludes from how each trusted device was found.
final class DoctorPeerPathsTests: XCTestCase {
  func peer(_ name: String, byte: UInt8) -> TrustedPeer {
    TrustedPeer(
      deviceID: DeviceID(bytes: [UInt8](repeating: byte, count: 32))!, name: name, discoveryKey: nil, source: .command,
      added: 1)
  }

  func testShownByDNSSDIsAllWell() {
    let check = DoctorPeerPaths.verdict([(peer("nas", byte: 1), .dnsSD)])
    XCTAssertTrue(check.ok)
    XCTAssertNil(check.fix)
    XCTAssertEqual(check.detail, "nas: shown by DNS-SD")
  }

  func testOnlyAnAddressNamesFilteredMulticastAndThePath() {
    let check = DoctorPeerPaths.verdict([
      (peer("nas", byte: 1), .dnsSD), (peer("laptop", byte: 2), .address("169.254.3.4")),
    ])
    XCTAssertTrue(check.ok, "reachable: the device still syncs")
    XCTAssertEqual(check.detail, "nas: shown by DNS-SD; laptop: not shown by DNS-SD, reached at 169.254.3.4")
    XCTAssertTrue(
      check.fix?.contains("filter multicast DNS (IGMP snooping, Wi-Fi client isolation, another VLAN)") == true)
  }

  func testNoPathFailsAndSaysWhatWasTried() {
    let check = DoctorPeerPaths.verdict([
      (peer("laptop", byte: 2), .address("169.254.3.4")),
      (peer("nas\u{1B}[2J", byte: 3), .none(tried: ["10.0.0.5:7878"])),
    ])
    XCTAssertFalse(check.ok)
    XCTAssertTrue(check.detail.contains(": not shown by DNS-SD, and no answer at 10.0.0.5:7878"), check.detail)
    XCTAssertFalse(check.detail.contains("\u{1B}"), "a name from outside is shown escaped")
    XCTAssertTrue(check.fix?.contains("firewall") == true)
    XCTAssertTrue(check.fix?.contains("trust address NAME add HOST:PORT") == true)
  }
}
