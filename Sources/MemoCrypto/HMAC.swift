internal import COpenSSL

/// HMAC-SHA256 through OpenSSL (`HMAC` one-shot with EVP_sha256).
public enum HMACSHA256 {
  public static let size = 32

  public static func authenticate(key: SecureBytes, message: [UInt8]) throws(CryptoError) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: size)
    var length: UInt32 = 0
    let result = key.withUnsafeBytes { keyBytes in
      message.withUnsafeBufferPointer { data in
        HMAC(
          EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), data.baseAddress, data.count, &output, &length)
      }
    }
    guard result != nil, length == UInt32(size) else { throw OpenSSLCall.failure("HMAC") }
    return output
  }
}
