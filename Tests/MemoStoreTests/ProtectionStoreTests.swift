import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoSystem
import MemoTestSupport
import Synchronization
import XCTest

@_spi(Fuzzing) @testable import MemoStore
@_spi(Fuzzing) @testable import MemoVault

/// Protection classes, lock and unlock, against a fake keyring (the kernel keyring has its
/// own tests in KernelKeyringTests and the CLI tests).
final class ProtectionStoreTests: XCTestCase {
  /// Cheap scrypt for tests; the default cost is tested by the CLI tests.
  static let fastKDF = ScryptParameters(n: 1 << 10, r: 8, p: 1)
  let keyring = FakeKeyring()
  let right = SecureBytes(copying: Array("correct horse battery".utf8))
  let wrong = SecureBytes(copying: Array("incorrect horse".utf8))

  func keys(_ node: TemporaryNode) -> DeviceKeys {
    DeviceKeys(paths: node.paths, keyring: keyring, kdfParameters: Self.fastKDF)
  }

  func open(_ node: TemporaryNode, use: KeyUse = .person) throws -> MemoStore {
    try MemoStore.open(paths: node.paths, keys: keys(node), use: use)
  }

  func protect(
    _ node: TemporaryNode, _ target: ProtectionClass, current: SecureBytes? = nil, new: SecureBytes? = nil,
    change: Bool = false, idle: UInt32? = nil
  ) throws -> DeviceKeys.ProtectOutcome {
    try keys(node).protect(
      target, idleTimeout: idle, changePassphrase: change,
      currentPassphrase: { try XCTUnwrap(current, "the current passphrase was asked for") },
      newPassphrase: { try XCTUnwrap(new, "a new passphrase was asked for") })
  }

  /// A node with a public and a private memo, protected `complete` and then locked.
  func lockedNode() throws -> (TemporaryNode, public: Memo, private: Memo) {
    let node = try TemporaryNode()
    let store = try open(node)
    let open = try store.create(MemoDraft(title: "Groceries", body: "milk", tags: ["home"]), now: 1)
    let secret = try store.create(MemoDraft(title: "Surprise party", body: "for Ana", isPrivate: true), now: 2)
    XCTAssertEqual(try protect(node, .complete, new: right), .protected)
    XCTAssertEqual(try keys(node).status().lockState, .unlocked)
    try keys(node).lock()
    return (node, open, secret)
  }

  func testLockedStoreListsOnlyPublicTitlesAndRefusesContent() throws {
    let (node, open, secret) = try lockedNode()
    XCTAssertEqual(try keys(node).status().lockState, .locked(unlockedSinceBoot: true))
    let store = try self.open(node)
    XCTAssertEqual(store.lockState, .locked(unlockedSinceBoot: true))
    let listing = try store.listing()
    XCTAssertEqual(listing.map(\.id), [secret.id, open.id])
    XCTAssertEqual(listing.map(\.title), [nil, "Groceries"])
    XCTAssertEqual(listing.map(\.tags), [nil, nil])
    XCTAssertTrue(listing[0].isPrivate)
    assertMemoError(.locked, try store.memo(open.id))
    assertMemoError(.locked, try store.search("milk"))
    assertMemoError(.locked, try store.summaries())
    assertMemoError(.locked, try store.listing(tag: "home"))
    // Streamed, the same: public titles only, and the checks come before any row.
    var streamed: [MemoListing] = []
    try store.forEachListing { streamed.append($0) }
    XCTAssertEqual(streamed, listing)
    var reached = false
    assertMemoError(.locked, try store.forEachListing(tag: "home") { _ in reached = true })
    assertMemoError(.locked, try store.forEachSummary { _ in reached = true })
    assertMemoError(.locked, try store.search("milk") { _ in reached = true })
    XCTAssertFalse(reached)
    assertMemoError(.locked, try store.create(MemoDraft(title: "x", body: "y"), now: 3))
    assertMemoError(.locked, try store.update(open.id, MemoChange(body: "z"), now: 3))
    assertMemoError(.locked, try store.delete(open.id, now: 3))
    assertMemoError(.locked, try store.forEachMemo { _ in })
    assertMemoError(.locked, try store.rows(in: .outbox))
    assertMemoError(
      .locked,
      try store.enqueue(QueuedPayload(id: "e", peer: TestDevices.id(named: "P"), payload: [1], time: 1), in: .outbox))
    XCTAssertEqual(try store.outboxWaitingCount(), 0)
    XCTAssertEqual(try store.resolve(String(open.id.rawValue.prefix(8))), open.id)
    XCTAssertEqual(try store.widgetMemo()?.title, nil)  // the latest memo is the private one
    try store.setPinned(open.id, true)
    XCTAssertEqual(try store.widgetMemo()?.title, "Groceries")
    XCTAssertEqual(try store.widgetMemo()?.isPinned, true)
  }

