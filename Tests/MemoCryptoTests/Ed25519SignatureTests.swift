import Dispatch
import Foundation
import MemoCrypto
import XCTest

final class Ed25519SignatureTests: XCTestCase {
  /// RFC 8032 §7.1 (Vectors/ed25519-rfc8032.txt): the public key from the seed, the exact
  /// signature (Ed25519 is deterministic), and verification.
  func testRFC8032VectorsSignAndVerify() throws {
    let vectors = try loadVectorBlocks("ed25519-rfc8032")
    XCTAssertEqual(vectors.map(\.name), ["TEST 1", "TEST 2", "TEST 3", "TEST 1024", "TEST SHA(abc)"])
    XCTAssertEqual(vectors.map { $0["message"].count }, [0, 1, 2, 1023, 64])
    for vector in vectors {
      let key = try Ed25519.SigningKey(seed: SecureBytes(copying: vector["secret"]))
      XCTAssertEqual(key.publicKey, vector["public"], vector.name)
      XCTAssertEqual(try key.signature(for: vector["message"]), vector["signature"], vector.name)
      XCTAssertTrue(
        Ed25519.verify(vector["signature"], message: vector["message"], publicKey: vector["public"]), vector.name)
    }
  }

  /// Any change to the signature, the message or the key makes a vector's signature fail.
  func testTamperedSignatureMessageOrKeyIsRefused() throws {
    let vectors = try loadVectorBlocks("ed25519-rfc8032")
    for (index, vector) in vectors.enumerated() {
      let signature = vector["signature"]
      let message = vector["message"]
      let publicKey = vector["public"]
      for position in [0, 31, 32, 63] {
        var tampered = signature
        tampered[position] ^= 0x01
        XCTAssertFalse(
          Ed25519.verify(tampered, message: message, publicKey: publicKey), "\(vector.name) sig[\(position)]")
      }
      if !message.isEmpty {
        for position in Set([0, message.count / 2, message.count - 1]) {
          var tampered = message
          tampered[position] ^= 0x80
          XCTAssertFalse(Ed25519.verify(signature, message: tampered, publicKey: publicKey), "\(vector.name) msg")
        }
        XCTAssertFalse(Ed25519.verify(signature, message: Array(message.dropLast()), publicKey: publicKey))
      }
      XCTAssertFalse(Ed25519.verify(signature, message: message + [0], publicKey: publicKey), vector.name)
      var otherKey = publicKey
      otherKey[5] ^= 0x04
      XCTAssertFalse(Ed25519.verify(signature, message: message, publicKey: otherKey), "\(vector.name) key bit")
      let nextKey = vectors[(index + 1) % vectors.count]["public"]
      XCTAssertFalse(Ed25519.verify(signature, message: message, publicKey: nextKey), "\(vector.name) other key")
    }
  }

  /// RFC 8032 §5.1.7 requires S < L: the same signature with S + L (which the group
  /// arithmetic alone would accept) is refused, so signatures are not malleable.
  func testNonCanonicalSignatureIsRefused() throws {
    let vector = try XCTUnwrap(try loadVectorBlocks("ed25519-rfc8032").first { $0.name == "TEST 2" })
    // L = 2^252 + 27742317777372353535851937790883648493, little-endian.
    let order = try hex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
    var malleated = vector["signature"]
    var carry = 0
    for index in 0..<32 {
      let sum = Int(malleated[32 + index]) + Int(order[index]) + carry
      malleated[32 + index] = UInt8(sum & 0xFF)
      carry = sum >> 8
    }
    XCTAssertEqual(carry, 0)
    XCTAssertNotEqual(malleated, vector["signature"])
    XCTAssertFalse(Ed25519.verify(malleated, message: vector["message"], publicKey: vector["public"]))
  }

