import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// Revocations between real stores, through the production session over in-memory
/// channels: the stolen laptop cut off by a device it never meets again, through the relay;
/// what it signs afterwards refused even when an uninformed member passes it on; two devices
/// revoking each other; revocations nobody may make.
final class RevocationSyncTests: XCTestCase {
  typealias Device = HouseholdDevice

  @discardableResult
  func sync(_ asker: Device, with answerer: Device) throws -> SyncSession.Report {
    try syncDevices(asker, with: answerer)
  }

  func household() throws -> (b: Device, c: Device, x: Device, d: Device, s: Device, notebook: NotebookID) {
    try Household.make().devices
  }

  func testARevocationReachesADeviceThatOnlyMeetsTheRelayAndCutsTheStolenLaptopOff() throws {
    let (b, c, x, d, s, notebook) = try household()
    XCTAssertTrue(try x.titles().contains("before"))

    let result = try b.store.revoke(x.id, name: "x", now: 10)
    XCTAssertEqual(result.unshared, [notebook])
    XCTAssertEqual(result.rotated, [notebook], "b held the key x had: a new generation")
    try b.store.revokedTrustChanges().apply(paths: b.store.paths, keys: DeviceKeys(paths: b.store.paths))
    XCTAssertFalse(try b.trusted().contains(x.id))

    // The relay learns it from b, c only from the relay.
    let relayed = try sync(s, with: b)
    XCTAssertEqual(relayed.revoked.map(\.revoked), [x.id])
    XCTAssertFalse(try s.trusted().contains(x.id), "the relay stops trusting x")
    let reached = try sync(c, with: s)
    XCTAssertEqual(reached.revoked.map(\.revoked), [x.id], "c never met b since")
    XCTAssertEqual(reached.revoked.first?.revoker, b.id)
    XCTAssertFalse(try c.trusted().contains(x.id))
    XCTAssertEqual(try c.store.members(of: notebook).map(\.device).contains(x.id), false)
    XCTAssertEqual(try c.store.revocations().map(\.state), [.applied])

    // x writes; d, which has not heard of the revocation, takes x's memo.
    try c.store.create(MemoDraft(title: "after", body: "x must not read this"), now: 11)
    let written = try x.store.create(MemoDraft(title: "written by x", body: "after the revocation"), now: 12)
    try sync(d, with: x)
    XCTAssertTrue(try d.titles().contains("written by x"))

    // x gets nothing new from c or s, and what it writes reaches neither; it learns that it
    // was revoked (and would pass that on itself).
    for other in [c, s] {
      let report = try sync(x, with: other)
      XCTAssertEqual(report.received.applied, 0)
      XCTAssertEqual(report.sentRevisions, 0, "\(other.name) takes nothing of x")
    }
    XCTAssertFalse(try x.titles().contains("after"))
    XCTAssertFalse(try s.holds(written.id.rawValue))
    XCTAssertEqual(try x.store.revocations().map(\.state), [.againstThisDevice])

    // d passes x's memo on: the relay, which verifies without reading, refuses it, and d
    // learns of the revocation in the same sync.
    let passedOn = try sync(d, with: s)
    XCTAssertEqual(passedOn.revoked.map(\.revoked), [x.id])
    XCTAssertEqual(passedOn.sent.quarantined, 1, "the relay keeps x's record aside")
    XCTAssertFalse(try s.relays(written.id), "and does not forward it")
    XCTAssertEqual(
      try s.store.quarantined().map(\.reason), ["a revision signed by \(x.id.short) after it was revoked"])
    try sync(c, with: s)
    XCTAssertFalse(try c.titles().contains("written by x"))
    // The revocation made nothing else fail: c's memo reached the relay and d.
    XCTAssertTrue(try s.relays(try XCTUnwrap(c.store.allHeadRows().first { $0.title == "after" }).id))
  }

