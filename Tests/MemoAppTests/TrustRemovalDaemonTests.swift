import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoApp

/// `trust remove` waits for the running daemon to say it applied the new trust store (its
/// `serve.json` names the file's fingerprint and no live link with the device), bounded:
/// a daemon that does not answer leaves the removal done and says so.
final class TrustRemovalDaemonTests: XCTestCase {
  func daemonStatus(_ app: App, trustStore: String?, livePeers: [DeviceID]) throws {
    var status = ServeStatus(
      pid: getpid(), state: .advertising, waitingFor: nil, instance: "memo-peer-test", port: 7410, interfaces: [],
      updated: 1)
    status.trustStore = trustStore
    status.livePeers = livePeers
    try status.write(app.paths)
  }

  func testWithoutADaemonThereIsNothingToWaitFor() throws {
    let node = try AppFixture()
    _ = try node.app().trust.add(SyncUseCaseTests.desk.deviceID.description, name: "desk")
    XCTAssertEqual(try node.app().trust.remove("desk", hereOnly: true).daemon, .noDaemon)
  }

  /// A stand-in daemon that applies the trust file once it changes, as ServeEngine does:
  /// the removal returns confirmed.
  func testTheRemovalReturnsOnceTheDaemonAppliedTheNewTrustStore() throws {
    let node = try AppFixture()
    let app = node.app()
    let desk = try app.trust.add(SyncUseCaseTests.desk.deviceID.description, name: "desk")
    let before = app.trustStore.fingerprint()
    try daemonStatus(app, trustStore: before, livePeers: [desk.deviceID])
    let (paths, trust) = (app.paths, app.trustStore)
    // The removal polls the status file on the shared clock: once it waits (the trust file
    // is written by then), the daemon applies it and time moves on to the next look.
    let clock = ManualClock()
    let restore = clock.install()
    defer { restore() }
    let daemon = Thread {
      clock.untilWaiting()
      XCTAssertNotEqual(trust.fingerprint(), before, "the removal waits after writing the trust file")
      var status = ServeStatus.read(paths)!
      status.trustStore = trust.fingerprint()
      status.livePeers = []
      try? status.write(paths)
      clock.advance(by: .milliseconds(20))
    }
    daemon.start()
    let removal = try app.trust.remove("desk", hereOnly: true, daemonWait: 10)
    XCTAssertEqual(removal.daemon, .confirmed)
    XCTAssertEqual(TrustRemovalJSON(removal).daemon, "confirmed")
  }

  func testADaemonThatDoesNotAnswerLeavesTheRemovalDoneAndSaysSo() throws {
    let node = try AppFixture()
    let app = node.app()
    let desk = try app.trust.add(SyncUseCaseTests.desk.deviceID.description, name: "desk")
    try daemonStatus(app, trustStore: app.trustStore.fingerprint(), livePeers: [desk.deviceID])
    let removal = try app.trust.remove("desk", hereOnly: true, daemonWait: 0.1)
    XCTAssertEqual(removal.daemon, .unconfirmed)
    XCTAssertTrue(try app.trust.list().peers.isEmpty, "removed all the same")
  }

  /// The rule the wait applies, without files.
  func testADaemonHasAppliedARemovalOnlyWithTheFileAsItIsAndNoLinkLeft() {
    let device = SyncUseCaseTests.desk.deviceID
    var status = ServeStatus(
      pid: 1, state: .advertising, waitingFor: nil, instance: nil, port: 1, interfaces: [], updated: 1)
    status.trustStore = "new"
    status.livePeers = [device]
    XCTAssertFalse(status.hasApplied(trustFile: "new", removed: device), "its link is still up")
    status.livePeers = []
    XCTAssertTrue(status.hasApplied(trustFile: "new", removed: device))
    XCTAssertFalse(status.hasApplied(trustFile: "newer", removed: device), "the file changed again since")
  }
}
