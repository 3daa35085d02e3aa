import MemoCore
import MemoCrypto
import XCTest

@testable import MemoProtocol

/// The merge rule on small histories written by hand: who may do what, removal wins,
/// re-admission, key generations. Concurrency is made the way devices make it: each device
/// builds on its own copy of the log, and copies meet (`merge`) when they sync.
final class MembershipRulesTests: XCTestCase {
  typealias F = MembershipFixtures
  let alice = F.Device("alice", seed: 1)
  let bob = F.Device("bob", seed: 2)
  let carol = F.Device("carol", seed: 3)
  let relay = F.Device("relay", seed: 4)
  let mallory = F.Device("mallory", seed: 5)

  /// Every op of `source` into `target`, parents first.
  func merge(_ source: MembershipLog, into target: inout MembershipLog) throws {
    for op in source.ops { try target.insert(op) }
  }

  /// `op` made on `log`, inserted there; returns its id.
  @discardableResult
  func add(_ log: inout MembershipLog, _ make: (MembershipLog) throws -> NotebookOp) throws -> OpID {
    let op = try make(log)
    try log.insert(op)
    return try XCTUnwrap(F.crypto.id(of: op))
  }

  /// A notebook Alice shares with Bob and Carol as members and with the relay as relay.
  func household() throws -> MembershipLog {
    var log = F.notebook(by: alice)
    try add(&log) { try $0.share(self.bob.id, as: .member, signer: self.alice.key) }
    try add(&log) { try $0.share(self.carol.id, as: .member, signer: self.alice.key) }
    try add(&log) { try $0.share(self.relay.id, as: .relay, signer: self.alice.key) }
    return log
  }

  func testAMemberSharesAndTheCreatorIsAMember() throws {
    let log = try household()
    XCTAssertEqual(
      log.state.members, [alice.id: .member, bob.id: .member, carol.id: .member, relay.id: .relay])
    XCTAssertTrue(log.state.void.isEmpty)
  }

  func testANonMembersOpsAreVoidAndGiveItNothing() throws {
    var log = try household()
    let selfShare = try add(&log) { try $0.share(self.mallory.id, as: .member, signer: self.mallory.key) }
    let removal = try add(&log) { try $0.unshare(self.bob.id, cut: [], signer: self.mallory.key) }
    let key = try add(&log) {
      try $0.rotateKey(keyID: F.keyID(1), sealed: [self.mallory.id: F.box(1)], signer: self.mallory.key)
    }
    let state = log.state
    XCTAssertEqual(state.void, [selfShare, removal, key])
    XCTAssertNil(state.role(of: mallory.id))
    XCTAssertEqual(state.role(of: bob.id), .member)
    XCTAssertTrue(state.keys.isEmpty)
  }

  func testARelayOnlyCarries() throws {
    var log = try household()
    let share = try add(&log) { try $0.share(self.mallory.id, as: .member, signer: self.relay.key) }
    let unshare = try add(&log) { try $0.unshare(self.alice.id, cut: [], signer: self.relay.key) }
    let key = try add(&log) { try $0.rotateKey(keyID: F.keyID(1), sealed: [:], signer: self.relay.key) }
    let purge = try add(&log) { try $0.retiredPurge(F.memo, signer: self.relay.key) }
    let state = log.state
    XCTAssertEqual(state.void, [share, unshare, key, purge])
    XCTAssertNil(state.role(of: mallory.id))
    XCTAssertEqual(state.role(of: alice.id), .member)
    XCTAssertTrue(state.may(relay.id, .carry))
    for action in MembershipState.Action.allCases where action != .carry {
      XCTAssertFalse(state.may(relay.id, action), "\(action)")
      XCTAssertTrue(state.may(bob.id, action), "\(action)")
      XCTAssertTrue(state.may(alice.id, action), "\(action)")
    }
    for action in MembershipState.Action.allCases { XCTAssertFalse(state.may(mallory.id, action), "\(action)") }
  }

