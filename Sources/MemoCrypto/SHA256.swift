internal import COpenSSL

/// SHA-256 through OpenSSL's one-shot EVP_Digest.
public enum SHA256 {
  public static let size = 32

  public static func hash(_ bytes: [UInt8]) throws(CryptoError) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: size)
    var length: UInt32 = 0
    let result = bytes.withUnsafeBufferPointer {
      EVP_Digest($0.baseAddress, $0.count, &output, &length, EVP_sha256(), nil)
    }
    guard result == 1, length == UInt32(size) else { throw OpenSSLCall.failure("EVP_Digest") }
    return output
  }
}
