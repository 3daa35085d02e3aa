import MemoCore
import MemoCrypto
import XCTest

/// The derived ids of sync version 3 (docs/design/sync-v3.md, sections 2 and 4). The
/// expected values were computed independently with Python's hashlib, e.g.
/// `hashlib.sha256(b"memo-peer/3 replica\0" + bytes(range(32)) + bytes(range(0xa0, 0xb0))).hexdigest()[:32]`.
final class SyncDerivationsTests: XCTestCase {
  let device = DeviceID(bytes: Array(0..<32))!
  let nonce: [UInt8] = Array(0xA0..<0xB0)

  func testReplicaID() throws {
    let id = try SyncDerivations.replicaID(device: device, nonce: nonce)
    XCTAssertEqual(id.rawValue, "b9066dc9549bccce09ee5df808332dd1")
    XCTAssertEqual(ReplicaID(id.rawValue), id, "a valid replica id as the wire carries it")
  }

  func testReplicaIDOfARealDevice() throws {
    // The device of RFC 8032 TEST 1's key (SHA-256 of d75a9801…), with a zero nonce.
    let publicKey = try hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    let device = try XCTUnwrap(DeviceID(bytes: try SHA256.hash(publicKey)))
    XCTAssertEqual(Hex.encode(device.bytes), "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9")
    XCTAssertEqual(
      try SyncDerivations.replicaID(device: device, nonce: [UInt8](repeating: 0, count: 16)).rawValue,
      "ebf31bf9db819fc5b7f9b1e15a67ba81")
  }

  func testNotebookID() throws {
    let id = try SyncDerivations.notebookID(creator: device, nonce: nonce)
    XCTAssertEqual(id.rawValue, "717765f49345585825f0bff80e8d6df1")
    XCTAssertNotEqual(id.rawValue, try SyncDerivations.replicaID(device: device, nonce: nonce).rawValue)
  }

  func testKeyID() throws {
    let key = SecureBytes(copying: [UInt8](repeating: 0x42, count: 32))
    XCTAssertEqual(Hex.encode(try SyncDerivations.keyID(of: key)), "cb126b7f95a352b93200b012ea598de0")
  }

  func testEveryInputChangesTheID() throws {
    let base = try SyncDerivations.replicaID(device: device, nonce: nonce)
    var otherNonce = nonce
    otherNonce[15] ^= 1
    var otherDevice = device.bytes
    otherDevice[0] ^= 1
    XCTAssertNotEqual(try SyncDerivations.replicaID(device: device, nonce: otherNonce), base)
    XCTAssertNotEqual(try SyncDerivations.replicaID(device: DeviceID(bytes: otherDevice)!, nonce: nonce), base)
  }

  func testWrongSizesAreRefused() throws {
    for size in [0, 1, 15, 17, 32] {
      let nonce = [UInt8](repeating: 1, count: size)
      XCTAssertThrowsError(try SyncDerivations.replicaID(device: device, nonce: nonce)) {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
      XCTAssertThrowsError(try SyncDerivations.notebookID(creator: device, nonce: nonce)) {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
    for size in [0, 16, 31, 33] {
      XCTAssertThrowsError(try SyncDerivations.keyID(of: SecureBytes(copying: [UInt8](repeating: 1, count: size)))) {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
  }
}