  func testARemovedMembersLaterOpsAreVoid() throws {
    var log = try household()
    try add(&log) {
      try $0.unshare(self.bob.id, cut: [NotebookOp.CutEntry(replica: F.replica, sequence: 4)], signer: self.alice.key)
    }
    let later = try add(&log) { try $0.share(self.mallory.id, as: .member, signer: self.bob.key) }
    let state = log.state
    XCTAssertEqual(state.void, [later])
    XCTAssertNil(state.role(of: bob.id))
    XCTAssertNil(state.role(of: mallory.id))
    XCTAssertEqual(state.cuts[bob.id], [F.replica: 4])
    XCTAssertFalse(state.may(bob.id, .carry))
  }

  /// Bob shares Mallory without having seen his removal: removal wins.
  func testAnOpConcurrentWithItsAuthorsRemovalIsVoid() throws {
    var aliceLog = try household()
    var bobLog = aliceLog
    try add(&aliceLog) { try $0.unshare(self.bob.id, cut: [], signer: self.alice.key) }
    let concurrent = try add(&bobLog) { try $0.share(self.mallory.id, as: .member, signer: self.bob.key) }
    try merge(bobLog, into: &aliceLog)
    try merge(aliceLog, into: &bobLog)
    XCTAssertEqual(aliceLog.state, bobLog.state)
    XCTAssertEqual(aliceLog.state.void, [concurrent])
    XCTAssertNil(aliceLog.state.role(of: mallory.id))
    XCTAssertNil(aliceLog.state.role(of: bob.id))
    XCTAssertEqual(aliceLog.state.heads.count, 2)
  }

  func testTwoMembersThatRemoveEachOtherAtOnceAreBothRemoved() throws {
    var aliceLog = try household()
    var bobLog = aliceLog
    try add(&aliceLog) { try $0.unshare(self.bob.id, cut: [], signer: self.alice.key) }
    try add(&bobLog) { try $0.unshare(self.alice.id, cut: [], signer: self.bob.key) }
    try merge(bobLog, into: &aliceLog)
    let state = aliceLog.state
    XCTAssertTrue(state.void.isEmpty)
    XCTAssertNil(state.role(of: alice.id))
    XCTAssertNil(state.role(of: bob.id))
    XCTAssertEqual(state.role(of: carol.id), .member)
    // Carol, who saw both, re-adds the honest one.
    try add(&aliceLog) { try $0.share(self.alice.id, as: .member, signer: self.carol.key) }
    XCTAssertEqual(aliceLog.state.role(of: alice.id), .member)
    XCTAssertNil(aliceLog.state.role(of: bob.id))
  }

  /// Carol removes Bob while Bob removes Alice: Bob's unshare is concurrent with his own
  /// removal (and not of its author), so it is void and Alice stays.
  func testAnUnshareByADeviceRemovedConcurrentlyIsVoid() throws {
    var carolLog = try household()
    var bobLog = carolLog
    try add(&carolLog) { try $0.unshare(self.bob.id, cut: [], signer: self.carol.key) }
    let bobsRemoval = try add(&bobLog) { try $0.unshare(self.alice.id, cut: [], signer: self.bob.key) }
    try merge(bobLog, into: &carolLog)
    let state = carolLog.state
    XCTAssertEqual(state.void, [bobsRemoval])
    XCTAssertEqual(state.role(of: alice.id), .member)
    XCTAssertNil(state.role(of: bob.id))
  }

  /// Three members removing each other in a ring, all at once, make the rounds cycle:
  /// removal wins, so all three are out, and the fourth member stays.
  func testARingOfConcurrentRemovalsRemovesEveryoneInIt() throws {
    var base = try household()
    try add(&base) { try $0.share(self.mallory.id, as: .member, signer: self.alice.key) }
    var logs = [base, base, base]
    let ring = [(alice, bob), (bob, carol), (carol, alice)]
    for (index, (remover, removed)) in ring.enumerated() {
      try add(&logs[index]) { try $0.unshare(removed.id, cut: [], signer: remover.key) }
    }
    var all = base
    for log in logs { try merge(log, into: &all) }
    let state = all.state
    XCTAssertNil(state.role(of: alice.id))
    XCTAssertNil(state.role(of: bob.id))
    XCTAssertNil(state.role(of: carol.id))
    XCTAssertEqual(state.role(of: mallory.id), .member)
    // The same from any order of arrival.
    var reversed = MembershipLog(notebook: base.notebook, verifier: F.crypto)
    try merge(base, into: &reversed)
    for log in logs.reversed() { try merge(log, into: &reversed) }
    XCTAssertEqual(reversed.state, state)
  }

