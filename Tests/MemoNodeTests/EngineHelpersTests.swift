import Foundation
import MemoCore
import MemoProtocol
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The small pieces the engine is built from: blocking work off the cooperative pool, the
/// one timeout helper, the connection-state tracker, and the shared sets the daemon's
/// threads read.
final class EngineHelpersTests: XCTestCase {
  func testBlockingWorkHandsBackItsResultOrError() throws {
    XCTAssertEqual(try runAsync { try await BlockingIO.run("mp.test.block") { 6 * 7 } }, 42)
    XCTAssertThrowsError(
      try runAsync { try await BlockingIO.run("mp.test.failing") { throw MemoPeerError(.io, "disk") } }
    ) { error in XCTAssertEqual((error as? MemoPeerError)?.code, .io) }
  }

  /// More blocked calls than the pool has threads, and other async work still runs: the
  /// blocked calls are released only after it did.
  func testBlockedCallsDoNotStallOtherTasks() throws {
    let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
    let release = DispatchSemaphore(value: 0)
    let started = Recorder<Int>()
    let outcome = try runAsync {
      try await withThrowingTaskGroup(of: String.self) { group in
        for index in 0..<count {
          group.addTask {
            try await BlockingIO.run("mp.test.blocked") {
              started.append(index)
              _ = release.wait(timeout: .now() + 30)  // bounds a failing run, never a passing one
              return "blocked \(index)"
            }
          }
        }
        // Ordinary async work, while every blocked call holds its thread.
        let ordinary = await Task { () -> String in
          while started.all.count < count { await Task.yield() }
          return "ordinary work ran"
        }.value
        for _ in 0..<count { release.signal() }
        var finished = 0
        for try await _ in group { finished += 1 }
        return "\(ordinary), \(finished) released"
      }
    }
    XCTAssertEqual(outcome, "ordinary work ran, \(count) released")
  }

  func testUntilDeadlineReturnsTheValueOrNilWhenTheDeadlineComesFirst() throws {
    XCTAssertEqual(try runAsync { try await untilDeadline(.after(seconds: 10)) { 42 } }, 42)
    let clock = ManualClock()
    let late = try runAsync { () async throws -> Int? in
      async let outcome = untilDeadline(.after(seconds: 0.05, clock: clock)) { () async throws -> Int in
        try await Deadline.after(seconds: 30, clock: clock).waitUntilPassed()
        return 1
      }
      // Both waits (the deadline's and the body's) are pending: time reaches the deadline only.
      while clock.pendingWaits < 2 { await Task.yield() }
      clock.advance(by: .milliseconds(50))
      return try await outcome
    }
    XCTAssertNil(late, "the body was cancelled at the deadline")
    XCTAssertThrowsError(
      try runAsync {
        try await untilDeadline(.after(seconds: 10)) { () async throws -> Int in throw CancellationError() }
      })
  }

  func testTheStateTrackerReportsEachAllowedChangeOnce() {
    let seen = Recorder<ConnectionState>()
    let tracker = StateTracker { seen.append($0) }
    tracker.move(.waiting(.peerNotFound))  // not before setup
    tracker.move(.setup)
    tracker.move(.waiting(.localNetworkConsent))
    tracker.move(.waiting(.localNetworkConsent))  // no change
    tracker.move(.waiting(.peerNotFound))
    tracker.move(.preparing)
    tracker.move(.ready)
    tracker.move(.waiting(.peerUnreachable))  // ready only ends
    XCTAssertEqual(
      seen.all, [.setup, .waiting(.localNetworkConsent), .waiting(.peerNotFound), .preparing, .ready])
    XCTAssertEqual(tracker.lastWaitReason, .peerNotFound)
  }

  func testTrustedDevicesFollowTheStoreAndNameTheDevicesRemoved() throws {
    let node = try TestNode()
    let first = try TestNode()
    let second = try TestNode()
    try node.trusts(first, as: "one")
    let devices = try TrustedDevices(store: node.trust)
    XCTAssertEqual(devices.all, [first.id])
    XCTAssertNil(try devices.reloadIfChanged(), "nothing changed")
    try node.trusts(second, as: "two")
    XCTAssertFalse(devices.contains(second.id), "not reloaded yet")
    XCTAssertTrue(devices.accepts(second.id), "but a handshake finds it in the file at once")
    XCTAssertEqual(try devices.reloadIfChanged(), [])
    _ = try node.trust.update { try $0.remove("one") }
    XCTAssertEqual(try devices.reloadIfChanged(), [first.id], "whose connections the daemon closes")
    XCTAssertFalse(devices.accepts(first.id))
  }

  func testContactsAreTakenOnceWithTheTimeTheyWereTaken() {
    let contacts = TrustedContacts()
    XCTAssertNil(contacts.takeChanges(clock: { 1 }))
    contacts.record(TestDevices.id(1))
    contacts.record(TestDevices.id(1))
    let first = contacts.takeChanges(clock: { 5 })
    XCTAssertEqual(first?.all, [TestDevices.id(1): 5])
    XCTAssertEqual(first?.fresh, [TestDevices.id(1)], "who called since the last look: dialled back at once")
    XCTAssertNil(contacts.takeChanges(clock: { 6 }), "nothing new")
    contacts.record(TestDevices.id(2))
    let second = contacts.takeChanges(clock: { 9 })
    XCTAssertEqual(second?.all, [TestDevices.id(1): 5, TestDevices.id(2): 9])
    XCTAssertEqual(second?.fresh, [TestDevices.id(2)])
  }
}
