import MemoCore

/// Making ops: the store calls these with the device's identity key to change a notebook.
/// Each op's parents are the log's heads (everything this device has seen), its signature
/// the signer's; the op is not inserted, so the caller inserts it, persists it and sends it.
extension MembershipLog {
  /// A new notebook's genesis: its id derives from the creator's device ID and `nonce`
  /// (16 random bytes), so nobody else can make a genesis for it. Nil when the derivation
  /// fails.
  public static func genesis(nonce: [UInt8], signer: any OpSigner, verifier: any OpVerifier) throws -> NotebookOp? {
    guard let device = verifier.device(of: signer.publicKey),
      let notebook = verifier.notebookID(creator: device, nonce: nonce)
    else { return nil }
    return try sign(
      NotebookOp(notebook: notebook, author: signer.publicKey, parents: [], body: .create(nonce: nonce)), signer)
  }

  /// The genesis of a notebook from before version 3 (no nonce), signed at the upgrade by
  /// a device that held it in its version-2 tables.
  public static func legacyGenesis(of notebook: NotebookID, signer: any OpSigner) throws -> NotebookOp {
    try sign(NotebookOp(notebook: notebook, author: signer.publicKey, parents: [], body: .create(nonce: [])), signer)
  }

  public func share(_ device: DeviceID, as role: NotebookOp.Role, signer: any OpSigner) throws -> NotebookOp {
    try make(.share(device: device, role: role), signer)
  }

  /// `cut`: what this device knows of the removed device's replicas (any order).
  public func unshare(_ device: DeviceID, cut: [NotebookOp.CutEntry], signer: any OpSigner) throws -> NotebookOp {
    let sorted = Dictionary(cut.map { ($0.replica, $0.sequence) }, uniquingKeysWith: max)
      .map { NotebookOp.CutEntry(replica: $0.key, sequence: $0.value) }.sorted { $0.replica < $1.replica }
    return try make(.unshare(device: device, cut: sorted), signer)
  }

  /// The next key generation (one more than the highest the log holds), sealed by the
  /// caller to each of `state.keyRecipients` (`sealed`: device → 80-byte box).
  public func rotateKey(keyID: [UInt8], sealed: [DeviceID: [UInt8]], signer: any OpSigner) throws -> NotebookOp {
    let boxes = sealed.map { NotebookOp.SealedKey(device: $0.key, sealed: $0.value) }.sorted { $0.device < $1.device }
    return try make(.key(generation: state.generation + 1, keyID: keyID, sealed: boxes), signer)
  }

  /// Earlier generations for `device` (`keys`: key id → 80-byte box sealed to it).
  public func grant(_ device: DeviceID, keys: [[UInt8]: [UInt8]], signer: any OpSigner) throws -> NotebookOp {
    let granted = keys.map { NotebookOp.GrantedKey(keyID: $0.key, sealed: $0.value) }
      .sorted { $0.keyID.lexicographicallyPrecedes($1.keyID) }
    return try make(.grant(device: device, keys: granted), signer)
  }

  /// The name, sealed by the caller (AES-256-GCM) under the generation `keyID` names.
  public func rename(keyID: [UInt8], sealedName: [UInt8], signer: any OpSigner) throws -> NotebookOp {
    try make(.rename(keyID: keyID, sealedName: sealedName), signer)
  }

  private func make(_ body: NotebookOp.Body, _ signer: any OpSigner) throws -> NotebookOp {
    try Self.sign(NotebookOp(notebook: notebook, author: signer.publicKey, parents: heads, body: body), signer)
  }

  private static func sign(_ op: NotebookOp, _ signer: any OpSigner) throws -> NotebookOp {
    var signed = op
    signed.signature = try signer.signature(for: op.signedMessage)
    return signed
  }
}