  func testAShareThatHasSeenTheUnshareReadmits() throws {
    var log = try household()
    try add(&log) { try $0.unshare(self.bob.id, cut: [], signer: self.alice.key) }
    XCTAssertNil(log.state.role(of: bob.id))
    try add(&log) { try $0.share(self.bob.id, as: .member, signer: self.carol.key) }
    XCTAssertEqual(log.state.role(of: bob.id), .member)
    XCTAssertNil(log.state.cuts[bob.id])
    let after = try add(&log) { try $0.retiredPurge(F.memo, signer: self.bob.key) }
    XCTAssertFalse(log.state.void.contains(after), "bob acts again")
  }

  /// A re-share made without having seen the unshare does not undo it.
  func testAShareConcurrentWithAnUnshareDoesNotReadmit() throws {
    var aliceLog = try household()
    var carolLog = aliceLog
    try add(&aliceLog) { try $0.unshare(self.bob.id, cut: [], signer: self.alice.key) }
    try add(&carolLog) { try $0.share(self.bob.id, as: .member, signer: self.carol.key) }
    try merge(carolLog, into: &aliceLog)
    XCTAssertNil(aliceLog.state.role(of: bob.id))
  }

  func testTheLatestShareSetsTheRoleAndConcurrentOnesGiveTheLesser() throws {
    var log = try household()
    try add(&log) { try $0.share(self.bob.id, as: .relay, signer: self.alice.key) }
    XCTAssertEqual(log.state.role(of: bob.id), .relay)
    var other = log
    try add(&log) { try $0.share(self.relay.id, as: .member, signer: self.alice.key) }
    try add(&other) { try $0.share(self.relay.id, as: .relay, signer: self.carol.key) }
    try merge(other, into: &log)
    XCTAssertEqual(log.state.role(of: relay.id), .relay)
  }

  func testAKeyGenerationIsExactlyOneMoreAndSealedToMembersOnly() throws {
    var log = try household()
    let members = [alice.id: F.box(1), bob.id: F.box(2), carol.id: F.box(3)]
    let chosen = try add(&log) {
      var op = try $0.rotateKey(keyID: F.keyID(9), sealed: members, signer: self.alice.key)
      guard case .key(_, let keyID, let sealed) = op.body else { throw ModelFailure("not a key op") }
      op.body = .key(generation: 1 << 53, keyID: keyID, sealed: sealed)
      op.signature = try self.alice.key.signature(for: op.signedMessage)
      return op
    }
    let toTheRelay = try add(&log) {
      try $0.rotateKey(
        keyID: F.keyID(8), sealed: members.merging([self.relay.id: F.box(4)]) { a, _ in a },
        signer: self.alice.key)
    }
    XCTAssertEqual(log.state.void, [chosen, toTheRelay])
    XCTAssertEqual(log.state.generation, 0)
    let first = try add(&log) { try $0.rotateKey(keyID: F.keyID(1), sealed: members, signer: self.alice.key) }
    XCTAssertEqual(log.state.generation, 1)
    XCTAssertEqual(log.state.currentKey?.op, first)
    XCTAssertEqual(log.state.currentKey?.sealed, members)
    XCTAssertEqual(log.state.keyRecipients, [alice.id, bob.id, carol.id].sorted())
    // A second generation 1 after the first is void; two rotations at once are both real.
    let stale = try add(&log) {
      var op = try $0.rotateKey(keyID: F.keyID(2), sealed: members, signer: self.bob.key)
      guard case .key(_, let keyID, let sealed) = op.body else { throw ModelFailure("not a key op") }
      op.body = .key(generation: 1, keyID: keyID, sealed: sealed)
      op.signature = try self.bob.key.signature(for: op.signedMessage)
      return op
    }
    XCTAssertTrue(log.state.void.contains(stale))
    var bobLog = log
    let byAlice = try add(&log) { try $0.rotateKey(keyID: F.keyID(3), sealed: members, signer: self.alice.key) }
    let byBob = try add(&bobLog) { try $0.rotateKey(keyID: F.keyID(4), sealed: members, signer: self.bob.key) }
    try merge(bobLog, into: &log)
    let state = log.state
    XCTAssertEqual(state.generation, 2)
    XCTAssertEqual(state.keys.filter { $0.generation == 2 }.map(\.op), [byAlice, byBob].sorted())
    XCTAssertEqual(state.currentKey?.op, min(byAlice, byBob))
    // The next rotation, having seen both, is generation 3.
    try add(&log) { try $0.rotateKey(keyID: F.keyID(5), sealed: members, signer: self.carol.key) }
    XCTAssertEqual(log.state.generation, 3)
  }

