internal import COpenSSL

/// Non-secret random bytes (salts, nonces, ids) from OpenSSL's CSPRNG.
public enum SystemRandom {
  public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    try OpenSSLCall.check(RAND_bytes(&bytes, Int32(count)), "RAND_bytes")
    return bytes
  }
}
