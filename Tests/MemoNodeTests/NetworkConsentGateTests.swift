import MemoCore
import MemoVault
import XCTest

@testable import MemoNode

/// The consent gate and the daemon's facts on networks: a node from before networks were
/// told apart records the one it is on once; the daemon says why it waits.
final class NetworkConsentGateTests: XCTestCase {
  let home = NetworkPlace(id: "net-0123456789abcdef", name: "eth0, gateway 192.168.1.1")
  let cafe = NetworkPlace(id: "net-fedcba9876543210", name: "wlan0, gateway 10.0.0.1")

  func testAnUpgradedNodeRecordsTheNetworkItIsOnOnceAndKeepsWorkingThere() throws {
    let node = try TestNode()
    let gate = try node.gate
    // A log from before networks: local-network consent alone.
    try gate.log.append(
      ConsentRecord(
        decision: .granted, scope: .localNetwork, usageText: "the text shown then", serviceTypes: [], user: "ana",
        uid: 1000, time: 1, method: .prompt))
    let records = try gate.records(on: home, now: 5)
    XCTAssertEqual(records.count, 2)
    let upgrade = try XCTUnwrap(records.last)
    XCTAssertEqual(upgrade.scope, .network)
    XCTAssertEqual(upgrade.method, .upgrade)
    XCTAssertEqual(upgrade.network, home.id)
    XCTAssertEqual(upgrade.networkName, home.name)
    XCTAssertEqual(upgrade.usageText, "the text shown then", "the text that covered it")
    XCTAssertEqual(try gate.log.records(), records, "written to the log")
    XCTAssertEqual(try gate.records(on: home, now: 6).count, 2, "once")
    XCTAssertEqual(try gate.records(on: cafe, now: 7).count, 2, "another network is not covered")
    XCTAssertEqual(
      LocalNetworkPolicy.evaluate(
        .advertise(serviceType: LocalNetworkManifest.memoPeerServiceType), manifest: .builtIn, consent: records,
        network: cafe), .needsConsent(.network))
    // A network that cannot be told apart is never recorded.
    let fresh = try TestNode().gate
    try fresh.log.append(
      ConsentRecord(
        decision: .granted, scope: .localNetwork, usageText: "", serviceTypes: [], user: "ana", uid: 1000, time: 1,
        method: .command))
    let unknown = NetworkPlace.unidentified(
      NetworkFingerprint(interface: "eth0", gateway: "10.0.0.1", gatewayHardware: nil, prefix: "10.0.0.0/24"))
    XCTAssertEqual(try fresh.records(on: unknown, now: 2).count, 1)
  }

  func testTheDaemonSaysWhichNetworkItWaitsForAndWhy() {
    let manifest = LocalNetworkManifest.builtIn
    func record(_ decision: ConsentDecision, _ scope: ConsentScope, _ network: NetworkPlace? = nil) -> ConsentRecord {
      ConsentRecord(
        decision: decision, scope: scope, usageText: "", serviceTypes: manifest.serviceTypes, user: "ana", uid: 1,
        time: 1, method: .command, network: network)
    }
    let granted = [record(.granted, .localNetwork), record(.granted, .network, home)]
    XCTAssertNil(ConsentFacts.of(granted, manifest: manifest, network: home).waitingFor)
    XCTAssertEqual(
      ConsentFacts.of(granted, manifest: manifest, network: cafe).waitingFor,
      "this network (wlan0, gateway 10.0.0.1) to be allowed: it is not one a person allowed")
    XCTAssertEqual(
      ConsentFacts.of(granted + [record(.denied, .network, cafe)], manifest: manifest, network: cafe).waitingFor,
      "this network (wlan0, gateway 10.0.0.1) to be allowed: a person denied it")
    var off = ConsentFacts.of(granted, manifest: manifest, network: nil)
    off.offNetwork = true
    XCTAssertEqual(off.waitingFor, "a network: no interface but loopback has an address")
    XCTAssertEqual(ConsentFacts.of([], manifest: manifest, network: cafe).waitingFor, "local-network consent")
  }
}
