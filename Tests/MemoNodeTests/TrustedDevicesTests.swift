import Foundation
import MemoCore
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// The daemon's trust set, as the TLS verify callback and the sessions in progress ask it:
/// the trust file decides, whether or not the daemon's loop has reloaded it.
final class TrustedDevicesTests: XCTestCase {
  /// Strangers presenting key after key do not make the daemon read (and decrypt) the trust
  /// file for each: it is read again only when it changed; a device trusted a moment ago is
  /// still accepted at once.
  func testUnknownKeysReadTheTrustFileOnlyWhenItChanged() throws {
    let (a, b) = try trustingPair()
    let devices = try TrustedDevices(store: a.trust)
    XCTAssertTrue(devices.accepts(b.id))
    for byte in 1...100 { XCTAssertFalse(devices.accepts(TestDevices.id(UInt8(byte)))) }
    XCTAssertEqual(devices.fileLookups, 0, "the file did not change: nothing to read")
    let c = try TestNode()
    try a.trusts(c, as: "sea")
    XCTAssertTrue(devices.accepts(c.id), "trusted a moment ago")
    for byte in 1...100 { XCTAssertFalse(devices.accepts(TestDevices.id(UInt8(byte)))) }
    XCTAssertEqual(devices.fileLookups, 1, "read once after the change")
  }

  /// Issue 38: a handshake right after `trust remove` was still answered from the loaded
  /// set until the daemon's loop reloaded it.
  func testADeviceRemovedFromTheFileIsRefusedAtOnceWithoutAReload() throws {
    let (a, b) = try trustingPair(sharing: false)
    let devices = try TrustedDevices(store: a.trust)
    XCTAssertTrue(devices.accepts(b.id))
    _ = try a.trust.update { try $0.remove("bee") }
    XCTAssertTrue(devices.contains(b.id), "the daemon's loop has not reloaded")
    XCTAssertFalse(devices.accepts(b.id), "but the file no longer trusts it")
    XCTAssertFalse(devices.accepts(b.id), "nor on the next handshake")
    XCTAssertEqual(devices.fileLookups, 1, "one read for the change, whatever the number of handshakes")
    XCTAssertEqual(try devices.reloadIfChanged(), [b.id], "the loop still learns whom to disconnect")
    XCTAssertFalse(devices.accepts(b.id))
  }

  func testADeviceTrustedAgainIsAcceptedAgainAtOnce() throws {
    let (a, b) = try trustingPair(sharing: false)
    let devices = try TrustedDevices(store: a.trust)
    _ = try a.trust.update { try $0.remove("bee") }
    XCTAssertFalse(devices.accepts(b.id))
    try a.trusts(b, as: "bee")
    XCTAssertTrue(devices.accepts(b.id), "the file trusts it again")
  }

  /// A session outside the daemon (`sync`, `send --wait`) follows the file from its first
  /// question, without a load up front.
  func testASetFollowingTheFileReadsItAtTheFirstQuestion() throws {
    let (a, b) = try trustingPair(sharing: false)
    let devices = TrustedDevices(following: a.trust)
    XCTAssertTrue(devices.accepts(b.id))
    XCTAssertEqual(devices.fileLookups, 1)
    _ = try a.trust.update { try $0.remove("bee") }
    XCTAssertFalse(devices.accepts(b.id))
  }
}

/// The rule `TrustedDevices` applies, without a file: a reading answers only for the file it
/// was taken of.
final class TrustReadingTests: XCTestCase {
  let device = TestDevices.id(1)

  func testAReadingOfTheFileAsItIsNowAnswersBothWays() {
    let reading = TrustReading(fingerprint: "f1", devices: [device])
    XCTAssertEqual(TrustReading.answer(for: device, fileNow: "f1", readings: [reading]), .trusted)
    XCTAssertEqual(TrustReading.answer(for: TestDevices.id(2), fileNow: "f1", readings: [reading]), .refused)
  }

  func testAStaleReadingNeverAnswersEvenForADeviceItTrusted() {
    let stale = TrustReading(fingerprint: "f1", devices: [device])
    XCTAssertEqual(TrustReading.answer(for: device, fileNow: "f2", readings: [stale, nil]), .readFile)
    let fresh = TrustReading(fingerprint: "f2", devices: [])
    XCTAssertEqual(
      TrustReading.answer(for: device, fileNow: "f2", readings: [stale, fresh]), .refused,
      "the reading of the file as it is now decides")
  }
}

/// A file that cannot be read refuses every new handshake but ends no session in progress:
/// only a reading that leaves the device out removes it.
final class TrustedDevicesUnreadableFileTests: XCTestCase {
  func testALockedTrustFileRefusesHandshakesButEndsNoSession() throws {
    let (a, b) = try trustingPair(sharing: false)
    try a.protectComplete()
    a.expireIdleTimeout()
    let devices = TrustedDevices(following: a.trust)
    XCTAssertFalse(devices.accepts(b.id), "whom it trusts cannot be told: no handshake")
    XCTAssertTrue(devices.stillTrusts(b.id), "the lock, not a removal: the session ends for that reason")
  }

  func testARemovalEndsTheSessionOnceTheFileIsRead() throws {
    let (a, b) = try trustingPair(sharing: false)
    let devices = TrustedDevices(following: a.trust)
    XCTAssertTrue(devices.stillTrusts(b.id))
    _ = try a.trust.update { try $0.remove("bee") }
    XCTAssertFalse(devices.stillTrusts(b.id))
  }
}
