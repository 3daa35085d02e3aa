import MemoCore
import MemoProtocol
import XCTest

@testable import MemoNode

/// `serve`'s schedules without a daemon, a network or a clock: each value is fed times
/// (ms) and results, and what it decides is asserted. The outbox's retries and backoff, the
/// period of `--sync-every` and its wait for consent.
final class ServeScheduleTests: XCTestCase {
  let a = DeviceID(bytes: [UInt8](repeating: 1, count: 32))!
  let b = DeviceID(bytes: [UInt8](repeating: 2, count: 32))!

  // MARK: Outbox

  func testTheOutboxIsLookedAtOnceASecondAndOneRoundAtATime() {
    var outbox = OutboxSchedule()
    XCTAssertFalse(outbox.consent(allowed: true, now: 0), "with consent nothing is marked waiting")
    XCTAssertTrue(outbox.look(now: 0, roundRunning: false))
    XCTAssertFalse(outbox.look(now: 999, roundRunning: false), "not twice in a second")
    XCTAssertFalse(outbox.look(now: 1_000, roundRunning: true), "not while a round runs")
    XCTAssertTrue(outbox.look(now: 1_000, roundRunning: false))
  }

  func testARoundThatDeliveredNothingWaitsAGrowingPauseAndOneThatDeliveredAShortOne() {
    var outbox = OutboxSchedule()
    _ = outbox.consent(allowed: true, now: 0)
    XCTAssertEqual(outbox.due([a, b], now: 0), [a, b], "nobody waits at first")
    var pauses = outbox.finished([a: round(pending: 2), b: round()], now: 0) { 0.999 }
    XCTAssertEqual(pauses.keys.sorted(), [a], "a recipient with nothing pending is forgotten")
    XCTAssertEqual(pauses[a] ?? 0, 1, accuracy: 0.01, "the first pause is up to 1 s")
    XCTAssertEqual(outbox.due([a, b], now: 990), [b])
    XCTAssertEqual(outbox.due([a, b], now: 1_000), [a, b])
    pauses = outbox.finished([a: round(pending: 2)], now: 1_000) { 0.999 }
    XCTAssertEqual(pauses[a] ?? 0, 2, accuracy: 0.01, "the second up to 2 s")
    XCTAssertEqual(outbox.due([a], now: 2_990), [])
    XCTAssertEqual(outbox.due([a], now: 3_000), [a])
    for _ in 0..<10 { pauses = outbox.finished([a: round(pending: 1)], now: 0) { 0.999 } }
    XCTAssertEqual(pauses[a] ?? 0, 30, accuracy: 0.02, "never more than 30 s")
    pauses = outbox.finished([a: round(delivered: 1, pending: 1)], now: 0) { 0 }
    XCTAssertEqual(pauses[a], 0.5, "a round that delivered something starts the pauses again")
    _ = outbox.finished([a: round(delivered: 1)], now: 0) { 0 }
    XCTAssertEqual(outbox.due([a], now: 0), [a], "everything delivered: no pause")
  }

  func testWithoutConsentEntriesAreMarkedWaitingOnceASecondAndAGrantResumesAtOnce() {
    var outbox = OutboxSchedule()
    _ = outbox.consent(allowed: true, now: 0)
    _ = outbox.finished([a: round(pending: 1)], now: 0) { 0.999 }
    XCTAssertEqual(outbox.due([a], now: 0), [], "a waits its pause")
    XCTAssertTrue(outbox.consent(allowed: false, now: 10), "a revoke marks the entries waiting at once")
    XCTAssertFalse(outbox.consent(allowed: false, now: 1_009))
    XCTAssertTrue(outbox.consent(allowed: false, now: 1_010), "and those queued meanwhile a second later")
    XCTAssertFalse(outbox.consent(allowed: true, now: 1_020))
    XCTAssertEqual(outbox.due([a], now: 1_020), [a], "a grant forgets every pause")
    XCTAssertTrue(outbox.look(now: 1_020, roundRunning: false), "and the outbox is looked at in the same step")
  }

  func round(delivered: Int = 0, pending: Int = 0) -> DeliverySender.Round {
    DeliverySender.Round(delivered: delivered, pending: pending, waitingFor: pending > 0 ? "peer not reachable" : nil)
  }

  // MARK: Scheduled sync

  func testScheduledSyncRunsEveryPeriodOneRoundAtATime() {
    var syncs = SyncSchedule(every: 60)
    XCTAssertEqual(syncs.step(now: 0, roundRunning: false, canDial: true, granted: true), .start)
    XCTAssertEqual(syncs.step(now: 59_999, roundRunning: false, canDial: true, granted: true), .none)
    XCTAssertEqual(syncs.step(now: 60_000, roundRunning: true, canDial: true, granted: true), .none, "one at a time")
    XCTAssertEqual(syncs.step(now: 60_000, roundRunning: false, canDial: false, granted: true), .none, "locked")
    XCTAssertEqual(syncs.step(now: 61_000, roundRunning: false, canDial: true, granted: true), .start)
    XCTAssertEqual(syncs.step(now: 120_000, roundRunning: false, canDial: true, granted: true), .none)
    XCTAssertEqual(syncs.step(now: 121_000, roundRunning: false, canDial: true, granted: true), .start)
  }

  func testScheduledSyncWaitsForTheBackgroundSyncConsentSayingSoOnce() {
    var syncs = SyncSchedule(every: 60)
    XCTAssertEqual(syncs.step(now: 0, roundRunning: false, canDial: true, granted: false), .noteWaitingForConsent)
    XCTAssertEqual(syncs.step(now: 1_000, roundRunning: false, canDial: true, granted: false), .none, "said once")
    XCTAssertEqual(syncs.step(now: 5_000, roundRunning: false, canDial: true, granted: true), .start, "at the grant")
    XCTAssertEqual(syncs.step(now: 65_000, roundRunning: false, canDial: true, granted: false), .noteWaitingForConsent)
    XCTAssertEqual(syncs.step(now: 70_000, roundRunning: false, canDial: true, granted: true), .start)
  }

  func testWithoutSyncEveryNothingIsScheduled() {
    var syncs = SyncSchedule(every: nil)
    XCTAssertEqual(syncs.step(now: 0, roundRunning: false, canDial: true, granted: true), .none)
    XCTAssertEqual(syncs.step(now: 0, roundRunning: false, canDial: true, granted: false), .none, "nothing to say")
  }

  // MARK: Live sync's consent

  func testLiveSyncWaitsForTheBackgroundSyncConsentSayingSoOnce() {
    var live = LiveSyncState()
    XCTAssertEqual(
      live.consent(granted: false), .init(shown: "waiting (background-sync consent)", allowed: false, note: true))
    XCTAssertEqual(live.consent(granted: false).note, false, "said once")
    XCTAssertFalse(live.allowed)
    XCTAssertEqual(live.consent(granted: true), .init(shown: "on", allowed: true, note: false))
    XCTAssertTrue(live.allowed)
    XCTAssertEqual(live.consent(granted: false).note, true, "a new revoke is said again")
  }
}
