import Foundation
import MemoCore
import XCTest

@testable import MemoStore
@testable import MemoVault

final class TrustStoreTests: XCTestCase {
  func peer(_ seed: UInt8, _ name: String) -> TrustedPeer {
    TrustedPeer(
      deviceID: DeviceID(bytes: [UInt8](repeating: seed, count: 32))!, name: name, discoveryKey: nil, source: .command,
      added: 7)
  }

  func testUpdatesPersistPrivatelyAndChangeTheFingerprint() throws {
    let node = try TemporaryNode()
    let store = TrustStore(paths: node.paths)
    XCTAssertEqual(try store.load(), TrustList(), "no file: nobody is trusted")
    let before = store.fingerprint()
    try store.update { try $0.trust(peer(1, "laptop")) }
    XCTAssertNotEqual(store.fingerprint(), before)
    XCTAssertEqual(try store.load().peers.map(\.name), ["laptop"])
    var info = stat()
    stat(store.path, &info)
    XCTAssertEqual(info.st_mode & 0o777, 0o600)
    XCTAssertThrowsError(try store.update { try $0.trust(peer(2, "LAPTOP")) })
    XCTAssertEqual(try store.load().peers.count, 1, "a refused change leaves the file as it was")
  }

  func testADamagedOrNewerStoreTrustsNobodyAndSaysSo() throws {
    let node = try TemporaryNode()
    let store = TrustStore(paths: node.paths)
    try store.update { try $0.trust(peer(1, "laptop")) }
    try Data("{\"version\":1,\"peers\":[".utf8).write(to: URL(fileURLWithPath: store.path))
    XCTAssertThrowsError(try store.load()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .storage) }
    try Data("{\"version\":9,\"peers\":[]}".utf8).write(to: URL(fileURLWithPath: store.path))
    XCTAssertThrowsError(try store.load()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .newerDatabase) }
    chmod(store.path, 0o644)
    XCTAssertThrowsError(try store.load()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .permissionsTooOpen) }
  }
}
