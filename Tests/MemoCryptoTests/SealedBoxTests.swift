import XCTest

@testable import MemoCrypto

final class SealedBoxTests: XCTestCase {
  private func bytes(_ secret: SecureBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

  /// A 32-byte notebook key sealed to a device's public key opens with that device's
  /// signing key; the box is 80 bytes, and every box of the same key is new.
  func testRoundTrip() throws {
    let device = try Ed25519.SigningKey.random()
    let notebookKey = try SecureBytes.random(count: 32)
    let box = try SealedBox.seal(notebookKey, to: device.publicKey)
    XCTAssertEqual(box.count, 80)
    XCTAssertEqual(bytes(try SealedBox.open(box, with: device)), bytes(notebookKey))

    let plain = Array("a key, or any short secret".utf8)
    let other = try SealedBox.seal(plain, to: device.publicKey)
    XCTAssertEqual(other.count, plain.count + SealedBox.overhead)
    XCTAssertEqual(bytes(try SealedBox.open(other, with: device)), plain)

    let again = try SealedBox.seal(notebookKey, to: device.publicKey)
    XCTAssertNotEqual(again, box, "a fresh ephemeral key each time")
    XCTAssertNotEqual(Array(again.prefix(32)), Array(box.prefix(32)))
    XCTAssertEqual(bytes(try SealedBox.open(again, with: device)), bytes(notebookKey))

    let largest = [UInt8](repeating: 0x5A, count: SealedBox.maximumPlaintextSize)
    XCTAssertEqual(bytes(try SealedBox.open(try SealedBox.seal(largest, to: device.publicKey), with: device)), largest)
  }

  func testWrongRecipientFails() throws {
    let member = try Ed25519.SigningKey.random()
    let relay = try Ed25519.SigningKey.random()
    let box = try SealedBox.seal(try SecureBytes.random(count: 32), to: member.publicKey)
    XCTAssertThrowsError(try SealedBox.open(box, with: relay)) {
      XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
    }
  }

  /// A change to any byte (the ephemeral key, the tag, the ciphertext) or a cut is refused.
  func testTamperedBoxFails() throws {
    let device = try Ed25519.SigningKey.random()
    let box = try SealedBox.seal(try SecureBytes.random(count: 32), to: device.publicKey)
    for position in box.indices {
      var tampered = box
      tampered[position] ^= 0x20
      XCTAssertThrowsError(try SealedBox.open(tampered, with: device), "byte \(position)") {
        XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
      }
    }
    for cut in [Array(box.dropLast()), Array(box.dropFirst()), box + [0]] {
      XCTAssertThrowsError(try SealedBox.open(cut, with: device)) {
        XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
      }
    }
  }

  func testSizesAreRefused() throws {
    let device = try Ed25519.SigningKey.random()
    for size in [0, 16, 31, 33, 64] {
      let key = Array((device.publicKey + device.publicKey + [1]).prefix(size))
      XCTAssertThrowsError(try SealedBox.seal([1, 2, 3], to: key), "key of \(size)") {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
    for size in [0, SealedBox.maximumPlaintextSize + 1] {
      XCTAssertThrowsError(try SealedBox.seal([UInt8](repeating: 1, count: size), to: device.publicKey)) {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
    for size in [0, 1, 47, 48, SealedBox.overhead + SealedBox.maximumPlaintextSize + 1] {
      XCTAssertThrowsError(try SealedBox.open([UInt8](repeating: 9, count: size), with: device), "box of \(size)") {
        XCTAssertEqual($0 as? CryptoError, .malformed)
      }
    }
  }

  /// libsodium refuses keys of small order (and non-points): nothing is sealed to them.
  func testUnusableRecipientKeysAreRefused() throws {
    let identity = [1] + [UInt8](repeating: 0, count: 31)  // the neutral point
    let notAPoint = [2] + [UInt8](repeating: 0, count: 31)
    for key in [identity, [UInt8](repeating: 0, count: 32), notAPoint] {
      XCTAssertThrowsError(try SealedBox.seal([1], to: key)) { XCTAssertEqual($0 as? CryptoError, .malformed) }
    }
  }

  /// libsodium's known answer (test/default/ed25519_convert.c and .exp): the seed
  /// 421151a4… gives this X25519 public and secret key. OpenSSL's Ed25519 public key for
  /// the seed is libsodium's, so a box sealed to the key OpenSSL reports is one libsodium
  /// opens with the key it makes from the same seed.
  func testLibsodiumConversionVector() throws {
    let seed = SecureBytes(copying: try hex("421151a459faeade3d247115f94aedae42318124095afabe4d1451a559faedee"))
    let key = try Ed25519.SigningKey(seed: seed)
    let sodium = try SealedBox.sodiumKeyPair(seed: seed)
    XCTAssertEqual(sodium.publicKey, key.publicKey)
    XCTAssertEqual(bytes(sodium.secretKey), bytes(seed) + key.publicKey)
    XCTAssertEqual(
      try SealedBox.x25519PublicKey(ed25519: key.publicKey),
      try hex("f1814f0e8ff1043d8a44d25babff3cedcae6c22c3edaa48f857ae70de2baae50"))
    XCTAssertEqual(
      bytes(try SealedBox.x25519SecretKey(of: key)),
      try hex("8052030376d47112be7f73ed7a019293dd12ad910b654455798b4667d73de166"))
  }

  /// OpenSSL and libsodium make the same public key from the same seed: the RFC 8032
  /// seeds and random ones.
  func testLibsodiumAndOpenSSLAgreeOnPublicKeys() throws {
    var seeds = try loadVectorBlocks("ed25519-rfc8032").map { SecureBytes(copying: $0["secret"]) }
    for _ in 0..<32 { seeds.append(try SecureBytes.random(count: 32)) }
    for seed in seeds {
      XCTAssertEqual(try SealedBox.sodiumKeyPair(seed: seed).publicKey, try Ed25519.publicKey(seed: seed))
    }
  }
}