  func testWrongPassphraseChangesNothingAndTheRightOneUnlocks() throws {
    let (node, open, _) = try lockedNode()
    let before = try node.snapshot()
    assertMemoError(.passphrase, try keys(node).unlock(passphrase: wrong)) { error in
      XCTAssertFalse(error.message.contains("incorrect horse"))
      XCTAssertFalse((error.hint ?? "").contains("incorrect horse"))
    }
    XCTAssertEqual(try node.snapshot(), before)
    XCTAssertEqual(try keys(node).status().lockState, .locked(unlockedSinceBoot: true))
    XCTAssertEqual(try keys(node).unlock(passphrase: right).lockState, .unlocked)
    XCTAssertEqual(try self.open(node).memo(open.id).body, "milk")
  }

  func testPassphraseChangeKeepsMemosReadableWithoutReEncryptingThem() throws {
    let (node, open, secret) = try lockedNode()
    let data = try node.rawDataBytes()
    let newPassphrase = SecureBytes(copying: Array("a new passphrase".utf8))
    assertMemoError(.passphrase, try protect(node, .complete, current: wrong, new: newPassphrase, change: true))
    XCTAssertEqual(try protect(node, .complete, current: right, new: newPassphrase, change: true), .changed)
    XCTAssertEqual(try node.rawDataBytes(), data, "no memo was re-encrypted")
    try keys(node).lock()
    assertMemoError(.passphrase, try keys(node).unlock(passphrase: right))
    try keys(node).unlock(passphrase: newPassphrase)
    let store = try self.open(node)
    XCTAssertEqual(try store.memo(open.id).body, "milk")
    XCTAssertEqual(try store.memo(secret.id).title, "Surprise party")
  }

  func testProtectNoneAsksForThePassphraseFirst() throws {
    let (node, open, _) = try lockedNode()
    let before = try node.snapshot()
    assertMemoError(.passphrase, try protect(node, .none, current: wrong))
    XCTAssertEqual(try node.snapshot(), before)
    XCTAssertEqual(try protect(node, .none, current: right), .unprotected)
    XCTAssertEqual(
      try keys(node).status(), DeviceKeys.Status(protection: .none, lockState: .unprotected, idleTimeout: nil))
    XCTAssertEqual(try PrivateFiles.read(node.paths.deviceKeyPath, limit: 100).count, KeyFile.fileSize)
    XCTAssertEqual(keyring.names, [], "nothing stays in the keyring")
    XCTAssertEqual(try self.open(node).memo(open.id).body, "milk")
    assertMemoError(.notProtected, try keys(node).lock())
    assertMemoError(.notProtected, try keys(node).unlock(passphrase: right))
  }

  func testRebootForgetsAfterFirstUnlockAndTheWidgetCanTellBeforeFirstUnlock() throws {
    let node = try TemporaryNode()
    _ = try open(node)
    XCTAssertEqual(try protect(node, .afterFirstUnlock, new: right), .protected)
    XCTAssertEqual(try keys(node).status().lockState, .unlocked)
    XCTAssertNil(try keys(node).status().idleTimeout)
    keyring.reboot()
    XCTAssertEqual(try keys(node).status().lockState, .locked(unlockedSinceBoot: false))
    try keys(node).unlock(passphrase: right)
    try keys(node).lock()
    XCTAssertEqual(try keys(node).status().lockState, .locked(unlockedSinceBoot: true))
  }

  func testCompleteRestartsItsIdleTimeoutOnlyForAPersonsUse() throws {
    let node = try TemporaryNode()
    _ = try open(node)
    XCTAssertEqual(try protect(node, .complete, new: right, idle: 120), .protected)
    XCTAssertEqual(try keys(node).status().idleTimeout, 120)
    let deviceKey = try XCTUnwrap(keyring.names.first { $0.hasSuffix(":device-key") })
    XCTAssertEqual(keyring.timeouts.filter { $0.name == deviceKey }.map(\.seconds), [120])
    _ = try open(node, use: .background)
    XCTAssertEqual(keyring.timeouts.filter { $0.name == deviceKey }.count, 1)
    _ = try open(node, use: .person)
    XCTAssertEqual(keyring.timeouts.filter { $0.name == deviceKey }.map(\.seconds), [120, 120])
    // The timeout running out locks the node.
    keyring.expire { $0 == deviceKey }
    XCTAssertEqual(try open(node).lockState, .locked(unlockedSinceBoot: true))
    // Changing the timeout re-wraps with the same passphrase, asked once.
    XCTAssertEqual(try protect(node, .complete, current: right, idle: 30), .changed)
    XCTAssertEqual(try keys(node).status().idleTimeout, 30)
    XCTAssertEqual(try protect(node, .complete), .unchanged)
    assertMemoError(.usage, try protect(node, .afterFirstUnlock, current: right, idle: 30))
    assertMemoError(.invalidInput, try protect(node, .complete, current: right, idle: 0))
  }

