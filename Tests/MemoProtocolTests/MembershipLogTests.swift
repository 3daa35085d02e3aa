import MemoCore
import MemoCrypto
import XCTest

@testable import MemoProtocol

/// What `MembershipLog.insert` admits and refuses.
final class MembershipLogTests: XCTestCase {
  typealias F = MembershipFixtures
  let alice = F.Device("alice", seed: 1)
  let bob = F.Device("bob", seed: 2)

  func testTheGenesisMakesItsAuthorTheCreatorAndOnlyMember() throws {
    let log = F.notebook(by: alice)
    XCTAssertEqual(log.notebook, try SyncDerivations.notebookID(creator: alice.id, nonce: F.nonce))
    let state = log.state
    XCTAssertEqual(state.members, [alice.id: .member])
    XCTAssertEqual(state.creators, [alice.id])
    XCTAssertEqual(state.heads, log.heads)
    XCTAssertEqual(state.heads.count, 1)
    XCTAssertTrue(state.void.isEmpty)
  }

  func testAReplayChangesNothing() throws {
    var log = F.notebook(by: alice)
    let share = try log.share(bob.id, as: .member, signer: alice.key)
    guard case .added(let id) = try log.insert(share) else { return XCTFail("not added") }
    let before = log.state
    XCTAssertEqual(try log.insert(share), .alreadyKnown(id))
    XCTAssertEqual(try log.insert(bytes: share.encoded), .alreadyKnown(id))
    XCTAssertEqual(try log.insert(log.ops[0]), .alreadyKnown(try XCTUnwrap(F.crypto.id(of: log.ops[0]))))
    XCTAssertEqual(log.count, 2)
    XCTAssertEqual(log.state, before)
  }

