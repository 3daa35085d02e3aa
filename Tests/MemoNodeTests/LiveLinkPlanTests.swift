import MemoCore
import MemoStore
import XCTest

@testable import MemoNode

/// The rules of `serve`'s live links, without a daemon: every trusted device is dialled,
/// within the limits; a failed dial (or a link that never synced) waits a growing jittered
/// pause, a link that synced and broke a short one, a device that called us none; only a
/// moved feed, or a change of what this device may read, owes a sync.
final class LiveLinkPlanTests: XCTestCase {
  let a = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
  let b = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!

  func testOnlyMovedMarksOweASyncAndTheFirstLookDoes() {
    var plan = LiveLinkPlan()
    XCTAssertEqual(plan.look(at: marks(7)), .push, "what changed while the daemon was down")
    XCTAssertEqual(plan.look(at: marks(7)), .nothing, "a write that stored no revision owes nothing")
    XCTAssertEqual(plan.look(at: marks(8)), .push)
    XCTAssertEqual(plan.look(at: marks(8, notebooks: 2)), .catchUp, "an accepted invitation owes a sync")
    XCTAssertEqual(plan.look(at: marks(8, notebooks: 2)), .nothing)
  }

  func marks(_ feed: UInt64, notebooks: Int64 = 1) -> SyncMarks {
    SyncMarks(feed: feed, membership: [notebooks, 3, 1])
  }

  func testEveryTrustedDeviceIsDialledOnceWithinTheLimits() {
    let peers = Set((1...20).map { DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 32))! })
    var plan = LiveLinkPlan()
    let first = plan.toDial(trusted: peers, now: 0)
    XCTAssertEqual(first, Array(peers.sorted().prefix(4)), "at most 4 dials at once, in order")
    XCTAssertEqual(plan.toDial(trusted: peers, now: 0), [], "no dial place free")
    for device in first { plan.linked(device) }
    var linked = first
    while let next = plan.toDial(trusted: peers, now: 0).nilIfEmpty {
      XCTAssertLessThanOrEqual(next.count, 4)
      for device in next { plan.linked(device) }
      linked += next
    }
    XCTAssertEqual(linked, Array(peers.sorted().prefix(16)), "at most 16 links, each device once")
    plan.ended(linked[0], synced: true, now: 0, random: 0)
    XCTAssertEqual(plan.toDial(trusted: peers, now: 10_000), [peers.sorted()[0]], "a free place goes to the first due")
  }

  func testAFailedDialOrSyncWaitsAGrowingJitteredPauseAndABrokenLinkAShortOne() {
    var plan = LiveLinkPlan()
    XCTAssertEqual(plan.toDial(trusted: [a], now: 0), [a])
    plan.ended(a, synced: false, now: 1_000, random: 0)
    // The first pause is between 0.5 and 1 s (random 0: the shortest).
    XCTAssertEqual(plan.toDial(trusted: [a], now: 1_499), [])
    XCTAssertEqual(plan.toDial(trusted: [a], now: 1_500), [a])
    plan.ended(a, synced: false, now: 2_000, random: 0.999)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 3_990), [], "the second pause is up to 2 s")
    XCTAssertEqual(plan.toDial(trusted: [a], now: 4_000), [a])
    for _ in 3...12 {
      plan.ended(a, synced: false, now: 0, random: 0.999)
      XCTAssertEqual(plan.toDial(trusted: [a], now: 30_000), [a], "never more than 30 s")
    }
    plan.ended(a, synced: false, now: 0, random: 0.999)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 29_000), [], "the thirteenth pause is the cap, 30 s")
    plan.heardFrom(a)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 29_000), [a], "a device that called us is dialled at once")
    plan.linked(a)
    XCTAssertEqual(plan.up, [a])
    plan.ended(a, synced: false, now: 30_000, random: 0.999)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 30_990), [], "a link that never synced counts as a failure: 1 s")
    XCTAssertEqual(plan.toDial(trusted: [a], now: 31_000), [a])
    plan.linked(a)
    plan.ended(a, synced: false, now: 32_000, random: 0.999)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 33_990), [], "and the next one 2 s: no reconnect storm")
    XCTAssertEqual(plan.toDial(trusted: [a], now: 34_000), [a])
    plan.linked(a)
    plan.ended(a, synced: true, now: 40_000, random: 0.999)
    XCTAssertEqual(plan.toDial(trusted: [a], now: 40_990), [], "a link that synced and broke waits the first pause")
    XCTAssertEqual(plan.toDial(trusted: [a], now: 41_000), [a], "and no more: 1 s")
  }

  func testADeviceNoLongerTrustedIsNamedForClosingAndALockForgetsEverything() {
    var plan = LiveLinkPlan()
    _ = plan.look(at: marks(1))
    for device in plan.toDial(trusted: [a, b], now: 0) { plan.linked(device) }
    XCTAssertEqual(plan.keep(only: [b]), [a])
    XCTAssertEqual(plan.up, [b])
    XCTAssertEqual(plan.keep(only: [b]), [], "named once")
    plan.reset()
    XCTAssertEqual(plan.marksSeen, marks(1), "a new link's first sync sends what changed meanwhile")
    XCTAssertEqual(plan.up, [])
    XCTAssertEqual(plan.toDial(trusted: [a, b], now: 0), [a, b], "after an unlock every device is dialled again")
  }

  func testANetworkChangeForgetsThePausesOnceItsBurstSettlesAndAtMostEveryTenSeconds() {
    var plan = LiveLinkPlan()
    _ = plan.toDial(trusted: [a, b], now: 0)
    plan.ended(a, synced: false, now: 0, random: 0.99)
    plan.ended(b, synced: false, now: 0, random: 0.99)
    for _ in 0..<5 {
      _ = plan.toDial(trusted: [a, b], now: 1_000_000)
      plan.ended(a, synced: false, now: 1_000_000, random: 0.99)
      plan.ended(b, synced: false, now: 1_000_000, random: 0.99)
    }
    XCTAssertEqual(plan.toDial(trusted: [a, b], now: 1_010_000), [], "both wait a long pause")
    XCTAssertFalse(plan.networkCheckDue(now: 1_010_000), "no change, no check")

    // Down, up and an address within 1.5 s: one check, 1 s after the last of them.
    plan.networkEvent(now: 1_010_000)
    plan.networkEvent(now: 1_010_500)
    plan.networkEvent(now: 1_011_500)
    XCTAssertFalse(plan.networkCheckDue(now: 1_012_000), "the burst is still going on")
    XCTAssertTrue(plan.networkCheckDue(now: 1_012_500))
    XCTAssertFalse(plan.networkCheckDue(now: 1_012_600), "once")
    XCTAssertEqual(plan.toDial(trusted: [a, b], now: 1_012_500), [a, b], "the pauses are forgotten")

    // A change every half second: at most 3 s after the first, then at most every 10 s.
    plan.ended(a, synced: false, now: 1_013_000, random: 0.99)
    var checks: [Timestamp] = []
    for step in 0..<60 {
      let now = Timestamp(1_013_000 + step * 500)
      plan.networkEvent(now: now)
      if plan.networkCheckDue(now: now) { checks.append(now) }
    }
    XCTAssertEqual(checks, [1_022_500, 1_032_500, 1_042_500], "the first once 10 s have passed, then every 10 s")
  }
}

extension Array {
  fileprivate var nilIfEmpty: Self? { isEmpty ? nil : self }
}
