import MemoCore
import XCTest

/// Networks a person allowed: how a network is told apart (from the kernel's tables, as
/// texts), and the rule on top of the local-network consent.
final class NetworkRuleTests: XCTestCase {
  let manifest = LocalNetworkManifest.builtIn
  let browse = LocalNetworkUse.browse(serviceType: LocalNetworkManifest.memoPeerServiceType)
  let home = NetworkPlace(id: "net-home", name: "eth0, gateway 192.168.1.1")
  let cafe = NetworkPlace(id: "net-cafe", name: "wlan0, gateway 10.0.0.1")

  func record(_ decision: ConsentDecision, _ scope: ConsentScope, network: NetworkPlace? = nil) -> ConsentRecord {
    ConsentRecord(
      decision: decision, scope: scope, usageText: "shown", serviceTypes: manifest.serviceTypes, user: "ana",
      uid: 1000, time: 1, method: .command, network: network)
  }

  func verdict(_ records: [ConsentRecord], on network: NetworkPlace?) -> LocalNetworkVerdict {
    LocalNetworkPolicy.evaluate(browse, manifest: manifest, consent: records, network: network)
  }

  func testOnlyNetworksAPersonAllowedAreUsedAndTheScopeComesFirst() throws {
    let granted = [record(.granted, .localNetwork), record(.granted, .network, network: home)]
    XCTAssertEqual(verdict(granted, on: home), .allowed)
    XCTAssertEqual(verdict(granted, on: cafe), .needsConsent(.network), "a network nobody decided is asked")
    XCTAssertEqual(verdict(granted, on: nil), .allowed, "on no network there is nothing to protect")
    XCTAssertEqual(verdict([record(.granted, .network, network: home)], on: home), .needsConsent(.localNetwork))
    let denied = granted + [record(.denied, .network, network: cafe)]
    guard case .refused(let error) = verdict(denied, on: cafe) else { return XCTFail("a denied network is refused") }
    XCTAssertEqual(error.code, .policyDenied)
    XCTAssertEqual(error.remedy, .grantConsent(.network))
    XCTAssertTrue(error.message.contains("wlan0, gateway 10.0.0.1"), error.message)
    XCTAssertEqual(verdict(denied + [record(.granted, .network, network: cafe)], on: cafe), .allowed, "the last wins")
    // A network's records never count as the local-network scope's, nor as another network's.
    XCTAssertEqual(ConsentState.of(.localNetwork, in: [record(.granted, .network, network: home)]), .undetermined)
    XCTAssertEqual(ConsentState.of(network: "net-cafe", in: granted), .undetermined)
  }

  func testANodeFromBeforeNetworksKeepsWorkingWhereItIsAndRecordsIt() {
    let legacy = [record(.granted, .localNetwork)]
    XCTAssertEqual(verdict(legacy, on: cafe), .allowed)
    XCTAssertTrue(NetworkRule.needsUpgradeRecord(legacy, network: cafe))
    XCTAssertFalse(NetworkRule.needsUpgradeRecord(legacy, network: nil), "no network: nothing to record")
    XCTAssertFalse(NetworkRule.needsUpgradeRecord([], network: cafe), "no consent: nothing was allowed")
    XCTAssertFalse(NetworkRule.needsUpgradeRecord(legacy + [record(.denied, .network, network: home)], network: cafe))
  }

  func testTheDefaultRouteAndItsGatewayAreReadFromTheKernelsTables() {
    let route = """
      Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
      wlan0\t0000A8C0\t00000000\t0001\t0\t0\t600\t00FFFFFF\t0\t0\t0
      eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
      wlan0\t00000000\t0100000A\t0003\t0\t0\t600\t00000000\t0\t0\t0
      """
    let found = NetworkFingerprint.defaultRoute(fromRouteTable: route)
    XCTAssertEqual(found?.interface, "eth0", "the lowest metric")
    XCTAssertEqual(found?.gateway, "192.168.1.1")
    XCTAssertNil(NetworkFingerprint.defaultRoute(fromRouteTable: "Iface\tDestination\n"))
    XCTAssertNil(NetworkFingerprint.defaultRoute(fromRouteTable: "garbage"))
    let arp = """
      IP address       HW type     Flags       HW address            Mask     Device
      192.168.1.1      0x1         0x0         00:00:00:00:00:00     *        eth0
      192.168.1.1      0x1         0x2         AA:BB:CC:00:11:22     *        wlan0
      192.168.1.1      0x1         0x2         aa:bb:cc:dd:ee:ff     *        eth0
      """
    XCTAssertEqual(
      NetworkFingerprint.hardwareAddress(of: "192.168.1.1", on: "eth0", fromARPTable: arp), "aa:bb:cc:dd:ee:ff")
    XCTAssertNil(NetworkFingerprint.hardwareAddress(of: "192.168.1.2", on: "eth0", fromARPTable: arp))
    XCTAssertEqual(NetworkFingerprint.prefix(address: "192.168.1.37", netmask: "255.255.255.0"), "192.168.1.0/24")
    XCTAssertEqual(NetworkFingerprint.prefix(address: "169.254.77.11", netmask: "255.255.0.0"), "169.254.0.0/16")
    XCTAssertNil(NetworkFingerprint.prefix(address: "192.168.1.37", netmask: "255.0.255.0"), "not contiguous")
    XCTAssertNil(NetworkFingerprint.prefix(address: "fe80::1", netmask: "ffff::"))
  }

  func testWhatIsHashedTellsNetworksApartAndWhatIsShownNamesThem() {
    let withGateway = NetworkFingerprint(
      interface: "eth0", gateway: "192.168.1.1", gatewayHardware: "AA:BB:CC:DD:EE:FF", prefix: "192.168.1.0/24")
    var otherRouter = withGateway
    otherRouter.gatewayHardware = "aa:bb:cc:dd:ee:00"
    var wifi = withGateway
    wifi.interface = "wlan0"
    XCTAssertNotEqual(withGateway.hashInput, otherRouter.hashInput, "same address, another router")
    XCTAssertEqual(withGateway.hashInput, wifi.hashInput, "one network, by cable or Wi-Fi")
    let none = NetworkFingerprint(interface: "eth0", gateway: nil, gatewayHardware: nil, prefix: "169.254.0.0/16")
    XCTAssertNotEqual(none.hashInput, withGateway.hashInput)
    XCTAssertEqual(withGateway.name, "eth0, gateway 192.168.1.1")
    XCTAssertEqual(none.name, "eth0, 169.254.0.0/16, no gateway")
  }
}
