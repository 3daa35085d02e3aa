import MemoCore
import MemoCrypto
import XCTest

@testable import MemoProtocol

/// The op codec on hostile input: every kind round-trips to the same bytes, and every way
/// of being wrong is refused with the field it concerns, never a trap.
final class NotebookOpCodingTests: XCTestCase {
  typealias F = MembershipFixtures
  let alice = F.Device("alice", seed: 1)
  let bob = F.Device("bob", seed: 2)

  func testEveryKindRoundTripsToTheSameBytes() throws {
    let ops = try F.opOfEveryKind(F.notebook(by: alice), by: alice, naming: bob)
    XCTAssertEqual(Set(ops.map(\.kind)), Set(NotebookOp.Kind.allCases))
    for op in ops {
      let bytes = op.encoded
      let decoded = try NotebookOp.decode(bytes)
      XCTAssertEqual(decoded, op, "\(op.kind)")
      XCTAssertEqual(decoded.encoded, bytes, "\(op.kind)")
    }
  }

  func testATruncationAtEveryByteIsRefusedAsTruncated() throws {
    for op in try F.opOfEveryKind(F.notebook(by: alice), by: alice, naming: bob) {
      let bytes = op.encoded
      for length in 0..<bytes.count {
        XCTAssertThrowsError(try NotebookOp.decode(Array(bytes.prefix(length))), "\(op.kind) at \(length)") {
          guard case .truncated = $0 as? NotebookOpError else { return XCTFail("\(op.kind) at \(length): \($0)") }
        }
      }
    }
  }

  /// Every byte of every kind flipped in turn: the decoder refuses it or decodes an op that
  /// encodes back to those bytes, and no log admits it (the signature covers every byte).
  func testAFlippedByteIsNeverAdmitted() throws {
    let log = F.notebook(by: alice)
    for op in try F.opOfEveryKind(log, by: alice, naming: bob) {
      let bytes = op.encoded
      for index in bytes.indices {
        var flipped = bytes
        flipped[index] ^= 0xA5
        if let decoded = try? NotebookOp.decode(flipped) {
          XCTAssertEqual(decoded.encoded, flipped, "\(op.kind) at \(index)")
        }
        var copy = log
        XCTAssertThrowsError(try copy.insert(bytes: flipped), "\(op.kind) at \(index)")
        XCTAssertEqual(copy.count, 1)
      }
    }
  }

  func testTrailingBytesAreRefused() throws {
    let op = F.notebook(by: alice).ops[0]
    XCTAssertThrowsError(try NotebookOp.decode(op.encoded + [0])) {
      XCTAssertEqual($0 as? NotebookOpError, .trailingBytes(count: 1))
    }
  }

  func testUnknownVersionAndKindAreRefused() throws {
    let log = F.notebook(by: alice)
    var bytes = try log.share(bob.id, as: .member, signer: alice.key).encoded
    bytes[0] = 2
    XCTAssertThrowsError(try NotebookOp.decode(bytes)) { XCTAssertEqual($0 as? NotebookOpError, .unknownVersion(2)) }
    bytes[0] = 1
    let kindOffset = 1 + 4 + 32
    XCTAssertEqual(bytes[kindOffset], NotebookOp.Kind.share.rawValue)
    for kind: UInt8 in [0, 8, 255] {
      bytes[kindOffset] = kind
      XCTAssertThrowsError(try NotebookOp.decode(bytes)) {
        XCTAssertEqual($0 as? NotebookOpError, .unknownKind(kind))
      }
    }
  }

  /// Builds unsigned bytes by hand, to say what no builder would.
  private func header(kind: UInt8, parents: UInt32, parentBytes: [[UInt8]]? = nil) -> ByteWriter {
    var writer = ByteWriter()
    writer.u8(1)
    writer.string(String(repeating: "a", count: 32))
    writer.u8(kind)
    writer.bytes += alice.key.publicKey
    writer.u32(parents)
    for parent in parentBytes ?? (0..<parents).map({ [UInt8](repeating: UInt8($0), count: 32) }) {
      writer.bytes += parent
    }
    return writer
  }

  private func refusal(_ writer: ByteWriter, signed: Bool = true) -> NotebookOpError? {
    let bytes = writer.bytes + (signed ? [UInt8](repeating: 0, count: 64) : [])
    do {
      _ = try NotebookOp.decode(bytes)
      return nil
    } catch { return error }
  }