  func testTwoDevicesRevokingEachOtherAreBothRevokedWhicheverArrivesFirst() throws {
    let (b, c, x, _, s, _) = try household()
    _ = try b.store.revoke(x.id, name: "x", now: 10)
    _ = try x.store.revoke(b.id, name: "b", now: 10)
    try sync(s, with: b)
    // c hears x's first: b is revoked here; then b's, made by a device revoked here, still
    // counts against the device that revoked it.
    XCTAssertEqual(try sync(c, with: x).revoked.map(\.revoked), [b.id])
    XCTAssertEqual(try sync(c, with: s).revoked.map(\.revoked), [x.id])
    XCTAssertEqual(Set(try c.store.revocations().filter { $0.state == .applied }.map(\.revoked)), [b.id, x.id])
    XCTAssertFalse(try c.trusted().contains(b.id))
    XCTAssertFalse(try c.trusted().contains(x.id))
  }

  func testARevocationByARelayOrAnUntrustedDeviceOrWithABadSignatureIsNotApplied() throws {
    let (b, c, _, _, s, _) = try household()
    // The relay revokes c: a relay may not.
    _ = try s.store.revoke(c.id, name: "c", now: 10)
    try sync(b, with: s)
    XCTAssertTrue(try b.trusted().contains(c.id))
    XCTAssertEqual(try b.store.revocations(), [])
    XCTAssertEqual(
      try b.store.quarantined().map(\.reason),
      ["a revocation not applied: its maker is not a member trusted here"])

    // A forged signature in the hello of a trusted member.
    let stranger = try Device("stranger")
    let forged = try stranger.store.revoke(c.id, name: nil, now: 11)
    XCTAssertEqual(forged.note.revoker, stranger.id)
    var revocation = try XCTUnwrap(
      SyncRules.checkedRevocations(try stranger.store.revocationsToSend()).first)
    // Untrusted here: not applied.
    let trustStore = TrustStore(paths: b.store.paths, keys: DeviceKeys(paths: b.store.paths))
    let names = {
      Dictionary(try trustStore.load().peers.map { ($0.deviceID, $0.name) }, uniquingKeysWith: { a, _ in a })
    }
    XCTAssertEqual(
      try b.store.batch { try b.store.takeRevocations([revocation], from: s.id, trustedNames: names, now: 12) }, [])
    revocation.signature[0] ^= 1
    XCTAssertEqual(
      try b.store.batch { try b.store.takeRevocations([revocation], from: s.id, trustedNames: names, now: 12) }, [])
    XCTAssertTrue(
      try b.store.quarantined().contains { $0.reason == "a revocation whose signature does not verify" })
    XCTAssertTrue(try b.trusted().contains(c.id))
  }

  func testATrustedAgainDeviceIsNotRevokedAgainByTheSameRevocation() throws {
    let (b, c, x, _, s, _) = try household()
    _ = try b.store.revoke(x.id, name: "x", now: 10)
    try sync(s, with: b)
    try sync(c, with: s)
    XCTAssertFalse(try c.trusted().contains(x.id))
    // The person on c trusts x again (the use case forgives, then trusts).
    try c.store.forgiveRevocations(of: x.id)
    try c.trusts([x])
    try sync(c, with: s)
    XCTAssertTrue(try c.trusted().contains(x.id), "the revocation c overrode is not applied again")
    XCTAssertEqual(try c.store.revocations().map(\.state), [.overridden])
  }

  /// Every device that applies a revocation gets a new discovery key (the revoked device
  /// knew the old one) and marks its trusted devices' keys as possibly old (they rotate
  /// theirs too); one that only holds a revocation against a third device as made by an
  /// untrusted one does neither.
  func testApplyingARevocationRotatesTheDiscoveryKeyAndMarksThePeersKeysOld() throws {
    let (b, c, x, _, s, _) = try household()
    func discoveryKey(_ device: Device) throws -> [UInt8] {
      try NodeSecrets(paths: device.node.paths).discoveryKey().withUnsafeBytes { Array($0) }
    }
    try s.trust.update { list in
      _ = list.learnDiscoveryKey(Data(repeating: 3, count: 32).base64EncodedString(), rotationSeconds: 900, for: c.id)
    }
    let before = try [b, s, c].map(discoveryKey)
    let result = try b.store.revoke(x.id, name: "x", now: 10)
    XCTAssertEqual(try discoveryKey(b), before[0], "the store writes no key file")
    try result.trustChanges.apply(paths: b.store.paths, keys: DeviceKeys(paths: b.store.paths))
    XCTAssertNotEqual(try discoveryKey(b), before[0], "the revoker rotates")
    try sync(s, with: b)
    XCTAssertNotEqual(try discoveryKey(s), before[1], "so does a device that applies it")
    XCTAssertEqual(try s.trust.load().find(c.id.compact).discoveryKeyStale, true, "c will rotate too")
    XCTAssertEqual(try discoveryKey(c), before[2], "c has not heard of it yet")
    try sync(c, with: s)
    XCTAssertNotEqual(try discoveryKey(c), before[2])
    let keyOnX = try x.trust.load().peers.compactMap(\.discoveryKey)
    for device in [b, s, c] {
      let now = try discoveryKey(device)
      XCTAssertFalse(keyOnX.contains(Data(now).base64EncodedString()), "x knows no new key of \(device.name)'s")
    }
  }

