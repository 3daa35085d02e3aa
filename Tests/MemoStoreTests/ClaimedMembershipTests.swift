import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoProtocol
import MemoTestSupport
import Synchronization
import XCTest

@testable import MemoStore

/// Issue 23's attacks by a trusted device that speaks the real protocol (sync version 3),
/// each on the production session or the store's intake: what a device claims about a
/// notebook counts for nothing; only ops a member signed do, and every device checks them.
/// The household: laptops b, c, x and d (members of b's notebook) and the relay s.
final class ClaimedMembershipTests: XCTestCase {
  /// An op signed by `device` on top of `store`'s log of `notebook` (whatever it says).
  func forged(
    _ body: NotebookOp.Body, in notebook: NotebookID, by device: HouseholdDevice, on store: MemoStore
  ) throws -> NotebookOp {
    let log = try XCTUnwrap(try store.membershipLog(notebook))
    var op = NotebookOp(notebook: notebook, author: try device.store.signer().publicKey, parents: log.heads, body: body)
    op.signature = try device.store.signer().signature(for: op.signedMessage)
    return op
  }

  /// `store` takes `ops` of `notebook` from `peer`, as a sync's `sync-ops` would bring them.
  func take(_ ops: [NotebookOp], of notebook: NotebookID, into store: MemoStore, from peer: DeviceID) throws
    -> OpsIntake
  {
    try store.batch {
      try store.takeOps([SyncOps.Notebook(id: notebook, ops: ops.map(\.encoded))], from: peer, now: 5)
    }
  }

  func members(_ device: HouseholdDevice, _ notebook: NotebookID) throws -> [DeviceID: NotebookOp.Role] {
    try XCTUnwrap(try device.store.membershipState(notebook)).members
  }

  /// The relay offers the notebook back as a member with a key of its own choosing: before,
  /// the member took the key as current, sealed every record under it and passed it on.
  func testARelaySigningItselfAMemberWithAKeyOfItsOwnGivesItNone() throws {
    let (b, _, _, _, s, notebook) = try Household.make().devices
    let before = try b.store.keyring(notebook).keys.keys.sorted()
    let current = try b.store.keyring(notebook).current?.id
    let share = try forged(.share(device: s.id, role: .member), in: notebook, by: s, on: b.store)
    let key = try forged(
      .key(generation: 99, keyID: Array(repeating: 5, count: 16), sealed: []), in: notebook, by: s, on: b.store)
    let intake = try take([share, key], of: notebook, into: b.store, from: s.id)
    XCTAssertEqual(intake.added, 0)
    XCTAssertEqual(intake.refused, 2, "both kept aside, naming the relay")
    XCTAssertEqual(try b.store.keyring(notebook).keys.keys.sorted(), before, "no key taken")
    XCTAssertEqual(try b.store.keyring(notebook).current?.id, current, "nothing sealed under the relay's key")
    XCTAssertEqual(try members(b, notebook)[s.id], .relay, "s is still only a relay")
    XCTAssertTrue(try b.store.quarantined().contains { $0.peer == s.id && $0.reason.hasPrefix("membership:") })
  }

  /// A trusted device that is in no log, knowing a notebook's id (every relay does) and
  /// listing it — and 255 made-up ones — in its hello as held: before, it got the key and
  /// the memos, and two such hellos made a node join 512 notebooks nobody asked it about.
  func testATrustedDeviceThatIsNoMemberGetsNothingWhateverItClaims() throws {
    let household = try Household.make()
    let (b, _, _, _, _, notebook) = household.devices
    let stranger = try HouseholdDevice("e")
    try b.trusts([stranger])
    var entries = [NotebookEntry(id: notebook, heads: [], held: true, knowledge: VersionVector())]
    for index in 0..<255 {
      entries.append(NotebookEntry(id: NotebookID(String(format: "%032x", index + 1))!, heads: [], held: true))
    }
    let hello = PeerMessage.encode(
      SyncMessage.Hello(
        replica: stranger.store.replicaID, knowledge: VersionVector(), cursor: nil, pending: nil, notebooks: entries))
    let notebooksBefore = try b.store.notebooks().map(\.id)
    let seen = Mutex<ScriptedSyncPeer.Answerer?>(nil)
    let answerer = b.answerer
    let result = InMemorySession.run(
      firstID: stranger.id, secondID: b.id,
      first: { channel in
        try ScriptedSyncPeer.ask(over: channel, hello: hello) { answered in
          seen.withLock { $0 = answered }
          return []
        }
      },
      second: { channel in try answerer.answer(channel, batch: SyncSession.BatchLimits(revisions: 4)) })
    _ = try result.first.get()
    let answered = try XCTUnwrap(seen.withLock { $0 })
    XCTAssertEqual(answered.hello.notebooks ?? [], [], "b lists no notebook to a device in none of its logs")
    XCTAssertEqual(answered.ops, [], "and sends it no op")
    XCTAssertEqual(answered.revisions, [], "nor a record")
    XCTAssertEqual(try b.store.notebooks().map(\.id), notebooksBefore, "b joined nothing")
    XCTAssertEqual(try b.store.invitations(), [])
  }

