import Foundation
import MemoCore
import MemoCrypto
import XCTest

@testable import MemoProtocol

/// A revocation's one encoding, every way bytes can fail to be one, the hello's limits, and
/// the rule deciding who may revoke whom.
final class RevocationCodingTests: XCTestCase {
  let replicaA = ReplicaID(String(repeating: "a", count: 32))!
  let replicaB = ReplicaID(String(repeating: "b", count: 32))!

  func device(_ byte: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: byte, count: 32))! }

  func signed(cut: [ReplicaID: UInt64]) throws -> (Revocation, Ed25519.SigningKey) {
    let key = try Ed25519.SigningKey.random()
    var revocation = Revocation(
      revokerKey: key.publicKey, revoked: device(7), made: 1_800_000_000_000, cut: cut, signature: [])
    revocation.signature = try key.signature(for: revocation.signedMessage)
    return (revocation, key)
  }

  func testARevocationRoundTripsAndItsSignatureCoversEveryField() throws {
    let (revocation, key) = try signed(cut: [replicaB: 9, replicaA: 3])
    let decoded = try Revocation.decode(revocation.encoded)
    XCTAssertEqual(decoded, revocation)
    XCTAssertEqual(decoded.encoded, revocation.encoded)
    XCTAssertTrue(Ed25519.verify(decoded.signature, message: decoded.signedMessage, publicKey: key.publicKey))
    var changed = decoded
    changed.cut[replicaA] = 4
    XCTAssertFalse(Ed25519.verify(changed.signature, message: changed.signedMessage, publicKey: key.publicKey))
    XCTAssertTrue(revocation.signedMessage.starts(with: Array("memo-peer/3 revocation\u{0}".utf8)))
  }

  func testBytesThatAreNotARevocationAreRefusedNamingWhatIsWrong() throws {
    let (revocation, _) = try signed(cut: [replicaA: 3, replicaB: 9])
    let bytes = revocation.encoded
    func refusal(_ bytes: [UInt8]) -> Revocation.FormatError? {
      do {
        _ = try Revocation.decode(bytes)
        return nil
      } catch { return error }
    }
    XCTAssertEqual(refusal(Array(bytes.dropLast())), .truncated)
    XCTAssertEqual(refusal(bytes + [0]), .trailingBytes)
    XCTAssertEqual(refusal([2] + bytes.dropFirst()), .version(2))
    XCTAssertEqual(refusal([UInt8](repeating: 0, count: Revocation.maximumSize + 1)), .tooLarge)
    // The count of cut entries sits after version, two keys and the time.
    var many = bytes
    many.replaceSubrange(73..<77, with: [0, 0, 0, 65])
    XCTAssertEqual(refusal(many), .tooManyReplicas)
    // Swap the two replica ids: unsorted.
    let a = Array(replicaA.rawValue.utf8)
    let b = Array(replicaB.rawValue.utf8)
    var swapped = bytes
    swapped.replaceSubrange(81..<113, with: b)
    swapped.replaceSubrange(125..<157, with: a)
    XCTAssertEqual(refusal(swapped), .unsorted)
    var upper = bytes
    upper.replaceSubrange(81..<113, with: Array(replicaA.rawValue.uppercased().utf8))
    XCTAssertEqual(refusal(upper), .invalidReplica)
    var huge = bytes
    huge.replaceSubrange(113..<121, with: [0xFF, 0, 0, 0, 0, 0, 0, 0])
    XCTAssertEqual(refusal(huge), .outOfRange)
  }

  func testAHelloCarriesAtMost256RevocationsEachOfItsForm() throws {
    let (revocation, _) = try signed(cut: [:])
    let text = Data(revocation.encoded).base64EncodedString()
    XCTAssertEqual(try SyncRules.checkedRevocations([text]), [revocation])
    XCTAssertThrowsError(try SyncRules.checkedRevocations(Array(repeating: text, count: 257))) {
      XCTAssertEqual(($0 as? SyncViolation)?.reason, .malformed)
    }
    XCTAssertThrowsError(try SyncRules.checkedRevocations(["not base64!"])) {
      XCTAssertEqual(($0 as? SyncViolation)?.detail, "revocations that are not base64")
    }
    XCTAssertThrowsError(try SyncRules.checkedRevocations([Data([1, 2, 3]).base64EncodedString()])) {
      XCTAssertEqual(($0 as? SyncViolation)?.detail, "a truncated revocation")
    }
  }

  func testOnlyATrustedMemberRevokesAndTwoDevicesRevokingEachOtherBothCount() {
    let (me, b, x) = (device(1), device(2), device(3))
    let trusted = RevocationRules.Context(thisDevice: me, revokerIsTrustedMember: true)
    let stranger = RevocationRules.Context(thisDevice: me, revokerIsTrustedMember: false)
    XCTAssertEqual(RevocationRules.decide(revoker: b, revoked: x, trusted), .apply)
    XCTAssertEqual(RevocationRules.decide(revoker: b, revoked: me, trusted), .keepAgainstThisDevice)
    XCTAssertEqual(RevocationRules.decide(revoker: b, revoked: b, trusted), .ignore("a device cannot revoke itself"))
    XCTAssertEqual(
      RevocationRules.decide(revoker: b, revoked: x, stranger), .ignore("its maker is not a member trusted here"))
    // b was revoked here by x: b's revocation counts against x, and nobody else.
    let revokedByX = RevocationRules.Context(thisDevice: me, revokerIsTrustedMember: false, revokerRevokedBy: [x])
    XCTAssertEqual(RevocationRules.decide(revoker: b, revoked: x, revokedByX), .apply)
    XCTAssertEqual(
      RevocationRules.decide(revoker: b, revoked: device(4), revokedByX),
      .ignore("its maker is not a member trusted here"))
  }

  func testADeviceRevokedTwiceKeepsTheLowerCutAndNothingOfAReplicaOneCutLeftOut() {
    let lowered = RevocationRules.lowered([replicaA: 5, replicaB: 2], by: [replicaA: 3])
    XCTAssertEqual(lowered, [replicaA: 3])
  }
}
