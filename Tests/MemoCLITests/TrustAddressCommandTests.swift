import Foundation
import XCTest

/// `trust add --address` and `trust address PEER add|remove|list` without a network: numeric
/// addresses only (a name would ask the resolver; the lab test gives one), every bad input
/// refused with status 4 naming what is wrong, and nothing stored by a refused command.
final class TrustAddressCommandTests: XCTestCase {
  let peerID = DeliveryCommandTests.peerID

  func testAddressesAreGivenListedAndRemoved() throws {
    let cli = try CLIProcess()
    XCTAssertEqual(
      try cli.run([
        "trust", "add", peerID, "--name", "nas", "--address", "192.168.7.20:7878", "--address", "192.168.7.20:7878",
      ]).status, 0, "an address given twice is kept once")
    XCTAssertEqual(try cli.run(["trust", "address", "nas", "add", "[fe80::2%lo]"]).status, 0)
    let listed = try cli.json(["trust", "address", "nas", "list", "--json"])
    let addresses = try XCTUnwrap(listed["addresses"] as? [String: Any])
    XCTAssertEqual(addresses["given"] as? [String], ["192.168.7.20:7878", "fe80::2%lo"])
    XCTAssertEqual((addresses["reached"] as? [Any])?.count, 0)
    let peers = try XCTUnwrap(try cli.json(["peers", "--json"])["peers"] as? [[String: Any]])
    XCTAssertEqual(
      (peers.first?["addresses"] as? [String: Any])?["given"] as? [String], addresses["given"] as? [String])
    XCTAssertTrue(try cli.run(["peers"]).stdout.contains("addresses given: 192.168.7.20:7878, fe80::2%lo"))
    XCTAssertEqual(try cli.run(["trust", "address", "nas", "remove", "192.168.7.20:7878"]).status, 0)
    let again = try cli.run(["trust", "address", "nas", "remove", "192.168.7.20:7878"])
    XCTAssertEqual(again.status, 3, again.stderr)
    XCTAssertTrue(again.stderr.contains("nas has no address 192.168.7.20:7878"), again.stderr)
    XCTAssertEqual(try cli.run(["trust", "address", "nobody", "list"]).status, 3)
  }

  func testBadAddressesAreRefusedNamingWhatIsWrongAndNothingIsStored() throws {
    let cli = try CLIProcess()
    let cases: [(String, String)] = [
      ("garbage!", "not an IP address"),
      ("10.0.0.5:0", "the port 0 is outside 1 to 65535"),
      ("10.0.0.5:70000", "the port 70000 is outside 1 to 65535"),
      ("10.0.0.5%eth0", "belongs only to a link-local IPv6 address, not IPv4"),
      ("[fd00::1%eth0]:80", "belongs only to a link-local IPv6 address (fe80::/10)"),
      ("nas\u{1B}[2J", "control"),
    ]
    for (text, words) in cases {
      let refused = try cli.run(["trust", "add", peerID, "--name", "nas", "--address", text])
      XCTAssertEqual(refused.status, 4, "\(text.debugDescription): \(refused.stderr)")
      XCTAssertTrue(refused.stderr.contains(words), "\(text.debugDescription): \(refused.stderr)")
      XCTAssertFalse(refused.stderr.contains("\u{1B}"), "shown escaped")
    }
    XCTAssertEqual((try cli.json(["trust", "list", "--json"])["peers"] as? [Any])?.count, 0, "nobody trusted")
    XCTAssertEqual(try cli.run(["trust", "add", peerID, "--name", "nas"]).status, 0)
    XCTAssertEqual(try cli.run(["trust", "address", "nas", "add"]).status, 2, "no address: usage")
    XCTAssertEqual(try cli.run(["trust", "address", "nas", "move", "10.0.0.5"]).status, 2, "an unknown verb")
    XCTAssertEqual(try cli.run(["trust", "address", "nas", "add", "10.0.0.5:0"]).status, 4)
    let listed = try cli.json(["trust", "address", "nas", "list", "--json"])
    XCTAssertEqual((listed["addresses"] as? [String: Any])?["given"] as? [String], [])
  }
}
