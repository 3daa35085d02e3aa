import MemoCore
import MemoProtocol
import XCTest

final class ConsentPolicyTests: XCTestCase {
  let manifest = LocalNetworkManifest.builtIn
  let memoPeer = LocalNetworkManifest.memoPeerServiceType

  func record(_ decision: ConsentDecision, _ scope: ConsentScope = .localNetwork, at time: Timestamp = 1)
    -> ConsentRecord
  {
    ConsentRecord(
      decision: decision, scope: scope, usageText: manifest.promptText, serviceTypes: manifest.serviceTypes,
      user: "ana", uid: 1000, time: time, method: .command)
  }

  func testUndeterminedNeedsConsentAndTheLastRecordWins() {
    XCTAssertEqual(
      LocalNetworkPolicy.evaluate(.browse(serviceType: memoPeer), manifest: manifest, consent: []),
      .needsConsent(.localNetwork))
    XCTAssertEqual(
      LocalNetworkPolicy.evaluate(.advertise(serviceType: memoPeer), manifest: manifest, consent: [record(.granted)]),
      .allowed)
    let revoked = [record(.granted), record(.revoked, at: 2)]
    guard
      case .refused(let error) = LocalNetworkPolicy.evaluate(
        .browse(serviceType: memoPeer), manifest: manifest, consent: revoked)
    else { return XCTFail("a revoked grant must refuse") }
    XCTAssertEqual(error.code, .policyDenied)
    XCTAssertEqual(error.dnsServiceCode, -65570)
    XCTAssertEqual(error.remedy, .grantConsent(.localNetwork))
    XCTAssertEqual(ConsentState.of(.localNetwork, in: revoked).name, "revoked")
    XCTAssertTrue(ConsentState.of(.localNetwork, in: revoked + [record(.granted, at: 3)]).isGranted)
  }

  func testUndeclaredTypesAreNoAuthEvenWithConsent() {
    let verdict = LocalNetworkPolicy.evaluate(
      .browse(serviceType: "_printer._tcp"), manifest: manifest, consent: [record(.granted)])
    guard case .refused(let error) = verdict else { return XCTFail("undeclared type allowed") }
    XCTAssertEqual(error.code, .noAuth)
    XCTAssertEqual(error.dnsServiceCode, -65555)
    XCTAssertTrue(error.message.contains("_printer._tcp"))
    XCTAssertTrue(error.hint?.contains("service_types") ?? false)
    let declared = manifest.adding(serviceTypes: ["_printer._tcp"])
    XCTAssertEqual(
      LocalNetworkPolicy.evaluate(
        .browse(serviceType: "_printer._tcp"), manifest: declared, consent: [record(.granted)]),
      .allowed)
  }

  func testAllTypesNeedsItsOwnScopeAndLocalNetwork() {
    guard
      case .refused(let missing) = LocalNetworkPolicy.evaluate(
        .browseAllTypes, manifest: manifest, consent: [record(.granted)])
    else { return XCTFail("all types without its scope") }
    XCTAssertEqual(missing.code, .consentRequired)
    XCTAssertTrue(missing.message.contains("all-service-types"))
    XCTAssertEqual(
      LocalNetworkPolicy.evaluate(
        .browseAllTypes, manifest: manifest, consent: [record(.granted), record(.granted, .allServiceTypes)]),
      .allowed)
    guard
      case .refused(let denied) = LocalNetworkPolicy.evaluate(
        .browseAllTypes, manifest: manifest, consent: [record(.denied), record(.granted, .allServiceTypes)])
    else { return XCTFail("all types without local network") }
    XCTAssertEqual(denied.code, .policyDenied)
  }

  func testServiceTypeSyntax() {
    for good in ["_memo-peer._tcp", "_ipp._tcp", "_a._udp"] {
      XCTAssertTrue(LocalNetworkManifest.isWellFormed(serviceType: good), good)
    }
    for bad in ["memo._tcp", "_memo._sctp", "_toolongservicename16._tcp", "_._tcp", "_a b._tcp", "_x._tcp.local"] {
      XCTAssertFalse(LocalNetworkManifest.isWellFormed(serviceType: bad), bad)
    }
  }

  func testPromptShowsTheUsageDescription() {
    XCTAssertTrue(
      manifest.promptText.hasPrefix("memo-peer would like to find and connect to devices on your local network: "))
    XCTAssertTrue(manifest.promptText.contains(manifest.usageDescription))
  }
}

final class AdvertisementTests: XCTestCase {
  func testPeriodsAndTheirBoundaries() {
    XCTAssertEqual(Advertisement.period(at: 0, rotationSeconds: 900), 0)
    XCTAssertEqual(Advertisement.period(at: 899_999, rotationSeconds: 900), 0)
    XCTAssertEqual(Advertisement.period(at: 900_000, rotationSeconds: 900), 1)
    XCTAssertEqual(Advertisement.periodEnd(at: 1_000_000, rotationSeconds: 900), 1_800_000)
    XCTAssertEqual(Advertisement.candidatePeriods(at: 1_000_000, rotationSeconds: 900), [0, 1, 2])
  }

  func testMessagesDifferByLabelAndPeriod() {
    let messages = [
      Advertisement.tagMessage(period: 1), Advertisement.tagMessage(period: 2), Advertisement.nameMessage(period: 1),
    ]
    XCTAssertEqual(Set(messages).count, 3)
    XCTAssertEqual(Advertisement.tag(fromMAC: Array(0..<32)), "0001020304050607")
    XCTAssertEqual(Advertisement.instanceName(fromMAC: [0xde, 0xad, 0xbe, 0xef, 0x00]), "memo-peer-deadbeef")
    XCTAssertEqual(Advertisement.txtRecord(tag: "ab"), ["v": "1", "tag": "ab"])
  }
}
