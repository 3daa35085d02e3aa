import Foundation
import MemoCore
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoVault
import XCTest

@testable import MemoNode

/// What `serve` says of itself, without a daemon: each state written once, each text said
/// once; what `status` says of live sync follows the links' own state (issue 39), so it
/// stays true while avahi-daemon restarts and the daemon waits for it.
final class StatusBoardTests: XCTestCase {
  let none = StatusBoard.Links(any: false, up: [])
  let (a, b) = (TestDevices.id(1), TestDevices.id(2))

  func board() -> StatusBoard {
    StatusBoard(
      status: ServeStatus(
        pid: 1, state: .stopped, waitingFor: nil, instance: nil, port: 0, interfaces: [], updated: 0))
  }

  func testEachStateIsWrittenOnceAndEachTextSaidOnce() {
    var board = board()
    XCTAssertNil(board.republish(links: none, now: 1), "before the first state, nothing to republish")
    let waiting = board.publish(
      .waiting, waitingFor: "local-network consent", instance: nil, port: 0, force: false, links: none, now: 5)
    XCTAssertEqual(waiting?.state, .waiting)
    XCTAssertEqual(waiting?.updated, 5)
    XCTAssertEqual(
      board.written(),
      [
        .report("waiting (local-network consent)"), .notify(.status("waiting: local-network consent")),
        .notify(.ready),
      ])
    XCTAssertNil(
      board.publish(
        .waiting, waitingFor: "local-network consent", instance: nil, port: 0, force: false, links: none, now: 6),
      "nothing changed, nothing written")
    board.status.trustedContacts = [a: 6]
    XCTAssertNotNil(board.republish(links: none, now: 6), "a new contact is written")
    XCTAssertEqual(board.written(), [], "but nothing said: no text changed")
    _ = board.publish(
      .advertising, waitingFor: nil, instance: "memo-peer-1", port: 7410, force: false, links: none, now: 7)
    XCTAssertEqual(
      board.written(),
      [
        .report("advertising as memo-peer-1 on all interfaces (port 7410)"),
        .notify(.status("advertising on all interfaces as memo-peer-1 (port 7410)")),
      ], "READY only once")
  }

  func testLivePeersFollowTheLinksWhileAvahiRestarts() {
    var board = board()
    _ = board.publish(
      .advertising, waitingFor: nil, instance: "memo-peer-1", port: 7410, force: false, links: none, now: 1)
    XCTAssertTrue(board.showLiveSync("on", peers: [a, b], anyLink: true))
    XCTAssertFalse(board.showLiveSync("on", peers: [a, b], anyLink: true), "unchanged")
    let links = StatusBoard.Links(any: true, up: [a])
    let restarting = board.publish(
      .waiting, waitingFor: "the mDNS daemon (avahi-daemon) to be reachable", instance: nil, port: 0, force: false,
      links: links, now: 2)
    XCTAssertEqual(restarting?.liveSync, "on", "the links outlive avahi")
    XCTAssertEqual(restarting?.livePeers, [a], "the links' own state says who is connected")
    let closed = board.publish(
      .waiting, waitingFor: "local-network consent", instance: nil, port: 0, force: false, links: none, now: 3)
    XCTAssertNil(closed?.liveSync, "no link and not advertising: nothing of live sync")
    XCTAssertNil(closed?.livePeers)
    XCTAssertFalse(board.showLiveSync("on", peers: [], anyLink: false), "nothing shown while waiting without links")
    XCTAssertTrue(board.showLiveSync("on", peers: [a], anyLink: true), "a link up is shown again")
    XCTAssertEqual(board.status.livePeers, [a])
  }

