import Foundation
import MemoCrypto
import XCTest

final class AES256GCMTests: XCTestCase {
  struct Vector {
    var fields: [String: [UInt8]] = [:]
    var name = ""
    subscript(_ key: String) -> [UInt8] { fields[key] ?? [] }
  }

  /// Reads Vectors/aes-256-gcm.txt: blank-line separated `key = hex` blocks.
  func loadVectors() throws -> [Vector] {
    let url = try XCTUnwrap(
      Bundle.module.url(forResource: "aes-256-gcm", withExtension: "txt", subdirectory: "Vectors"))
    let text = try String(contentsOf: url, encoding: .utf8)
    var vectors: [Vector] = []
    var current: Vector?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("#") { continue }
      guard let equals = line.firstIndex(of: "=") else {
        if let vector = current { vectors.append(vector) }
        current = nil
        continue
      }
      let key = line[..<equals].trimmingCharacters(in: .whitespaces)
      let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
      if key == "name" {
        current = Vector(name: value)
      } else {
        current?.fields[key] = try hex(value)
      }
    }
    if let vector = current { vectors.append(vector) }
    return vectors
  }

  func testPublishedVectorsSealAndOpen() throws {
    let vectors = try loadVectors()
    XCTAssertEqual(vectors.count, 4)
    for vector in vectors {
      let key = try AES256GCMKey(SecureBytes(copying: vector["key"]))
      let sealed = try key.sealForTestVector(
        nonce: vector["iv"], plaintext: vector["plaintext"], associatedData: vector["aad"])
      XCTAssertEqual(sealed.ciphertext, vector["ciphertext"], vector.name)
      XCTAssertEqual(sealed.tag, vector["tag"], vector.name)
      let opened = try key.openForTestVector(
        nonce: vector["iv"], ciphertext: vector["ciphertext"], tag: vector["tag"], associatedData: vector["aad"])
      XCTAssertEqual(opened, vector["plaintext"], vector.name)
      var badTag = vector["tag"]
      badTag[0] ^= 1
      XCTAssertThrowsError(
        try key.openForTestVector(
          nonce: vector["iv"], ciphertext: vector["ciphertext"], tag: badTag, associatedData: vector["aad"]))
    }
  }

  func testSealOpenRoundTripWithFreshNonces() throws {
    let key = try AES256GCMKey(SecureBytes.random(count: 32))
    let plaintext = Array("a memo body".utf8)
    let first = try key.seal(plaintext, associatedData: [1, 2, 3])
    let second = try key.seal(plaintext, associatedData: [1, 2, 3])
    XCTAssertEqual(first.count, plaintext.count + AES256GCMKey.overhead)
    XCTAssertEqual(first[0], AES256GCMKey.formatVersion)
    XCTAssertNotEqual(Array(first[1..<13]), Array(second[1..<13]), "every seal draws a new nonce")
    XCTAssertEqual(try key.open(first, associatedData: [1, 2, 3]), plaintext)
    XCTAssertEqual(try key.open(key.seal([], associatedData: []), associatedData: []), [])
  }

  /// A duplicate (for another thread) opens what the original sealed and the other way
  /// round; each draws its own nonces; opening into a reused buffer gives the same bytes.
  func testDuplicateAndOpeningIntoABuffer() throws {
    let key = try AES256GCMKey(SecureBytes.random(count: 32))
    let copy = try key.duplicate()
    let long = Array(String(repeating: "a memo body ", count: 100).utf8)
    let sealed = try key.seal(long, associatedData: [1])
    XCTAssertEqual(try copy.open(sealed, associatedData: [1]), long)
    XCTAssertEqual(
      try key.open(copy.seal(Array("short".utf8), associatedData: []), associatedData: []), Array("short".utf8))
    XCTAssertNotEqual(
      Array(try copy.seal([], associatedData: [])[1..<13]), Array(try key.seal([], associatedData: [])[1..<13]))
    var buffer: [UInt8] = []
    for plaintext in [long, Array("short".utf8), [], long] {
      let sealed = try copy.seal(plaintext, associatedData: [2])
      try sealed.withUnsafeBytes { input in
        try [UInt8]([2]).withUnsafeBytes { try key.open(input, associatedData: $0, into: &buffer) }
      }
      XCTAssertEqual(buffer, plaintext)
    }
    var tampered = try key.seal(long, associatedData: [3])
    tampered[20] ^= 1
    XCTAssertThrowsError(
      try tampered.withUnsafeBytes { input in
        try [UInt8]([3]).withUnsafeBytes { try key.open(input, associatedData: $0, into: &buffer) }
      }
    ) { XCTAssertEqual($0 as? CryptoError, .authenticationFailed) }
    XCTAssertEqual(buffer, [], "a failed open leaves nothing behind")
  }

  func testEveryFlippedBitFailsToOpen() throws {
    let key = try AES256GCMKey(SecureBytes.random(count: 32))
    let sealed = try key.seal(Array("sixteen byte msg".utf8), associatedData: Array("ad".utf8))
    for index in sealed.indices {
      var tampered = sealed
      tampered[index] ^= 0x20
      XCTAssertThrowsError(try key.open(tampered, associatedData: Array("ad".utf8)), "byte \(index)")
    }
  }

  func testTruncatedWrongKeyAndWrongDataFail() throws {
    let key = try AES256GCMKey(SecureBytes.random(count: 32))
    let other = try AES256GCMKey(SecureBytes.random(count: 32))
    let sealed = try key.seal(Array("body".utf8), associatedData: [7])
    XCTAssertThrowsError(try key.open(Array(sealed.dropLast()), associatedData: [7])) {
      XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
    }
    XCTAssertThrowsError(try key.open(Array(sealed.prefix(10)), associatedData: [7])) {
      XCTAssertEqual($0 as? CryptoError, .malformed)
    }
    XCTAssertThrowsError(try key.open(sealed, associatedData: [8])) {
      XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
    }
    XCTAssertThrowsError(try other.open(sealed, associatedData: [7])) {
      XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
    }
  }

  func testRejectsShortKeys() {
    XCTAssertThrowsError(try AES256GCMKey(SecureBytes(copying: [UInt8](repeating: 1, count: 16))))
  }
}

