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

  /// SHA-256 of `pieces` one after the other, fed to one EVP_MD_CTX where they lie, so a
  /// secret piece is never joined into an array that would need wiping (OpenSSL clears
  /// its digest state when the context is freed).
  static func hash(pieces: [UnsafeRawBufferPointer]) throws(CryptoError) -> [UInt8] {
    guard let context = EVP_MD_CTX_new() else { throw OpenSSLCall.failure("EVP_MD_CTX_new") }
    defer { EVP_MD_CTX_free(context) }
    try OpenSSLCall.check(EVP_DigestInit_ex(context, EVP_sha256(), nil), "EVP_DigestInit_ex")
    for piece in pieces where !piece.isEmpty {
      try OpenSSLCall.check(EVP_DigestUpdate(context, piece.baseAddress, piece.count), "EVP_DigestUpdate")
    }
    var output = [UInt8](repeating: 0, count: size)
    var length: UInt32 = 0
    try OpenSSLCall.check(EVP_DigestFinal_ex(context, &output, &length), "EVP_DigestFinal_ex")
    guard length == UInt32(size) else { throw OpenSSLCall.failure("EVP_DigestFinal_ex(length)") }
    return output
  }
}