  /// A relay's unshare of a member (before: an unsigned removal with a time far in the
  /// future, which also undid the person's later re-share) counts for nothing; a member's
  /// op sent again changes nothing.
  func testAnUnshareByARelayIsRefusedAndAReplayedOpChangesNothing() throws {
    let (b, c, _, _, s, notebook) = try Household.make().devices
    let unshare = try forged(.unshare(device: c.id, cut: []), in: notebook, by: s, on: b.store)
    XCTAssertEqual(try take([unshare], of: notebook, into: b.store, from: s.id).refused, 1)
    XCTAssertEqual(try members(b, notebook)[c.id], .member)
    // b's own share of c, sent back to it: a replay.
    let log = try XCTUnwrap(try b.store.membershipLog(notebook))
    let replayed = try take(log.ops, of: notebook, into: b.store, from: s.id)
    XCTAssertEqual(replayed, OpsIntake(), "nothing added, nothing refused")
    XCTAssertEqual(try b.store.membershipLog(notebook)?.count, log.count)
    // And the syncs go on as before.
    try b.store.create(MemoDraft(title: "t", body: "after the forged unshare"), now: 6)
    try syncDevices(s, with: b)
    try syncDevices(c, with: s)
    XCTAssertTrue(try c.titles().contains("t"))
  }

  /// The hub story in memory, on the production session: b and c never sync with each
  /// other, only with the relay s, and c reads everything b writes. Before, the key reached
  /// c only when the two laptops met directly.
  func testLaptopsThatOnlyMeetTheRelayReadEachOthersMemos() throws {
    let b = try HouseholdDevice("b")
    let c = try HouseholdDevice("c")
    let s = try HouseholdDevice("s")
    let notebook = try b.store.createNotebook(named: "family", now: 1).id
    try b.store.share(notebook, with: s.id, as: .relay, now: 1)
    try b.store.share(notebook, with: c.id, as: .member, now: 1)
    let memos = try (0..<8).map {
      try b.store.create(MemoDraft(title: "m\($0)", body: "canary \($0)"), now: 2, in: notebook)
    }
    try syncDevices(b, with: s)
    XCTAssertEqual(try s.store.invitations().map(\.notebook), [notebook])
    _ = try s.store.acceptInvitation(notebook.rawValue, now: 3)
    try syncDevices(b, with: s)
    XCTAssertEqual(try s.store.relayedRevisionCount(), 8)
    // c is invited through s; its key reaches s in its hello, b through s's, and b's grant
    // of the keys reaches c through s.
    XCTAssertEqual(try syncDevices(c, with: s).ops.invited, [notebook])
    // Its name is sealed under a key c does not hold yet: accepted by its id.
    XCTAssertNil(try c.store.invitations().first?.name)
    _ = try c.store.acceptInvitation(String(notebook.rawValue.prefix(8)), now: 4)
    try syncDevices(c, with: s)
    XCTAssertEqual(try c.titles(), [], "no key yet: nothing opened, nothing lost")
    try syncDevices(b, with: s)
    try syncDevices(c, with: s)
    XCTAssertEqual(try c.titles(), Set(memos.map(\.title)))
    XCTAssertEqual(
      try s.store.db.scalarInt("SELECT count(*) FROM notebook_keys WHERE notebook = '\(notebook)'"), 0,
      "the relay holds no key")
    for index in 0..<8 { XCTAssertFalse(try s.holds("canary \(index)")) }
    // And back: what c writes reaches b through s.
    try c.store.create(MemoDraft(title: "from c", body: "c to b"), now: 5, in: notebook)
    try syncDevices(c, with: s)
    try syncDevices(b, with: s)
    XCTAssertTrue(try b.titles().contains("from c"))
  }