  func testAReplayedRevocationChangesNothing() throws {
    let (b, _, x, _, s, _) = try household()
    _ = try b.store.revoke(x.id, name: "x", now: 10)
    XCTAssertEqual(try sync(s, with: b).revoked.count, 1)
    XCTAssertEqual(try sync(s, with: b).revoked.count, 0, "known already")
    XCTAssertEqual(try s.store.revocations().count, 1)
  }
}

/// One device of the household in the tests of revocations and purges: its store, its ID
/// (its identity key's) and its trust store.
final class HouseholdDevice {
  let node: TemporaryNode
  let store: MemoStore
  let id: DeviceID
  let name: String

  init(_ name: String) throws {
    self.name = name
    node = try TemporaryNode()
    store = try node.open()
    id = try store.deviceID()
  }

  var answerer: SyncAnswerSide { SyncAnswerSide(paths: node.paths, device: id) }
  var trust: TrustStore { TrustStore(paths: node.paths) }

  func trusts(_ others: [HouseholdDevice]) throws {
    try trust.update { list in
      for other in others where other.id != id {
        try list.trust(TrustedPeer(deviceID: other.id, name: other.name, discoveryKey: nil, source: .command, added: 1))
      }
    }
  }

  func trusted() throws -> Set<DeviceID> { Set(try trust.load().peers.map(\.deviceID)) }
  func titles() throws -> Set<String> { Set(try store.allHeadRows().filter { !$0.isDeleted }.map(\.title)) }
  func holds(_ text: String) throws -> Bool { try node.rawDataBytes().contains(bytes: Array(text.utf8)) }

  /// Whether the relay keeps (to forward) a record of `memo`; kept aside is not kept.
  func relays(_ memo: MemoID) throws -> Bool {
    let db = try SQLiteConnection(path: node.paths.databasePath, create: false)
    let read = try db.prepare("SELECT count(*) FROM relayed WHERE memo = ?")
    try read.bind(1, memo.rawValue)
    _ = try read.step()
    return read.int64(0) > 0
  }
}

/// `asker` syncs with `answerer` (both ways); both sides must succeed.
@discardableResult
func syncDevices(_ asker: HouseholdDevice, with answerer: HouseholdDevice) throws -> SyncSession.Report {
  let run = runSync(asker.store, as: asker.id, with: answerer.answerer, batch: 4)
  let report = try run.report()
  try run.answerer.get()
  return report
}

/// Laptops b, c, x and d, members of b's notebook, and the relay s; everyone trusts everyone
/// and has synced once with b, after b wrote the memo "before".
struct Household {
  let b: HouseholdDevice, c: HouseholdDevice, x: HouseholdDevice, d: HouseholdDevice, s: HouseholdDevice
  let notebook: NotebookID

  var devices:
    (
      b: HouseholdDevice, c: HouseholdDevice, x: HouseholdDevice, d: HouseholdDevice, s: HouseholdDevice,
      notebook: NotebookID
    )
  { (b, c, x, d, s, notebook) }

  static func make() throws -> Household {
    let all = try ["b", "c", "x", "d", "s"].map(HouseholdDevice.init)
    for device in all { try device.trusts(all) }
    let notebook = try all[0].store.defaultNotebook().id
    try shareNotebook(
      notebook, among: all.map { ($0.store, $0.id) }, roles: [.member, .member, .member, .member, .relay])
    try all[0].store.create(MemoDraft(title: "before", body: "everyone may read this"), now: 2)
    for device in all.dropFirst() { try syncDevices(device, with: all[0]) }
    return Household(b: all[0], c: all[1], x: all[2], d: all[3], s: all[4], notebook: notebook)
  }
}