  func testABadSignatureIsRefused() throws {
    var log = F.notebook(by: alice)
    var share = try log.share(bob.id, as: .member, signer: alice.key)
    share.signature[0] ^= 1
    XCTAssertThrowsError(try log.insert(share)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .badSignature) }
    // Signed by another key than the author's.
    var forged = try log.share(bob.id, as: .member, signer: alice.key)
    forged.signature = try bob.key.signature(for: forged.signedMessage)
    XCTAssertThrowsError(try log.insert(forged)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .badSignature) }
    // A signature made for another label (a replica binding's) does not verify as an op's.
    var relabelled = try log.share(bob.id, as: .member, signer: alice.key)
    relabelled.signature = try alice.key.signature(for: Signing.message(.replica, relabelled.unsignedBytes))
    XCTAssertThrowsError(try log.insert(relabelled)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .badSignature) }
    XCTAssertEqual(log.count, 1)
  }

  /// Under the neutral point as a key, R = neutral and S = 0 verify for every message with
  /// RFC 8032's rules (OpenSSL's): `verify` refuses it (libsodium's), and the log refuses
  /// the key itself, whatever `verify` says.
  func testAnAuthorKeyOfSmallOrderIsRefusedThoughItsSignatureVerifies() throws {
    var log = F.notebook(by: alice)
    let neutral = [1] + [UInt8](repeating: 0, count: 31)
    var op = NotebookOp(
      notebook: log.notebook, author: neutral, parents: log.heads, body: .share(device: bob.id, role: .member))
    op.signature = neutral + [UInt8](repeating: 0, count: 32)
    XCTAssertFalse(Ed25519.verify(op.signature, message: op.signedMessage, publicKey: neutral), "the forgery")
    XCTAssertThrowsError(try log.insert(op)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .invalidAuthorKey) }
  }

  func testAnAuthorKeyThatIsNotACurvePointIsRefused() throws {
    var log = F.notebook(by: alice)
    let notAPoint = [UInt8](repeating: 0xFF, count: 32)
    let op = NotebookOp(
      notebook: log.notebook, author: notAPoint, parents: log.heads, body: .retiredPurge(memo: F.memo),
      signature: [UInt8](repeating: 1, count: 64))
    XCTAssertThrowsError(try log.insert(op)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .invalidAuthorKey) }
  }

  func testAMissingParentIsRefusedAndTheOpComesAgainAfterIt() throws {
    var log = F.notebook(by: alice)
    var copy = log
    let first = try log.share(bob.id, as: .member, signer: alice.key)
    try log.insert(first)
    let second = try log.retiredPurge(F.memo, signer: alice.key)
    let firstID = try XCTUnwrap(F.crypto.id(of: first))
    XCTAssertThrowsError(try copy.insert(second)) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .missingParents([firstID]))
    }
    XCTAssertEqual(copy.count, 1)
    try copy.insert(first)
    XCTAssertEqual(try copy.insert(second), .added(try XCTUnwrap(F.crypto.id(of: second))))
    try log.insert(second)
    XCTAssertEqual(copy.state, log.state)
  }

  func testAnOpOfAnotherNotebookIsRefused() throws {
    var log = F.notebook(by: alice)
    let other = F.notebook(by: alice, nonce: [UInt8](repeating: 8, count: 16))
    XCTAssertThrowsError(try log.insert(other.ops[0])) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .wrongNotebook(other.notebook))
    }
  }

  func testAGenesisMustDeriveTheNotebookID() throws {
    let log = F.notebook(by: alice)
    // Bob signs a genesis naming Alice's notebook with Alice's nonce: his derivation differs.
    let claim = NotebookOp(
      notebook: log.notebook, author: bob.key.publicKey, parents: [], body: .create(nonce: F.nonce))
    var signed = claim
    signed.signature = try bob.key.signature(for: claim.signedMessage)
    var copy = MembershipLog(notebook: log.notebook, verifier: F.crypto)
    XCTAssertThrowsError(try copy.insert(signed)) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .genesisNotDerived)
    }
  }

  func testALegacyGenesisIsAcceptedOnlyFromAVersion2Member() throws {
    let notebook = try XCTUnwrap(NotebookID(String(repeating: "e", count: 32)))
    let genesis = try MembershipLog.legacyGenesis(of: notebook, signer: bob.key)
    var strict = MembershipLog(notebook: notebook, verifier: F.crypto)
    XCTAssertThrowsError(try strict.insert(genesis)) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .legacyGenesisNotAllowed)
    }
    let bobID = bob.id
    var upgraded = MembershipLog(notebook: notebook, verifier: F.crypto, isLegacyMember: { $0 == bobID })
    try upgraded.insert(genesis)
    XCTAssertEqual(upgraded.state.members, [bob.id: .member])
    let aliceGenesis = try MembershipLog.legacyGenesis(of: notebook, signer: alice.key)
    XCTAssertThrowsError(try upgraded.insert(aliceGenesis)) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .legacyGenesisNotAllowed)
    }
  }

  func testBytesThatAreNotAnOpAreRefusedAsMalformed() {
    var log = F.notebook(by: alice)
    XCTAssertThrowsError(try log.insert(bytes: [1, 0, 0])) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .malformed(.truncated(.notebook)))
    }
    // A built op is held to the wire's rules too: unsorted parents never enter the log.
    let parents = [OpID(bytes: [UInt8](repeating: 2, count: 32))!, OpID(bytes: [UInt8](repeating: 1, count: 32))!]
    let op = NotebookOp(
      notebook: log.notebook, author: alice.key.publicKey, parents: parents, body: .retiredPurge(memo: F.memo))
    XCTAssertThrowsError(try log.insert(op)) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .malformed(.invalid(.parents)))
    }
  }

  /// The 4,097th op of a notebook is refused; a replay of one it holds is still a no-op.
  func testANotebookHoldsAtMost4096OpsAndOneAuthorAQuarterOfThem() throws {
    let signer = UnsignedSigner(publicKey: alice.key.publicKey)
    let genesis = try XCTUnwrap(MembershipLog.genesis(nonce: F.nonce, signer: signer, verifier: AcceptingVerifier()))
    var log = MembershipLog(notebook: genesis.notebook, verifier: AcceptingVerifier())
    try log.insert(genesis)
    // One author: at most 1,024 ops of its own (the genesis is one of them).
    var last = genesis
    while log.count < MembershipLimits.opsPerAuthor {
      last = try log.retiredPurge(F.memo, signer: signer)
      try log.insert(last)
    }
    XCTAssertThrowsError(try log.insert(try log.retiredPurge(F.memo, signer: signer))) {
      XCTAssertEqual($0 as? MembershipLog.Refusal, .authorFull)
    }
    // Others fill the rest, up to 4,096 in all.
    var author: UInt8 = 1
    while log.count < MembershipLimits.opsPerNotebook {
      let other = UnsignedSigner(publicKey: [UInt8](repeating: author, count: 32))
      if log.count(by: try XCTUnwrap(F.crypto.device(of: other.publicKey))) == MembershipLimits.opsPerAuthor {
        author += 1
        continue
      }
      last = try log.retiredPurge(F.memo, signer: other)
      try log.insert(last)
    }
    let overflow = try log.retiredPurge(F.memo, signer: UnsignedSigner(publicKey: [UInt8](repeating: 99, count: 32)))
    XCTAssertThrowsError(try log.insert(overflow)) { XCTAssertEqual($0 as? MembershipLog.Refusal, .full) }
    XCTAssertEqual(try log.insert(last), .alreadyKnown(try XCTUnwrap(F.crypto.id(of: last))))
    XCTAssertEqual(log.count, MembershipLimits.opsPerNotebook)
  }

  func testWhatAPeerLacksComesInCausalOrderWithinTheBounds() throws {
    var log = F.notebook(by: alice)
    let genesisHead = log.heads
    for role in [NotebookOp.Role.member, .relay, .member] {
      try log.insert(log.share(bob.id, as: role, signer: alice.key))
    }
    XCTAssertEqual(log.missing(peerHeads: log.heads).ops, [])
    XCTAssertTrue(log.missing(peerHeads: log.heads).complete)
    let all = log.missing(peerHeads: [])
    XCTAssertEqual(all.ops, log.ops)
    XCTAssertTrue(all.complete)
    // A head this log does not know says nothing of what the peer lacks.
    let unknown = OpID(bytes: [UInt8](repeating: 9, count: 32))!
    XCTAssertEqual(log.missing(peerHeads: genesisHead + [unknown]).ops, Array(log.ops.dropFirst()))
    // Cut by count, then by bytes: each answer is a causal prefix the peer can admit.
    var peer = MembershipLog(notebook: log.notebook, verifier: F.crypto)
    var rounds = 0
    while peer.count < log.count {
      let answer = log.missing(peerHeads: peer.heads, maximumOps: 2, maximumBytes: 2 * (log.ops[1].encoded.count + 4))
      XCTAssertFalse(answer.ops.isEmpty)
      XCTAssertLessThanOrEqual(answer.ops.count, 2)
      XCTAssertEqual(answer.complete, peer.count + answer.ops.count == log.count)
      for op in answer.ops { try peer.insert(op) }
      rounds += 1
    }
    XCTAssertEqual(rounds, 2)
    XCTAssertEqual(peer.state, log.state)
    let tight = log.missing(peerHeads: [], maximumOps: 10, maximumBytes: log.ops[0].encoded.count + 3)
    XCTAssertEqual(tight.ops, [])
    XCTAssertFalse(tight.complete)
  }

  /// One answer's default bound is what one `sync-ops` frame carries (960 KiB of ops), as
  /// PROTOCOL.md says in both places: a log of more than that answers a prefix that encodes
  /// into a frame a peer decodes.
  func testADefaultAnswerFitsOneSyncOpsFrame() throws {
    let signer = UnsignedSigner(publicKey: alice.key.publicKey)
    let genesis = try XCTUnwrap(MembershipLog.genesis(nonce: F.nonce, signer: signer, verifier: AcceptingVerifier()))
    var log = MembershipLog(notebook: genesis.notebook, verifier: AcceptingVerifier())
    try log.insert(genesis)
    // Key ops of 800 recipients (about 88 KiB each): 12 are more than a frame holds.
    let recipients = (0..<800).map { index in
      (F.crypto.device(of: [UInt8](repeating: UInt8(index % 251), count: 31) + [UInt8(index / 251)])!, F.box(1))
    }
    for generation in 1...12 {
      try log.insert(
        log.rotateKey(
          keyID: F.keyID(UInt8(generation)), sealed: Dictionary(recipients, uniquingKeysWith: { first, _ in first }),
          signer: signer))
    }
    let answer = log.missing(peerHeads: [])
    XCTAssertFalse(answer.complete)
    let bytes = answer.ops.reduce(0) { $0 + $1.encoded.count + 4 }
    XCTAssertLessThanOrEqual(bytes, SyncOps.maximumBytes)
    XCTAssertEqual(SyncOps.maximumBytes, 960 * 1024)
    let frame = SyncOps.encode([SyncOps.Notebook(id: log.notebook, ops: answer.ops.map(\.encoded))])
    XCTAssertNoThrow(try SyncOps.decode(frame))
  }
}