  func testGrantsAndRenamesMustNameAKeyOfTheirPast() throws {
    var log = try household()
    let unknownKey = try add(&log) { try $0.rename(keyID: F.keyID(1), sealedName: [1], signer: self.alice.key) }
    try add(&log) {
      try $0.rotateKey(keyID: F.keyID(1), sealed: [self.alice.id: F.box(1)], signer: self.alice.key)
    }
    let rename = try add(&log) { try $0.rename(keyID: F.keyID(1), sealedName: [2], signer: self.bob.key) }
    let grant = try add(&log) { try $0.grant(self.carol.id, keys: [F.keyID(1): F.box(5)], signer: self.alice.key) }
    let toRelay = try add(&log) {
      try $0.grant(self.relay.id, keys: [F.keyID(1): F.box(5)], signer: self.alice.key)
    }
    let unknownGrant = try add(&log) {
      try $0.grant(self.bob.id, keys: [F.keyID(7): F.box(5)], signer: self.alice.key)
    }
    let state = log.state
    XCTAssertEqual(state.void, [unknownKey, toRelay, unknownGrant])
    XCTAssertEqual(state.name?.op, rename)
    XCTAssertEqual(state.name?.sealedName, [2])
    XCTAssertEqual(state.grants.map(\.op), [grant])
  }

  func testTheCutOfConcurrentRemovalsIsTheLowerPosition() throws {
    var aliceLog = try household()
    var carolLog = aliceLog
    try add(&aliceLog) {
      try $0.unshare(
        self.bob.id,
        cut: [.init(replica: F.replica, sequence: 10), .init(replica: F.otherReplica, sequence: 2)],
        signer: self.alice.key)
    }
    try add(&carolLog) {
      try $0.unshare(self.bob.id, cut: [.init(replica: F.replica, sequence: 7)], signer: self.carol.key)
    }
    try merge(carolLog, into: &aliceLog)
    XCTAssertEqual(aliceLog.state.cuts[bob.id], [F.replica: 7])
  }

  /// A real key generation end to end: sealed to each member's identity key through
  /// libsodium, opened by the member, checked against its key id.
  func testAMemberOpensItsCopyOfAKeyAndItsIDMatches() throws {
    var log = try household()
    let key = try SecureBytes.random(count: 32)
    let keyID = try SyncDerivations.keyID(of: key)
    var sealed: [DeviceID: [UInt8]] = [:]
    let keys = [alice.id: alice.key, bob.id: bob.key, carol.id: carol.key]
    for recipient in log.state.keyRecipients {
      sealed[recipient] = try SealedBox.seal(key, to: try XCTUnwrap(keys[recipient]).publicKey)
    }
    try add(&log) { try $0.rotateKey(keyID: keyID, sealed: sealed, signer: self.alice.key) }
    let current = try XCTUnwrap(log.state.currentKey)
    let opened = try SealedBox.open(try XCTUnwrap(current.sealed[bob.id]), with: bob.key)
    XCTAssertEqual(try SyncDerivations.keyID(of: opened), current.keyID)
    XCTAssertThrowsError(try SealedBox.open(try XCTUnwrap(current.sealed[bob.id]), with: carol.key))
    XCTAssertNil(current.sealed[relay.id])
  }
}

struct ModelFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