final class PassphraseKDFTests: XCTestCase {
  /// RFC 7914, section 12: scrypt("password", "NaCl", N=1024, r=8, p=16); the first 32 bytes
  /// of the 64-byte output (PBKDF2 blocks are independent of the requested length).
  func testRFC7914Vector() throws {
    let key = try PassphraseKDF.deriveKey(
      passphrase: SecureBytes(copying: Array("password".utf8)), salt: Array("NaCl".utf8),
      parameters: ScryptParameters(n: 1024, r: 8, p: 16))
    let expected = try hex("fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162")
    XCTAssertTrue(key.constantTimeEquals(SecureBytes(copying: expected)))
  }

  func testRefusesHostileParameters() {
    XCTAssertThrowsError(
      try PassphraseKDF.deriveKey(
        passphrase: SecureBytes(copying: [1]), salt: [1], parameters: ScryptParameters(n: 1 << 30, r: 8, p: 1)))
    XCTAssertThrowsError(
      try PassphraseKDF.deriveKey(
        passphrase: SecureBytes(copying: [1]), salt: [1], parameters: ScryptParameters(n: 1000, r: 8, p: 1)))
  }
}

struct HexError: Error {}

func hex(_ text: String) throws -> [UInt8] {
  let digits = Array(text.utf8)
  guard digits.count % 2 == 0 else { throw HexError() }
  return try stride(from: 0, to: digits.count, by: 2).map { index in
    guard let byte = UInt8(String(decoding: digits[index..<(index + 2)], as: UTF8.self), radix: 16) else {
      throw HexError()
    }
    return byte
  }
}
