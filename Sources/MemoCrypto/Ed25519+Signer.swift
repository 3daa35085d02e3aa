import MemoCore

extension Ed25519 {
  /// The device that signed `message`, or nil: the key must be one a device can own (not of
  /// small order: `isValidPublicKey`) and the signature must verify under it. What every
  /// signed statement from another device (a replica binding, a revocation, a purge) is
  /// checked with before anything of it is believed.
  public static func signer(of message: [UInt8], signature: [UInt8], publicKey: [UInt8]) -> DeviceID? {
    guard isValidPublicKey(publicKey), verify(signature, message: message, publicKey: publicKey) else { return nil }
    return try? DeviceID(bytes: SHA256.hash(publicKey))
  }
}
