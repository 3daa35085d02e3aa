import MemoCore
import MemoCrypto
import MemoProtocol

/// Devices, ops and logs for the membership tests, over the real cryptography
/// (`MembershipCrypto`): the signatures and ids the tests see are the ones devices make.
enum MembershipFixtures {
  static let crypto = MembershipCrypto()

  /// A device whose key comes from `seed`, so runs are repeatable.
  struct Device {
    let key: Ed25519.SigningKey
    let id: DeviceID
    let name: String

    init(_ name: String, seed: UInt64) {
      var bytes = [UInt8](repeating: 0, count: 32)
      for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: seed >> (8 * UInt64(index))) }
      bytes[31] = 0x5A
      key = try! Ed25519.SigningKey(seed: SecureBytes(copying: bytes))
      id = DeviceID(bytes: try! SHA256.hash(key.publicKey))!
      self.name = name
    }
  }

  static let nonce = [UInt8](repeating: 7, count: 16)

  /// A new notebook made by `creator`: its log with the genesis in it.
  static func notebook(by creator: Device, nonce: [UInt8] = nonce) -> MembershipLog {
    let genesis = try! MembershipLog.genesis(nonce: nonce, signer: creator.key, verifier: crypto)!
    var log = MembershipLog(notebook: genesis.notebook, verifier: crypto)
    try! log.insert(genesis)
    return log
  }

  /// 80 bytes standing for a sealed key: the log never opens boxes.
  static func box(_ tag: UInt8) -> [UInt8] { [UInt8](repeating: tag, count: MembershipLimits.sealedKeyBytes) }
  static func keyID(_ tag: UInt8) -> [UInt8] { [UInt8](repeating: tag, count: MembershipLimits.keyIDBytes) }

  static let replica = ReplicaID(String(repeating: "c", count: 32))!
  static let otherReplica = ReplicaID(String(repeating: "d", count: 32))!
  static let memo = MemoID(canonical: "0f8fad5b-d9cb-469f-a165-70867728950e")!

  /// One op of every kind, signed, after `log`'s heads (the genesis first).
  static func opOfEveryKind(_ log: MembershipLog, by author: Device, naming other: Device) throws -> [NotebookOp] {
    [
      log.ops[0],
      try log.share(other.id, as: .relay, signer: author.key),
      try log.unshare(
        other.id,
        cut: [
          NotebookOp.CutEntry(replica: otherReplica, sequence: 9), NotebookOp.CutEntry(replica: replica, sequence: 3),
        ], signer: author.key),
      try log.rotateKey(keyID: keyID(1), sealed: [author.id: box(1), other.id: box(2)], signer: author.key),
      try log.grant(other.id, keys: [keyID(1): box(3), keyID(2): box(4)], signer: author.key),
      try log.rename(keyID: keyID(1), sealedName: [1, 2, 3, 4], signer: author.key),
      try log.retiredPurge(memo, signer: author.key),
      try MembershipLog.legacyGenesis(of: log.notebook, signer: author.key),
    ]
  }
}

/// An `OpVerifier` that accepts every key and signature (ids are still real SHA-256): for
/// the tests of limits, where thousands of real signatures would only cost time.
struct AcceptingVerifier: OpVerifier {
  func isValidPublicKey(_ publicKey: [UInt8]) -> Bool { true }
  func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool { true }
  func sha256(_ bytes: [UInt8]) -> [UInt8]? { MembershipFixtures.crypto.sha256(bytes) }
  func notebookID(creator: DeviceID, nonce: [UInt8]) -> NotebookID? {
    MembershipFixtures.crypto.notebookID(creator: creator, nonce: nonce)
  }
}

/// Signs nothing: the signature is 64 zero bytes (with `AcceptingVerifier`).
struct UnsignedSigner: OpSigner {
  let publicKey: [UInt8]
  func signature(for message: [UInt8]) throws -> [UInt8] { [UInt8](repeating: 0, count: 64) }
}

extension MembershipLog {
  /// An op of the retired kind 7 (no device makes one any more): what a log from before
  /// may hold, and a cheap op that changes no membership for the tests of limits.
  func retiredPurge(_ memo: MemoID, signer: any OpSigner) throws -> NotebookOp {
    var op = NotebookOp(notebook: notebook, author: signer.publicKey, parents: heads, body: .retiredPurge(memo: memo))
    op.signature = try signer.signature(for: op.signedMessage)
    return op
  }
}
