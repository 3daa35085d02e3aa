import MemoCore
import MemoProtocol

/// Making and checking replica bindings (docs/design/sync-v3.md, section 2) with OpenSSL.
public enum ReplicaBindings {
  /// The device a binding proves the replica belongs to, or nil: the key must be a valid
  /// Ed25519 point (not of small order), the signature must verify, and a derived
  /// replica's id must be the derivation of the key's device ID and the nonce.
  public static func verify(_ binding: ReplicaBinding) -> DeviceID? {
    guard
      let device = Ed25519.signer(
        of: binding.signedMessage, signature: binding.signature, publicKey: binding.publicKey)
    else { return nil }
    if binding.isLegacy { return device }
    guard let derived = try? SyncDerivations.replicaID(device: device, nonce: binding.nonce),
      derived == binding.replica
    else { return nil }
    return device
  }

  /// This device's binding of `replica` (derived from `nonce`, or legacy with none).
  public static func make(_ replica: ReplicaID, nonce: [UInt8], signer: Ed25519.SigningKey) throws(CryptoError)
    -> ReplicaBinding
  {
    var binding = ReplicaBinding(replica: replica, publicKey: signer.publicKey, nonce: nonce, signature: [])
    binding.signature = try signer.signature(for: binding.signedMessage)
    return binding
  }
}
