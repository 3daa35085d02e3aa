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

  /// The most memory a key file or archive may ask scrypt for: 128 · N · r · p bytes at
  /// most 256 MiB (eight times the standard cost), so a file written by another program
  /// cannot make memo-peer allocate gigabytes or run for minutes.
  public static let maximumMemory: UInt64 = 256 << 20

  /// The memory scrypt needs for these parameters, 128 · N · r · p bytes; nil when that does
  /// not even fit in 64 bits.
  public var memoryBytes: UInt64? {
    let (nr, overflowNR) = n.multipliedReportingOverflow(by: UInt64(r))
    let (nrp, overflowP) = nr.multipliedReportingOverflow(by: UInt64(p))
    let (bytes, overflowBytes) = nrp.multipliedReportingOverflow(by: 128)
    return overflowNR || overflowP || overflowBytes ? nil : bytes
  }

  /// Refuses parameters a hostile archive or key file could use to exhaust memory or time:
  /// N a power of two from 2, r and p from 1, and at most `maximumMemory`.
  public var isAcceptable: Bool {
    guard n >= 2, n & (n - 1) == 0, r >= 1, p >= 1, let memory = memoryBytes else { return false }
    return memory <= Self.maximumMemory
  }

  /// Why these parameters are refused, for a person (`source` names the file).
  public func refusal(_ source: String) -> String {
    let memory = memoryBytes.map { "\($0 >> 20) MiB" } ?? "more memory than exists"
    return "\(source) asks scrypt for \(memory) (N = \(n), r = \(r), p = \(p)); memo-peer allows at most "
      + "\(Self.maximumMemory >> 20) MiB"
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
