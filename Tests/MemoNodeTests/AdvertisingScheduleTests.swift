import MemoCore
import XCTest

@testable import MemoNode

/// When `serve` (re)registers its advertisement and what it waits for, without the mDNS
/// daemon or a clock: the consent and lock decide whether it may be on the network at all,
/// and an avahi-daemon restart keeps the listener (and the links) while it is away.
final class AdvertisingScheduleTests: XCTestCase {
  let first = AdvertisementPlan(period: 1, instanceName: "memo-peer-1", tag: "t1", txt: [:], validUntil: 10_000)
  let second = AdvertisementPlan(period: 2, instanceName: "memo-peer-2", tag: "t2", txt: [:], validUntil: 20_000)

  func testTheAdvertisementIsRegisteredOnceAndAgainForANewPeriod() {
    var schedule = AdvertisingSchedule()
    XCTAssertTrue(schedule.due(now: 0))
    XCTAssertTrue(schedule.needsRegistering(first, standing: false, lost: false))
    schedule.registered(first)
    XCTAssertFalse(schedule.needsRegistering(first, standing: true, lost: false), "the same plan stands")
    XCTAssertTrue(schedule.needsRegistering(second, standing: true, lost: false), "a new period rotates it")
    XCTAssertFalse(schedule.readvertising)
  }

  func testAnAvahiRestartKeepsTheListenerAndRetriesEverySecond() {
    var schedule = AdvertisingSchedule()
    schedule.registered(first)
    XCTAssertTrue(schedule.needsRegistering(first, standing: true, lost: true), "avahi forgot it")
    XCTAssertTrue(schedule.readvertising)
    let failure = schedule.failed(.daemonUnavailable, now: 5_000, port: 7410)
    XCTAssertEqual(
      failure, .init(keepListening: true, waitingFor: "the mDNS daemon (avahi-daemon) to be reachable"),
      "those connected keep syncing")
    XCTAssertFalse(schedule.due(now: 5_999))
    XCTAssertTrue(schedule.due(now: 6_000), "tried again in a second")
    schedule.withdrawn()
    XCTAssertTrue(schedule.needsRegistering(first, standing: false, lost: false))
    XCTAssertEqual(schedule.failed(.daemonUnavailable, now: 6_000, port: 7410).keepListening, true, "still away")
    schedule.registered(first)
    XCTAssertFalse(schedule.readvertising, "back: registered again")
    XCTAssertEqual(
      schedule.failed(.daemonUnavailable, now: 7_000, port: 7410).keepListening, false,
      "avahi missing at a first registration closes the listener")
  }

  func testAFailureClosesTheListenerAndRetriesAfterTwoSeconds() {
    var schedule = AdvertisingSchedule()
    XCTAssertEqual(
      schedule.failed(.io, now: 1_000, port: 7410), .init(keepListening: false, waitingFor: "TCP port 7410 to be free"))
    XCTAssertFalse(schedule.due(now: 2_999))
    XCTAssertTrue(schedule.due(now: 3_000))
    XCTAssertEqual(schedule.failed(nil, now: 3_000, port: 0).waitingFor, "DNS-SD registration to succeed")
    XCTAssertNil(schedule.registered)
    schedule.keysFailed(now: 10_000)
    XCTAssertFalse(schedule.due(now: 11_999), "unreadable keys: 2 s")
    XCTAssertTrue(schedule.due(now: 12_000))
  }

  func testConsentDecidesWhetherTheNodeIsOnTheNetworkAtAll() {
    let manifest = LocalNetworkManifest.builtIn
    func record(_ decision: ConsentDecision, _ scope: ConsentScope) -> ConsentRecord {
      ConsentRecord(
        decision: decision, scope: scope, usageText: manifest.usageDescription, serviceTypes: manifest.serviceTypes,
        user: "test", uid: 0, time: 1, method: .command, note: nil)
    }
    let none = ConsentFacts.of([], manifest: manifest)
    XCTAssertEqual(none.waitingFor, "local-network consent")
    XCTAssertFalse(none.backgroundSync)
    let granted = ConsentFacts.of([record(.granted, .localNetwork)], manifest: manifest)
    XCTAssertNil(granted.waitingFor, "may advertise")
    XCTAssertFalse(granted.backgroundSync, "background sync is a scope of its own")
    let revoked = ConsentFacts.of(
      [record(.granted, .localNetwork), record(.granted, .backgroundSync), record(.revoked, .localNetwork)],
      manifest: manifest)
    XCTAssertEqual(revoked.waitingFor, "local-network consent (revoked)")
    XCTAssertTrue(revoked.backgroundSync)
    let unreadable = ConsentFacts.unreadable(MemoPeerError(.storage, "damaged"))
    XCTAssertEqual(unreadable.waitingFor, "a readable consent log")
    XCTAssertFalse(unreadable.backgroundSync)
  }
}

/// Whether the node may be on the network at all, from the facts of one wake: a lock comes
/// before any consent, then the local-network consent decides.
final class ServeFactsAccessTests: XCTestCase {
  func facts(_ lock: LockState?, _ consent: ConsentFacts) -> ServeFacts {
    ServeFacts(lock: lock, consent: consent, discoveryKey: "absent")
  }

  let granted = ConsentFacts(advertise: .allowed, localNetworkState: "granted", backgroundSync: true)
  let undecided = ConsentFacts(
    advertise: .needsConsent(.localNetwork), localNetworkState: "undetermined", backgroundSync: false)

  func testALockComesBeforeAnyConsent() {
    XCTAssertEqual(facts(.locked(unlockedSinceBoot: true), granted).access, .locked)
    XCTAssertEqual(facts(.locked(unlockedSinceBoot: false), undecided).access, .locked)
    XCTAssertEqual(facts(.locked(unlockedSinceBoot: true), .unreadable(MemoPeerError(.storage, "x"))).access, .locked)
  }

  func testUnlockedTheConsentDecides() {
    XCTAssertEqual(facts(.unlocked, granted).access, .allowed)
    XCTAssertEqual(facts(.unprotected, undecided).access, .waiting("local-network consent"))
    XCTAssertEqual(facts(nil, granted).access, .allowed, "a lock state that cannot be told locks nothing")
    XCTAssertEqual(
      facts(.unprotected, .unreadable(MemoPeerError(.storage, "x"))).access, .waiting("a readable consent log"))
  }
}