  func testEditingTheHeaderCannotWeakenProtection() throws {
    let (node, _, _) = try lockedNode()
    var bytes = try PrivateFiles.read(node.paths.deviceKeyPath, limit: 1000)
    XCTAssertEqual(bytes.count, WrappedKey.fileSize)
    XCTAssertEqual(Array(bytes[0..<6]), Array("MPDK".utf8) + [3, 2])
    bytes[5] = 1  // complete → after-first-unlock
    try PrivateFiles.writeAtomically(bytes, to: node.paths.deviceKeyPath)
    assertMemoError(.passphrase, try keys(node).unlock(passphrase: right))
  }

  func testProtectingAFreshNodeNeverWritesTheKeyUnwrapped() throws {
    let node = try TemporaryNode()
    XCTAssertEqual(try protect(node, .complete, new: right), .protected)
    XCTAssertEqual(try PrivateFiles.read(node.paths.deviceKeyPath, limit: 1000).count, WrappedKey.fileSize)
    let store = try open(node)
    let memo = try store.create(MemoDraft(title: "t", body: "b"), now: 1)
    try keys(node).lock()
    assertMemoError(.locked, try open(node).memo(memo.id))
    // A brand-new store cannot be made while locked: its key check needs the key.
    let other = try TemporaryNode()
    XCTAssertEqual(try protect(other, .complete, new: right), .protected)
    try keys(other).lock()
    assertMemoError(.locked, try open(other))
  }

  /// Protecting never makes the node read as locked on the way: the key is in the keyring
  /// before the key file names it (a web server looking in between suspended every session).
  func testProtectingNeverShowsTheNodeLockedOnTheWay() throws {
    let node = try TemporaryNode()
    _ = try open(node)
    let probe = ProbingKeyring(paths: node.paths)
    let keys = DeviceKeys(paths: node.paths, keyring: probe, kdfParameters: Self.fastKDF)
    XCTAssertEqual(
      try keys.protect(
        .complete, idleTimeout: nil, changePassphrase: false, currentPassphrase: { SecureBytes(copying: [1]) },
        newPassphrase: { self.right }), .protected)
    XCTAssertFalse(probe.lockedSeen.withLock { $0 }, "the node read as locked while it was protected")
    XCTAssertFalse(keys.isLocked)
    XCTAssertEqual(try keys.status().protection, .complete)
  }

  func testMarkingPrivateRemovesTheListingCopyAndPublicAddsIt() throws {
    let node = try TemporaryNode()
    let store = try open(node)
    let memo = try store.create(MemoDraft(title: "Plans", body: "b"), now: 1)
    XCTAssertFalse(try node.column("listing_title", of: memo.id).isEmpty)
    try store.update(memo.id, MemoChange(isPrivate: true), now: 2)
    XCTAssertTrue(try node.column("listing_title", of: memo.id).isEmpty)
    try store.update(memo.id, MemoChange(isPrivate: false), now: 3)
    XCTAssertFalse(try node.column("listing_title", of: memo.id).isEmpty)
    try store.delete(memo.id, now: 4)
    XCTAssertTrue(try node.column("listing_title", of: memo.id).isEmpty)
  }

  func testListingTitleMovedToAnotherMemoFailsIntegrity() throws {
    let node = try TemporaryNode()
    let store = try open(node)
    let a = try store.create(MemoDraft(title: "A", body: "a"), now: 1)
    let b = try store.create(MemoDraft(title: "B", body: "b"), now: 2)
    try node.setColumn("listing_title", of: b.id, to: try node.column("listing_title", of: a.id))
    XCTAssertEqual(try protect(node, .complete, new: right), .protected)
    try keys(node).lock()
    assertMemoError(.integrity, try open(node).listing())
  }
}

/// A keyring that, each time a secret enters it, reads the node's lock state as any other
/// process would at that moment, and remembers whether it was ever `locked`.
final class ProbingKeyring: SecretKeyring {
  let inner = FakeKeyring()
  let paths: NodePaths
  let lockedSeen = Mutex(false)

  init(paths: NodePaths) { self.paths = paths }

  func store(_ name: String, secret: SecureBytes) throws {
    look()
    try inner.store(name, secret: secret)
    look()
  }

  func read(_ name: String, maxCount: Int) throws -> SecureBytes? { try inner.read(name, maxCount: maxCount) }
  func contains(_ name: String) -> Bool { inner.contains(name) }
  func setTimeout(_ name: String, seconds: UInt32) throws { try inner.setTimeout(name, seconds: seconds) }
  func remove(_ name: String) throws { try inner.remove(name) }

  private func look() {
    if DeviceKeys(paths: paths, keyring: inner).isLocked { lockedSeen.withLock { $0 = true } }
  }
}