  /// Wrong sizes are false (verify) or `.malformed` (a seed), never a trap.
  func testWrongSizesAreRefusedWithoutTrapping() throws {
    let key = try Ed25519.SigningKey.random()
    let message = Array("memo-peer/3 revision\0body".utf8)
    let signature = try key.signature(for: message)
    XCTAssertEqual(signature.count, 64)
    XCTAssertTrue(Ed25519.verify(signature, message: message, publicKey: key.publicKey))
    for size in [0, 1, 63, 65, 128] {
      let wrong = Array((signature + signature + [0]).prefix(size))
      XCTAssertFalse(Ed25519.verify(wrong, message: message, publicKey: key.publicKey), "signature of \(size)")
    }
    for size in [0, 1, 31, 33, 64] {
      let wrong = Array((key.publicKey + key.publicKey + [0]).prefix(size))
      XCTAssertFalse(Ed25519.verify(signature, message: message, publicKey: wrong), "key of \(size)")
    }
    for size in [0, 16, 31, 33, 64] {
      XCTAssertThrowsError(try Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 7, count: size)))) {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
    // 32 bytes that are no curve point (y = 2, whose x² is not a square): false, not a trap.
    let notAPoint = [2] + [UInt8](repeating: 0, count: 31)
    XCTAssertFalse(Ed25519.verify(signature, message: message, publicKey: notAPoint))
    XCTAssertFalse(Ed25519.verify([UInt8](repeating: 0xFF, count: 64), message: message, publicKey: key.publicKey))
  }

  /// Under RFC 8032's rules (OpenSSL's) the neutral point as a key verifies a trivial
  /// signature of anything; `verify` (libsodium's) refuses it, and such keys are refused
  /// besides where a key is accepted: `isValidPublicKey`.
  func testSmallOrderKeysAreNotValidPublicKeys() throws {
    let neutral = [1] + [UInt8](repeating: 0, count: 31)
    let trivial = neutral + [UInt8](repeating: 0, count: 32)
    XCTAssertFalse(Ed25519.verify(trivial, message: Array("anything".utf8), publicKey: neutral))
    XCTAssertFalse(Ed25519.isValidPublicKey(neutral))
    // The point of order 2 (y = -1), and the all-zero encoding (y = 0: order 4).
    let minusOne = [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
    XCTAssertFalse(Ed25519.isValidPublicKey(minusOne))
    XCTAssertFalse(Ed25519.isValidPublicKey([UInt8](repeating: 0, count: 32)))
    XCTAssertFalse(Ed25519.isValidPublicKey([2] + [UInt8](repeating: 0, count: 31)), "not a point")
    XCTAssertFalse(Ed25519.isValidPublicKey([UInt8](repeating: 0xFF, count: 32)), "not canonical")
    XCTAssertFalse(Ed25519.isValidPublicKey(Array(neutral.prefix(31))))
    for vector in try loadVectorBlocks("ed25519-rfc8032") {
      XCTAssertTrue(Ed25519.isValidPublicKey(vector["public"]), vector.name)
    }
    for _ in 0..<16 { XCTAssertTrue(Ed25519.isValidPublicKey(try Ed25519.SigningKey.random().publicKey)) }
  }

  /// Signing is deterministic, and one key signs from many threads at once (the key is
  /// shared by the daemon's sessions).
  func testOneKeySignsFromManyThreads() throws {
    let key = try Ed25519.SigningKey.random()
    let messages = (0..<64).map { Array("message \($0)".utf8) }
    let expected = try messages.map { try key.signature(for: $0) }
    let results = Results(count: messages.count)
    DispatchQueue.concurrentPerform(iterations: messages.count) { index in
      results.set(index, try? key.signature(for: messages[index]))
    }
    XCTAssertEqual(results.values, expected)
    XCTAssertTrue(zip(messages, expected).allSatisfy { Ed25519.verify($1, message: $0, publicKey: key.publicKey) })
  }

  /// The public key of a signing key is the one `Ed25519.publicKey(seed:)` gives (what the
  /// store keeps next to a sealed identity).
  func testSigningKeyPublicKeyIsTheStoredPublicPart() throws {
    let seed = try SecureBytes.random(count: 32)
    XCTAssertEqual(try Ed25519.SigningKey(seed: seed).publicKey, try Ed25519.publicKey(seed: seed))
  }
}

/// Per-index results written from concurrent threads. `@unchecked Sendable`: every access
/// to `storage` holds `lock`.
private final class Results: @unchecked Sendable {
  private let lock = NSLock()
  private var storage: [[UInt8]?]
  init(count: Int) { storage = Array(repeating: nil, count: count) }
  func set(_ index: Int, _ value: [UInt8]?) { lock.withLock { storage[index] = value } }
  var values: [[UInt8]] { lock.withLock { storage.compactMap { $0 } } }
}
