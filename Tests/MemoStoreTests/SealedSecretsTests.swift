import Foundation
import MemoCore
import MemoCrypto
import MemoSystem
import MemoTestSupport
import XCTest

@testable import MemoStore
@testable import MemoVault

/// The identity key, the discovery key and the trust store follow the device key: plain
/// without a passphrase, sealed under the device key with one — unreadable while locked,
/// and refused when a plain copy is planted in their place.
final class SealedSecretsTests: XCTestCase {
  let keyring = FakeKeyring()
  let right = SecureBytes(copying: Array("correct horse battery".utf8))
  static let fixturePassphrase = SecureBytes(copying: Array("fixture passphrase".utf8))
  static let fixtureDeviceID = "GFMF-CKAL-5MMD-JW54-TD3J-ANUT-BISY-KONG-RWGS-UUZN-WFLZ-M23X-7WVQ"

  func keys(_ node: TemporaryNode) -> DeviceKeys {
    DeviceKeys(paths: node.paths, keyring: keyring, kdfParameters: ProtectionStoreTests.fastKDF)
  }

  func secrets(_ node: TemporaryNode) -> NodeSecrets { NodeSecrets(paths: node.paths, keys: keys(node)) }
  func trust(_ node: TemporaryNode) -> TrustStore { TrustStore(paths: node.paths, keys: keys(node)) }

  func bytes(_ key: SecureBytes) -> [UInt8] { key.withUnsafeBytes { Array($0) } }

  func deviceID(_ publicKey: [UInt8]) throws -> DeviceID { try XCTUnwrap(DeviceID(bytes: try SHA256.hash(publicKey))) }

  func file(_ node: TemporaryNode, _ name: String) throws -> [UInt8] {
    try PrivateFiles.read(node.paths.keyDirectory + "/" + name, limit: 1 << 20)
  }

  func protect(_ node: TemporaryNode, _ target: ProtectionClass, current: SecureBytes? = nil) throws {
    _ = try keys(node).protect(
      target, idleTimeout: nil, changePassphrase: false, currentPassphrase: { try XCTUnwrap(current) },
      newPassphrase: { self.right })
  }