  /// `serve.json` names devices by their compact ID, as a list and as an object's keys,
  /// though the status holds them typed: the file reads back the same, and a key that is
  /// not a device ID is not taken for one.
  func testTheFileNamesDevicesByTheirCompactID() throws {
    // 0x00… and 0xF8…: compact "AAAA…" and "7AAA…", whose text order is not their bytes'.
    let (low, high) = (TestDevices.id(0), DeviceID(bytes: [0xF8] + [UInt8](repeating: 0, count: 31))!)
    var status = ServeStatus(
      pid: 1, state: .advertising, waitingFor: nil, instance: nil, port: 1, interfaces: [], updated: 1)
    status.trustedContacts = [low: 5]
    status.livePeers = [high, low]
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let text = String(decoding: try encoder.encode(status), as: UTF8.self)
    XCTAssertTrue(text.contains(#""trusted_contacts":{"\#(low.compact)":5}"#), text)
    XCTAssertTrue(text.contains(#""live_peers":["\#(high.compact)","\#(low.compact)"]"#), text)
    XCTAssertEqual(try JSONDecoder().decode(ServeStatus.self, from: Data(text.utf8)), status)
    XCTAssertEqual(ServeStatus.listed([low, high]), [high, low], "the file's order is the text's")
    // A link dialled at an address DNS-SD did not show is said, in the file and the summary.
    XCTAssertFalse(status.summary.contains("DNS-SD"), status.summary)
    status.liveSync = "on"
    status.liveAddresses = [low: "169.254.1.2:7878"]
    let dialled = String(decoding: try encoder.encode(status), as: UTF8.self)
    XCTAssertTrue(dialled.contains(#""live_addresses":{"\#(low.compact)":"169.254.1.2:7878"}"#), dialled)
    XCTAssertEqual(try JSONDecoder().decode(ServeStatus.self, from: Data(dialled.utf8)), status)
    XCTAssertTrue(
      status.summary.contains("(2 devices connected, 1 reached at an address DNS-SD did not show)"), status.summary)
    let damaged = text.replacingOccurrences(of: low.compact + "\":5", with: "desk\":5")
    XCTAssertThrowsError(try JSONDecoder().decode(ServeStatus.self, from: Data(damaged.utf8)))
  }
}

/// The facts a step decides from are read once per wake, and a file only when it changed:
/// a wake without a change reads no consent log.
final class ServeFactsReaderTests: XCTestCase {
  func testTheConsentLogIsReadOnlyWhenItChanged() throws {
    let home = NSTemporaryDirectory() + "memo-peer-facts-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: home) }
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": home])
    let gate = try ConsentGate(paths: paths)
    var reader = ServeFactsReader(gate: gate, discoveryKey: KeyFile.discovery(paths), lockState: { .unprotected })
    let first = reader.read()
    XCTAssertEqual(first.consent.waitingFor, "local-network consent")
    XCTAssertEqual(first.lock, .unprotected)
    XCTAssertEqual(first.discoveryKey, "absent")
    XCTAssertEqual(reader.consentReads, 1)
    XCTAssertEqual(reader.read(), first)
    XCTAssertEqual(reader.read(), first)
    XCTAssertEqual(reader.consentReads, 1, "no change, no read")
    try gate.record(.granted, scope: .localNetwork, method: .command, note: nil, now: 1)
    XCTAssertNil(reader.read().consent.waitingFor, "the grant is seen at the next wake")
    XCTAssertEqual(reader.consentReads, 2)
    try gate.record(.granted, scope: .backgroundSync, method: .command, note: nil, now: 2)
    XCTAssertTrue(reader.consent().backgroundSync)
    XCTAssertTrue(reader.read().consent.backgroundSync)
    XCTAssertEqual(reader.consentReads, 3, "one read per change")
  }
}

/// The lock state is read from the key file only when it could have changed: an
/// unprotected node's state holds while the file is the same; a protected node's never
/// does (the keyring's idle timeout locks it without a write).
final class LockStateCacheTests: XCTestCase {
  func testOnlyAnUnprotectedStateIsReusedAndOnlyForTheSameFile() {
    XCTAssertEqual(LockStateCache.reusable(("1-2-3-4", .unprotected), stamp: "1-2-3-4"), .unprotected)
    XCTAssertNil(LockStateCache.reusable(("1-2-3-4", .unprotected), stamp: "5-2-3-4"), "`protect` wrote a new file")
    XCTAssertNil(LockStateCache.reusable(("1-2-3-4", .unlocked), stamp: "1-2-3-4"), "the keyring may lock it")
    XCTAssertNil(LockStateCache.reusable(("1-2-3-4", .locked(unlockedSinceBoot: true)), stamp: "1-2-3-4"))
    XCTAssertNil(LockStateCache.reusable(nil, stamp: "absent"), "nothing read yet")
  }

  func testANodeWithoutADeviceKeyFileIsUnprotected() throws {
    let home = NSTemporaryDirectory() + "memo-peer-lock-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: home) }
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": home])
    let cache = LockStateCache(keys: DeviceKeys(paths: paths))
    XCTAssertEqual(cache.read(), .unprotected, "no key file yet: unprotected")
    XCTAssertEqual(cache.read(), .unprotected)
  }
}