  func testCountsAboveTheirLimitsAreRefusedBeforeAnythingIsRead() {
    // A count is checked against its limit before the bytes it announces are looked for.
    XCTAssertEqual(refusal(header(kind: 2, parents: 65, parentBytes: [])), .tooMany(.parents, count: 65))
    XCTAssertEqual(refusal(header(kind: 2, parents: .max, parentBytes: [])), .tooMany(.parents, count: .max))
    var unshare = header(kind: 3, parents: 1)
    unshare.bytes += bob.id.bytes
    unshare.u32(1025)
    XCTAssertEqual(refusal(unshare), .tooMany(.cut, count: 1025))
    var key = header(kind: 4, parents: 1)
    key.u64(1)
    key.bytes += F.keyID(1)
    key.u32(1025)
    XCTAssertEqual(refusal(key), .tooMany(.recipients, count: 1025))
    var grant = header(kind: 5, parents: 1)
    grant.bytes += bob.id.bytes
    grant.u32(1025)
    XCTAssertEqual(refusal(grant), .tooMany(.recipients, count: 1025))
    var rename = header(kind: 6, parents: 1)
    rename.bytes += F.keyID(1)
    rename.u32(UInt32(MembershipLimits.sealedNameBytes + 1))
    XCTAssertEqual(refusal(rename), .tooMany(.name, count: UInt32(MembershipLimits.sealedNameBytes + 1)))
    var create = header(kind: 1, parents: 0)
    create.u32(17)
    XCTAssertEqual(refusal(create), .tooMany(.nonce, count: 17))
  }

  func testAnOpLargerThan96KiBIsRefusedWhole() {
    let bytes = [UInt8](repeating: 1, count: MembershipLimits.opBytes + 1)
    XCTAssertThrowsError(try NotebookOp.decode(bytes)) {
      XCTAssertEqual($0 as? NotebookOpError, .tooLarge(bytes: MembershipLimits.opBytes + 1))
    }
  }

  /// The largest key op that fits 96 KiB: 1,024 recipients would not (112 bytes each).
  func testAKeyOpForAsManyRecipientsAsFitDecodes() throws {
    let fitting = (MembershipLimits.opBytes - 200) / (32 + MembershipLimits.sealedKeyBytes)
    var key = header(kind: 4, parents: 1)
    key.u64(1)
    key.bytes += F.keyID(1)
    key.u32(UInt32(fitting))
    for index in 0..<fitting {
      var device = [UInt8](repeating: 0, count: 32)
      device[0] = UInt8(index >> 8)
      device[1] = UInt8(index & 0xFF)
      key.bytes += device + F.box(1)
    }
    XCTAssertNil(refusal(key))
    XCTAssertLessThan(fitting, MembershipLimits.recipients)
  }

  func testNonCanonicalOrMalformedFieldsAreRefusedNamingTheField() {
    let one = [UInt8](repeating: 1, count: 32)
    let two = [UInt8](repeating: 2, count: 32)
    var unsorted = header(kind: 7, parents: 2, parentBytes: [two, one])
    unsorted.string(F.memo.rawValue)
    XCTAssertEqual(refusal(unsorted), .invalid(.parents))
    var duplicate = header(kind: 7, parents: 2, parentBytes: [one, one])
    duplicate.string(F.memo.rawValue)
    XCTAssertEqual(refusal(duplicate), .invalid(.parents))
    var orphan = header(kind: 7, parents: 0)
    orphan.string(F.memo.rawValue)
    XCTAssertEqual(refusal(orphan), .invalid(.parents), "only a genesis has no parents")
    var genesisWithParent = header(kind: 1, parents: 1)
    genesisWithParent.data(F.nonce)
    XCTAssertEqual(refusal(genesisWithParent), .invalid(.parents))
    var shortNonce = header(kind: 1, parents: 0)
    shortNonce.data([1, 2, 3])
    XCTAssertEqual(refusal(shortNonce), .invalid(.nonce))
    var badRole = header(kind: 2, parents: 1)
    badRole.bytes += bob.id.bytes
    badRole.u8(3)
    XCTAssertEqual(refusal(badRole), .invalid(.role))
    var badMemo = header(kind: 7, parents: 1)
    badMemo.string(F.memo.rawValue.uppercased())
    XCTAssertEqual(refusal(badMemo), .invalid(.memo))
    var badReplica = header(kind: 3, parents: 1)
    badReplica.bytes += bob.id.bytes
    badReplica.u32(1)
    badReplica.string("not a replica")
    XCTAssertEqual(refusal(badReplica), .invalid(.replica))
    var unsortedCut = header(kind: 3, parents: 1)
    unsortedCut.bytes += bob.id.bytes
    unsortedCut.u32(2)
    for replica in [F.otherReplica, F.replica] {
      unsortedCut.string(replica.rawValue)
      unsortedCut.u64(1)
    }
    XCTAssertEqual(refusal(unsortedCut), .invalid(.cut))
    var sameRecipientTwice = header(kind: 4, parents: 1)
    sameRecipientTwice.u64(1)
    sameRecipientTwice.bytes += F.keyID(1)
    sameRecipientTwice.u32(2)
    sameRecipientTwice.bytes += bob.id.bytes + F.box(1) + bob.id.bytes + F.box(1)
    XCTAssertEqual(refusal(sameRecipientTwice), .invalid(.recipients))
    var badNotebook = ByteWriter()
    badNotebook.u8(1)
    badNotebook.string(String(repeating: "A", count: 32))
    XCTAssertEqual(refusal(badNotebook), .invalid(.notebook))
    var invalidUTF8 = ByteWriter()
    invalidUTF8.u8(1)
    invalidUTF8.data([UInt8](repeating: 0xFF, count: 32))
    XCTAssertEqual(refusal(invalidUTF8), .invalid(.notebook))
  }
}