  func assertLocked(_ body: @autoclosure () throws -> some Any, _ what: String, line: UInt = #line) {
    XCTAssertThrowsError(try body(), what, line: line) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked, "\(what): \($0)", line: line)
    }
  }

  /// A node with an identity, a discovery key and a trusted peer, unprotected.
  func populatedNode() throws -> (TemporaryNode, seed: [UInt8], discovery: [UInt8], list: TrustList) {
    let node = try TemporaryNode()
    let seed = bytes(try secrets(node).identitySeed())
    let discovery = bytes(try secrets(node).discoveryKey())
    let peer = TrustedPeer(
      deviceID: DeviceID(bytes: [UInt8](repeating: 5, count: 32))!, name: "nas",
      discoveryKey: Data(repeating: 9, count: 32).base64EncodedString(), rotationSeconds: 900, source: .pairing,
      added: 1)
    try trust(node).update { try $0.trust(peer) }
    return (node, seed, discovery, try trust(node).load())
  }

  // MARK: - Migration of a home protected before secrets were sealed

  func testAnOldProtectedHomeIsSealedAtItsFirstUnlockKeepingEverySecret() throws {
    let node = try TemporaryNode()
    let fixture = try XCTUnwrap(Bundle.module.resourcePath) + "/Fixtures/protected-home-v2/keys"
    try PrivateFiles.ensureDirectory(node.paths.keyDirectory, role: "key directory")
    for name in ["device.key", "identity.key", "discovery.key", "trusted-peers.json"] {
      try PrivateFiles.writeAtomically(
        Array(try Data(contentsOf: URL(fileURLWithPath: fixture + "/" + name))),
        to: node.paths.keyDirectory + "/" + name)
    }
    // Before: the old formats, readable without the passphrase (what the issue is about).
    XCTAssertEqual(try file(node, "device.key")[4], 2)
    XCTAssertEqual(try file(node, "identity.key")[4], 1)
    guard case .legacy(nil) = try keys(node).secretMode() else { return XCTFail("a locked legacy home") }
    let seed = bytes(try secrets(node).identitySeed())
    let discovery = bytes(try secrets(node).discoveryKey())
    let list = try trust(node).load()
    XCTAssertEqual(try deviceID(try secrets(node).identityPublicKey()).description, Self.fixtureDeviceID)
    XCTAssertEqual(list.peers.map(\.name), ["nas"])

    try keys(node).unlock(passphrase: Self.fixturePassphrase)

    // After: every secret sealed, the same values inside, the device key file at version 3.
    XCTAssertEqual(try file(node, "device.key")[4], 3)
    XCTAssertEqual(try file(node, "identity.key")[4], 3)
    XCTAssertEqual(try file(node, "discovery.key")[4], 3)
    XCTAssertTrue(try file(node, "trusted-peers.json").starts(with: Array("MPTS".utf8)))
    XCTAssertEqual(bytes(try secrets(node).identitySeed()), seed)
    XCTAssertEqual(bytes(try secrets(node).discoveryKey()), discovery)
    XCTAssertEqual(try trust(node).load(), list, "every field survives, discovery key and receive policy included")
    XCTAssertEqual(try keys(node).status().protection, .afterFirstUnlock)
    // Nothing secret is left in clear in the key directory.
    let everything = try ["device.key", "identity.key", "discovery.key", "trusted-peers.json"].flatMap {
      try file(node, $0)
    }
    for secret in [seed, discovery, Array("nas".utf8), Array(list.peers[0].deviceID.compact.utf8)] {
      XCTAssertFalse(Data(everything).range(of: Data(secret)) != nil, "a secret is still in clear")
    }

    // Locked ("a reboot"): nothing but the public key can be read; unlocking again opens it.
    keyring.reboot()
    assertLocked(try secrets(node).identitySeed(), "identity")
    assertLocked(try secrets(node).discoveryKey(), "discovery key")
    assertLocked(try trust(node).load(), "trust store")
    assertLocked(try trust(node).update { _ in }, "trust store change")
    XCTAssertEqual(try deviceID(try secrets(node).identityPublicKey()).description, Self.fixtureDeviceID)
    let sealedDeviceKey = try file(node, "device.key")
    try keys(node).unlock(passphrase: Self.fixturePassphrase)
    XCTAssertEqual(try file(node, "device.key"), sealedDeviceKey, "a second unlock rewrites nothing")
    XCTAssertEqual(bytes(try secrets(node).identitySeed()), seed)
  }

  // MARK: - Protect and unprotect

  func testProtectSealsEverySecretAndProtectNoneOpensThemAgain() throws {
    let (node, seed, discovery, list) = try populatedNode()
    try protect(node, .complete)
    XCTAssertEqual(try file(node, "identity.key").count, 5 + 32 + AES256GCMKey.overhead + 32)
    XCTAssertEqual(try file(node, "discovery.key").count, 5 + AES256GCMKey.overhead + 32)
    XCTAssertEqual(bytes(try secrets(node).identitySeed()), seed)
    XCTAssertEqual(try trust(node).load(), list)
    // A change while unlocked stays sealed.
    try trust(node).update { list in _ = try list.rename("nas", to: "server") }
    XCTAssertTrue(try file(node, "trusted-peers.json").starts(with: Array("MPTS".utf8)))
    try keys(node).lock()
    assertLocked(try secrets(node).identitySeed(), "identity")
    assertLocked(try trust(node).load(), "trust store")
    try protect(node, .none, current: right)
    XCTAssertEqual(try file(node, "identity.key")[4], 1)
    XCTAssertEqual(try file(node, "discovery.key")[4], 1)
    XCTAssertEqual(try file(node, "trusted-peers.json").first, UInt8(ascii: "{"))
    XCTAssertEqual(bytes(try secrets(node).identitySeed()), seed)
    XCTAssertEqual(bytes(try secrets(node).discoveryKey()), discovery)
    XCTAssertEqual(try trust(node).load().peers.map(\.name), ["server"])
  }

  func testSecretsMadeOnAProtectedNodeAreSealedFromTheStartAndNeedItUnlocked() throws {
    let node = try TemporaryNode()
    try protect(node, .afterFirstUnlock)
    let seed = bytes(try secrets(node).identitySeed())
    XCTAssertEqual(try file(node, "identity.key")[4], 3)
    XCTAssertEqual(
      try deviceID(try secrets(node).identityPublicKey()),
      try deviceID(Ed25519.publicKey(seed: SecureBytes(copying: seed))))
    try keys(node).lock()
    assertLocked(try secrets(node).discoveryKey(), "a discovery key cannot be made while locked")
    XCTAssertFalse(PrivateFiles.exists(node.paths.keyDirectory + "/discovery.key"))
    assertLocked(try trust(node).load(), "no trust store yet, and locked: locked, not an empty list")
  }

  /// A crash between sealing the secrets and writing the wrapped key (protect), or between
  /// writing the plain key and opening the secrets (protect none): the node still reads all.
  func testAnInterruptedChangeOfProtectionLosesNothing() throws {
    let (node, seed, _, list) = try populatedNode()
    let deviceKey = try KeyFile.device(node.paths).loadOrCreate()
    try secrets(node).sealPlainSecrets(with: deviceKey)
    guard case .plain = try keys(node).secretMode() else { return XCTFail("still unprotected") }
    XCTAssertEqual(try file(node, "identity.key")[4], 3, "sealed, but the key file not yet wrapped")
    XCTAssertEqual(bytes(try secrets(node).identitySeed()), seed)
    XCTAssertEqual(try trust(node).load(), list)
  }

  // MARK: - What a stolen or edited disk cannot do

  func testAPlainSecretPlantedInASealedHomeIsRefused() throws {
    let (node, _, _, _) = try populatedNode()
    try protect(node, .afterFirstUnlock)
    // Someone with the disk replaces the trust store with one that trusts their device.
    let planted = Array(
      #"{"version": 1, "peers": [{"device_id": "AAAA", "name": "evil", "source": "command", "added": 1}]}"#.utf8)
    try PrivateFiles.writeAtomically(planted, to: node.paths.keyDirectory + "/trusted-peers.json")
    XCTAssertThrowsError(try trust(node).load()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .wrongKey) }
    // Or an identity of their own.
    try PrivateFiles.writeAtomically(
      Array("MPID".utf8) + [1, 0] + [UInt8](repeating: 7, count: 32), to: node.paths.keyDirectory + "/identity.key")
    XCTAssertThrowsError(try secrets(node).identitySeed()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .wrongKey) }
  }

  func testASealedSecretThatWasEditedOrMovedDoesNotOpen() throws {
    let (node, _, _, _) = try populatedNode()
    try protect(node, .afterFirstUnlock)
    var identity = try file(node, "identity.key")
    identity[10] ^= 1  // the public key in clear: authenticated too
    try PrivateFiles.writeAtomically(identity, to: node.paths.keyDirectory + "/identity.key")
    XCTAssertThrowsError(try secrets(node).identitySeed()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .integrity) }
    // The discovery key sealed for this node does not open as another node's.
    let other = try TemporaryNode()
    try protect(other, .afterFirstUnlock)
    try PrivateFiles.writeAtomically(try file(node, "discovery.key"), to: other.paths.keyDirectory + "/discovery.key")
    XCTAssertThrowsError(try secrets(other).discoveryKey()) { XCTAssertEqual(($0 as? MemoPeerError)?.code, .integrity) }
  }

  func testAWrappedKeyEditedBackToTheLegacyVersionNoLongerOpens() throws {
    let node = try TemporaryNode()
    try protect(node, .afterFirstUnlock)
    try keys(node).lock()
    var deviceKey = try file(node, "device.key")
    deviceKey[4] = 2  // "secrets may be plain"
    try PrivateFiles.writeAtomically(deviceKey, to: node.paths.deviceKeyPath)
    XCTAssertThrowsError(try keys(node).unlock(passphrase: right)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .passphrase)
    }
  }
}