  /// A member seals a new key generation to the wrong device's key for c: c cannot open it,
  /// keeps it aside once (naming the notebook's signer), goes on reading what it can and says
  /// why it cannot write; nothing fails.
  func testAKeySealedToTheWrongDeviceIsKeptAsideAndNothingElseBreaks() throws {
    let (b, c, _, d, s, notebook) = try Household.make().devices
    let material = try SecureBytes.random(count: AES256GCMKey.keySize)
    let keyID = try SyncDerivations.keyID(of: material)
    let dKey = try XCTUnwrap(try b.store.publicKey(of: d.id))
    _ = try b.store.batch {
      try b.store.appendOwnOp(notebook, now: 6) { log, signer in
        try log.rotateKey(keyID: keyID, sealed: [c.id: try SealedBox.seal(material, to: dKey)], signer: signer)
      }
    }
    try syncDevices(s, with: b)
    let report = try syncDevices(c, with: s)
    XCTAssertEqual(report.ops.refused, 0, "the op itself is sound")
    XCTAssertTrue(try c.store.quarantined().contains { $0.reason.contains("does not open on this device") })
    XCTAssertNil(try c.store.keyring(notebook)[Hex.encode(keyID)])
    XCTAssertTrue(try c.titles().contains("before"), "what c had stays readable")
    XCTAssertThrowsError(try c.store.create(MemoDraft(title: "t", body: "x"), now: 7, in: notebook)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .keyMissing, "it says it waits for the key")
    }
    XCTAssertEqual(try c.store.quarantined().filter { $0.reason.contains("does not open") }.count, 1)
    try syncDevices(c, with: s)
    XCTAssertEqual(
      try c.store.quarantined().filter { $0.reason.contains("does not open") }.map(\.count), [1], "kept aside once")
  }

  /// The relay withholds b's unshare of d (and the new key) from c: c goes on as before
  /// (d still a member in its eyes, b's new memos waiting for their key) until the ops
  /// reach it; the relay can delay them, never forge or change them.
  func testARelayWithholdingPartOfTheLogDelaysButCannotForge() throws {
    let (b, c, _, d, s, notebook) = try Household.make().devices
    _ = try b.store.unshare(notebook, from: d.id, now: 6)
    try b.store.create(MemoDraft(title: "after", body: "sealed with the new key"), now: 7)
    try syncDevices(s, with: b)
    // s withholds the two newest ops (the unshare and the key): the log it tells c about is
    // a causal prefix.
    let withheld = try s.store.db.scalarInt(
      "SELECT count(*) FROM notebook_ops WHERE notebook = '\(notebook)' AND position > "
        + "(SELECT max(position) - 2 FROM notebook_ops WHERE notebook = '\(notebook)')")
    XCTAssertEqual(withheld, 2)
    try s.node.tamper(
      "DELETE FROM notebook_ops WHERE notebook = '\(notebook)' AND position > "
        + "(SELECT max(position) - 2 FROM notebook_ops WHERE notebook = '\(notebook)')")
    try syncDevices(c, with: s)
    XCTAssertEqual(try members(c, notebook)[d.id], .member, "c has not heard of the unshare")
    XCTAssertFalse(try c.titles().contains("after"), "and cannot read what needs the new key")
    XCTAssertEqual(try c.store.quarantined().count, 0, "nothing of it taken for bad data")
    // s hears the ops again from b (its heads lack them), and passes them on.
    try syncDevices(s, with: b)
    try syncDevices(c, with: s)
    XCTAssertNil(try members(c, notebook)[d.id])
    XCTAssertTrue(try c.titles().contains("after"))
    XCTAssertEqual(try c.store.membershipState(notebook), try b.store.membershipState(notebook))
  }

  /// b and c remove each other at the same moment (neither has seen the other's unshare):
  /// every other device has both out, whatever order they arrive in, and the others stay
  /// members. (A removed device is sent nothing more of the notebook, its log included.)
  func testTwoMembersRemovingEachOtherAtOnceAreBothOutEverywhere() throws {
    let (b, c, x, d, s, notebook) = try Household.make().devices
    _ = try b.store.unshare(notebook, from: c.id, now: 6)
    _ = try c.store.unshare(notebook, from: b.id, now: 6)
    for device in [b, c, x, d] { try syncDevices(device, with: s) }
    for device in [b, c, x, d] { try syncDevices(device, with: s) }
    let state = try XCTUnwrap(try s.store.membershipState(notebook))
    XCTAssertNil(state.members[b.id])
    XCTAssertNil(state.members[c.id])
    XCTAssertEqual(state.members[x.id], .member)
    XCTAssertEqual(state.members[d.id], .member)
    for device in [x, d] {
      XCTAssertEqual(try device.store.membershipState(notebook), state, "\(device.name) agrees")
    }
    // Each of the two knows it removed the other.
    XCTAssertNil(try members(b, notebook)[c.id])
    XCTAssertNil(try members(c, notebook)[b.id])
  }
}
