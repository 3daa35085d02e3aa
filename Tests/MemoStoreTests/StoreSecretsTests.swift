import Foundation
import MemoCore
import MemoCrypto
import MemoTestSupport
import Synchronization
import XCTest

@testable import MemoStore

/// The store opened with secrets of its own (`StoreSecrets`), not the vault's: it asks them
/// for every key and setting, and touches no file of the node but its database.
final class StoreSecretsTests: XCTestCase {
  /// Secrets held in memory; counts how the content key was asked for.
  final class MemorySecrets: StoreSecrets {
    let content: SecureBytes?
    let listing: SecureBytes
    let seed: SecureBytes
    let publicKey: [UInt8]
    let keyExists: Bool
    /// `creatingIfMissing` of each `contentKey` call, in order.
    let contentKeyAsks = Mutex<[Bool]>([])

    init(content: SecureBytes?, listing: SecureBytes, seed: SecureBytes, keyExists: Bool = true) throws {
      self.content = content
      self.listing = listing
      self.seed = seed
      self.publicKey = try Ed25519.SigningKey(seed: seed).publicKey
      self.keyExists = keyExists
    }

    /// Fresh random keys.
    static func random() throws -> MemorySecrets {
      try MemorySecrets(
        content: .random(count: 32), listing: .random(count: 32), seed: .random(count: 32))
    }

    /// The same keys, with the content key gone or locked.
    func with(content: SecureBytes?, keyExists: Bool) throws -> MemorySecrets {
      try MemorySecrets(content: content, listing: listing, seed: seed, keyExists: keyExists)
    }

    var hasContentKey: Bool { keyExists }
    func contentKey(creatingIfMissing: Bool) throws -> SecureBytes? {
      contentKeyAsks.withLock { $0.append(creatingIfMissing) }
      return content
    }
    func lockState() throws -> LockState { content == nil ? .locked(unlockedSinceBoot: true) : .unprotected }
    func listingKey() throws -> SecureBytes { listing }
    func identitySeed() throws -> SecureBytes { seed }
    func identityPublicKey() throws -> [UInt8] { publicKey }
    func historyLimits() throws -> HistoryLimits { .default }
    func syncQuotas() throws -> SyncQuotas { SyncQuotas() }
    func trustedDevices() throws -> [DeviceID] { [] }
  }

  func testStoreWritesNoKeyFileAndSignsAsTheGivenIdentity() throws {
    let node = try TemporaryNode()
    let secrets = try MemorySecrets.random()
    let store = try MemoStore.open(paths: node.paths, secrets: secrets)
    let memo = try store.create(MemoDraft(title: "Groceries", body: "milk"), now: 1)
    XCTAssertEqual(try store.memo(memo.id).body, "milk")
    XCTAssertEqual(try store.deviceID(), DeviceID(bytes: try SHA256.hash(secrets.publicKey)))
    XCTAssertEqual(try store.memo(memo.id).record?.author, try store.deviceID())
    // A new database makes its content key; nothing in the key directory was written.
    XCTAssertEqual(secrets.contentKeyAsks.withLock { $0 }, [true])
    let keyFiles = (try? FileManager.default.contentsOfDirectory(atPath: node.paths.keyDirectory)) ?? []
    XCTAssertEqual(keyFiles, [])

    // Opened again, the database has its key check: the key is read, never made.
    let again = try secrets.with(content: secrets.content, keyExists: true)
    XCTAssertEqual(try MemoStore.open(paths: node.paths, secrets: again).memo(memo.id).title, "Groceries")
    XCTAssertEqual(again.contentKeyAsks.withLock { $0 }, [false])
  }

  func testExistingDatabaseWithoutItsContentKeyIsRefusedAndLockedOneOpensLocked() throws {
    let node = try TemporaryNode()
    let secrets = try MemorySecrets.random()
    let memo = try MemoStore.open(paths: node.paths, secrets: secrets).create(
      MemoDraft(title: "Groceries", body: "milk"), now: 1)

    XCTAssertThrowsError(try MemoStore.open(paths: node.paths, secrets: secrets.with(content: nil, keyExists: false))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .keyMissing)
    }

    let locked = try MemoStore.open(paths: node.paths, secrets: secrets.with(content: nil, keyExists: true))
    XCTAssertEqual(locked.lockState, .locked(unlockedSinceBoot: true))
    XCTAssertEqual(try locked.listing().map(\.title), ["Groceries"])
    XCTAssertThrowsError(try locked.memo(memo.id)) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked) }
  }
}
