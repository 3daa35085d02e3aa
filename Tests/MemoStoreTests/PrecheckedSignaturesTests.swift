import MemoCore
import MemoCrypto
import MemoTestSupport
import XCTest

@testable import MemoStore

/// The answers checked before a batch's transaction (issue 39) are taken only for the
/// same record under the same key; anything else is checked inside, so a binding written
/// meanwhile by another process never lets a forgery through or keeps a true record out.
final class PrecheckedSignaturesTests: XCTestCase {
  private func key(_ byte: UInt8) throws -> Ed25519.SigningKey {
    try Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
  }

  func testAnAnswerIsTakenOnlyForTheSameRecordAndKey() throws {
    let signer = try key(1)
    let other = try key(2)
    let message = Array("a record's signed message".utf8)
    let signature = try signer.signature(for: message)
    var pending = MemoStore.SignatureChecks()
    pending.checks = [(signature, message, signer.publicKey), (signature, message, other.publicKey)]
    pending.checked = [(0, TestDevices.id(named: "one")), (1, TestDevices.id(named: "two"))]
    // Before the transaction record 0 was (wrongly, as if forged) checked under its key,
    // and record 1 under the signer's key, which the transaction now names differently.
    let prechecked = PrecheckedSignatures(results: [0: (signer.publicKey, false), 1: (signer.publicKey, true)])
    // Record 0: the same key, so the earlier answer stands; record 1: checked again under
    // the key named now, which does not verify.
    XCTAssertEqual(prechecked.valid(pending), [false, false])
    XCTAssertEqual(PrecheckedSignatures.none.valid(pending), [true, false])
  }
}
