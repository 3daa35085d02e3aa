internal import COpenSSLShims

/// scrypt cost parameters, stored next to whatever they protect so they can be raised later
/// without breaking old archives.
public struct ScryptParameters: Sendable, Equatable {
  public var n: UInt64
  public var r: UInt32
  public var p: UInt32

  /// N = 2^15, r = 8, p = 1: about 170 ms and 32 MiB on the build machines.
  public static let standard = ScryptParameters(n: 1 << 15, r: 8, p: 1)

  public init(n: UInt64, r: UInt32, p: UInt32) {
    self.n = n
    self.r = r
    self.p = p
  }

  /// Refuses parameters a hostile archive could use to exhaust memory or time.
  public var isAcceptable: Bool {
    n >= 2 && n & (n - 1) == 0 && n <= 1 << 20 && r >= 1 && r <= 32 && p >= 1 && p <= 16
  }
}

/// Turns a passphrase into a 256-bit key with scrypt (OpenSSL EVP_KDF).
public enum PassphraseKDF {
  public static func deriveKey(
    passphrase: SecureBytes, salt: [UInt8], parameters: ScryptParameters
  ) throws(CryptoError) -> SecureBytes {
    guard parameters.isAcceptable else { throw .malformed }
    let memory = 128 * UInt64(parameters.r) * parameters.n * UInt64(parameters.p) + (16 << 20)
    let key = SecureBytes(zeroedCount: AES256GCMKey.keySize)
    try key.fill { output throws(CryptoError) in
      let ok = passphrase.withUnsafeBytes { pass in
        salt.withUnsafeBufferPointer { saltBytes in
          memo_kdf_scrypt(
            pass.bindMemory(to: UInt8.self).baseAddress, pass.count, saltBytes.baseAddress, saltBytes.count,
            parameters.n, parameters.r, parameters.p, memory, output.baseAddress, output.count)
        }
      }
      try OpenSSLCall.check(ok, "EVP_KDF_derive(SCRYPT)")
    }
    return key
  }
}
