import Foundation
import MemoCrypto
import XCTest

@testable import MemoStore
@testable import MemoVault

/// The real kernel keyring: what `KernelKeyring` promises in `SecretKeyring`'s contract.
final class KernelKeyringTests: XCTestCase {
  let keyring = KernelKeyring()
  let keyName = "memo-peer-test:\(UUID().uuidString):device-key"

  override func tearDown() {
    try? keyring.remove(keyName)
    super.tearDown()
  }

  func testStoreReadReplaceAndRemove() throws {
    XCTAssertFalse(keyring.contains(keyName))
    XCTAssertNil(try keyring.read(keyName, maxCount: 32))
    let secret = SecureBytes(copying: (0..<32).map { UInt8($0) })
    try keyring.store(keyName, secret: secret)
    XCTAssertTrue(keyring.contains(keyName))
    XCTAssertTrue(try XCTUnwrap(try keyring.read(keyName, maxCount: 32)).constantTimeEquals(secret))
    let replacement = SecureBytes(copying: [UInt8](repeating: 7, count: 32))
    try keyring.store(keyName, secret: replacement)
    XCTAssertTrue(try XCTUnwrap(try keyring.read(keyName, maxCount: 32)).constantTimeEquals(replacement))
    // A payload of another size is refused, never truncated into a key.
    XCTAssertThrowsError(try keyring.read(keyName, maxCount: 16))
    try keyring.setTimeout(keyName, seconds: 3600)
    XCTAssertTrue(keyring.contains(keyName))
    try keyring.remove(keyName)
    XCTAssertFalse(keyring.contains(keyName))
    XCTAssertNil(try keyring.read(keyName, maxCount: 32))
    try keyring.remove(keyName)  // removing a missing key is fine
  }

  /// The kernel drops a key whose timeout ran out. Bounded wait for the kernel to do it; the
  /// test asserts the outcome, not how fast it comes.
  func testTimeoutRemovesTheKey() throws {
    try keyring.store(keyName, secret: SecureBytes(copying: [UInt8](repeating: 1, count: 32)))
    try keyring.setTimeout(keyName, seconds: 1)
    let deadline = Date().addingTimeInterval(30)
    while keyring.contains(keyName) && Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
    XCTAssertFalse(keyring.contains(keyName))
    XCTAssertNil(try keyring.read(keyName, maxCount: 32))
  }
}
