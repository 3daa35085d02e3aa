import MemoCrypto
import XCTest

final class HKDFTests: XCTestCase {
  /// RFC 5869, appendix A, test cases 1–3 (SHA-256).
  func testRFC5869Vectors() throws {
    let cases: [(ikm: String, salt: String, info: String, length: Int, okm: String)] = [
      (
        "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9", 42,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
      ),
      (
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
          + "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
          + "404142434445464748494a4b4c4d4e4f",
        "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
          + "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
          + "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
        "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
          + "d0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
          + "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
        82,
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
          + "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
          + "cc30c58179ec3e87c14c01d5c1f3434f1d87"
      ),
      (
        "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "", 42,
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
      ),
    ]
    for (index, vector) in cases.enumerated() {
      let okm = try HKDFSHA256.derive(
        key: try hex(vector.ikm), salt: try hex(vector.salt), info: try hex(vector.info), length: vector.length)
      XCTAssertEqual(okm, try hex(vector.okm), "RFC 5869 test case \(index + 1)")
    }
  }

  func testOutOfRangeRequestsAreRefused() {
    XCTAssertThrowsError(try HKDFSHA256.derive(key: [1], salt: [], info: [], length: 0))
    XCTAssertThrowsError(try HKDFSHA256.derive(key: [1], salt: [], info: [], length: HKDFSHA256.maximumLength + 1))
    XCTAssertThrowsError(try HKDFSHA256.derive(key: [], salt: [], info: [], length: 8))
  }
}

final class Ed25519Tests: XCTestCase {
  /// RFC 8032 §7.1, test 1: the public key of a known seed.
  func testPublicKeyOfTheRFC8032Seed() throws {
    let seed = SecureBytes(copying: try hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
    XCTAssertEqual(
      try Ed25519.publicKey(seed: seed), try hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
    XCTAssertThrowsError(try Ed25519.publicKey(seed: SecureBytes(copying: [1, 2, 3])))
  }
}

final class MemoryLockingTests: XCTestCase {
  /// Root (CI) may always lock memory; elsewhere the limit decides, and the outcome is
  /// counted either way, which is what `doctor` reports.
  func testSecretsAreLockedWhereTheKernelAllowsAndCounted() throws {
    let before = MemoryLocking.counts
    let secret = try SecureBytes.random(count: 32)
    let after = MemoryLocking.counts
    XCTAssertEqual(after.locked + after.failed, before.locked + before.failed + 1)
    if getuid() == 0 { XCTAssertTrue(secret.isMemoryLocked, "root may lock memory") }
    XCTAssertEqual(MemoryLocking.probe(), secret.isMemoryLocked)
  }
}
