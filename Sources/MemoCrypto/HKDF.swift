internal import COpenSSLShims

/// HKDF with SHA-256 (RFC 5869), through OpenSSL's `EVP_KDF` ("HKDF"): extract then expand.
/// Used to turn keying material that is already strong (a TLS exporter) into values bound
/// to a purpose (the pairing code), never to stretch a passphrase (that is scrypt's job).
public enum HKDFSHA256 {
  /// RFC 5869 allows at most 255 hash lengths of output.
  public static let maximumLength = 255 * SHA256.size

  public static func derive(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
    guard (1...maximumLength).contains(length), !key.isEmpty else { throw .malformed }
    var output = [UInt8](repeating: 0, count: length)
    let ok = key.withUnsafeBufferPointer { keyBytes in
      salt.withUnsafeBufferPointer { saltBytes in
        info.withUnsafeBufferPointer { infoBytes in
          output.withUnsafeMutableBufferPointer { out in
            memo_kdf_hkdf_sha256(
              keyBytes.baseAddress, keyBytes.count, saltBytes.baseAddress, saltBytes.count, infoBytes.baseAddress,
              infoBytes.count, out.baseAddress, out.count)
          }
        }
      }
    }
    try OpenSSLCall.check(ok, "EVP_KDF_derive(HKDF)")
    return output
  }
}
