internal import COpenSSL

/// The cipher, fetched once: an explicit fetch avoids OpenSSL 3's per-call implicit fetch,
/// which costs more than sealing a short memo title.
///
/// `@unchecked Sendable`: a C pointer, set once; OpenSSL documents fetched algorithm objects
/// as safe to share between threads.
private final class FetchedCipher: @unchecked Sendable {
  let pointer: OpaquePointer?
  init() { pointer = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) }
}
private let aes256GCM = FetchedCipher()

/// AES-256-GCM sealing under one key, through OpenSSL's EVP API.
///
/// Sealed format, version 1 (docs/FORMATS.md): `0x01 ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
/// Every seal draws a fresh random 96-bit nonce. The two EVP contexts are keyed once and
/// reused, so per-memo cost is an IV set-up, not a key schedule.
///
/// Not Sendable: the EVP contexts are mutable. Use one instance per thread.
public final class AES256GCMKey {
  public static let keySize = 32
  public static let nonceSize = 12
  public static let tagSize = 16
  /// Format version byte that starts every sealed value.
  public static let formatVersion: UInt8 = 1
  /// Bytes a sealed value adds to its plaintext.
  public static let overhead = 1 + nonceSize + tagSize

  private let encryptor: OpaquePointer
  private let decryptor: OpaquePointer
  /// Random bytes drawn from the CSPRNG in one call and handed out 12 at a time: every
  /// nonce is still fresh CSPRNG output, but one `RAND_bytes` call per 256 seals instead of
  /// one per seal (which cost more than sealing a 1 KiB memo).
  private var noncePool = [UInt8](repeating: 0, count: 256 * nonceSize)
  private var noncePoolOffset = 256 * nonceSize

  public init(_ key: SecureBytes) throws(CryptoError) {
    guard key.count == Self.keySize else { throw .malformed }
    guard let cipher = aes256GCM.pointer else { throw OpenSSLCall.failure("EVP_CIPHER_fetch") }
    guard let encryptor = EVP_CIPHER_CTX_new(), let decryptor = EVP_CIPHER_CTX_new() else {
      throw OpenSSLCall.failure("EVP_CIPHER_CTX_new")
    }
    self.encryptor = encryptor
    self.decryptor = decryptor
    let results = key.withUnsafeBytes { raw -> (Int32, Int32) in
      let bytes = raw.bindMemory(to: UInt8.self).baseAddress
      return (
        EVP_EncryptInit_ex(encryptor, cipher, nil, bytes, nil),
        EVP_DecryptInit_ex(decryptor, cipher, nil, bytes, nil)
      )
    }
    try OpenSSLCall.check(results.0, "EVP_EncryptInit_ex")
    try OpenSSLCall.check(results.1, "EVP_DecryptInit_ex")
  }

  private init(encryptor: OpaquePointer, decryptor: OpaquePointer) {
    self.encryptor = encryptor
    self.decryptor = decryptor
  }

  /// Another instance under the same key, for another thread (`search` opens memos on
  /// every core): the keyed contexts are copied, so the key itself is never handed out.
  public func duplicate() throws(CryptoError) -> AES256GCMKey {
    guard let encryptor = EVP_CIPHER_CTX_new() else { throw OpenSSLCall.failure("EVP_CIPHER_CTX_new") }
    guard let decryptor = EVP_CIPHER_CTX_new() else {
      EVP_CIPHER_CTX_free(encryptor)
      throw OpenSSLCall.failure("EVP_CIPHER_CTX_new")
    }
    let copy = AES256GCMKey(encryptor: encryptor, decryptor: decryptor)
    try OpenSSLCall.check(EVP_CIPHER_CTX_copy(encryptor, self.encryptor), "EVP_CIPHER_CTX_copy")
    try OpenSSLCall.check(EVP_CIPHER_CTX_copy(decryptor, self.decryptor), "EVP_CIPHER_CTX_copy")
    return copy
  }

  deinit {
    EVP_CIPHER_CTX_free(encryptor)
    EVP_CIPHER_CTX_free(decryptor)
  }

  /// Seals with a fresh random nonce, in the versioned format.
  public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
    let total = Self.overhead + plaintext.count
    var failure: CryptoError?
    let sealed = [UInt8](unsafeUninitializedCapacity: total) { output, initialized in
      output[0] = Self.formatVersion
      let nonce = UnsafeMutableBufferPointer(rebasing: output[1..<(1 + Self.nonceSize)])
      do { try nextNonce(into: nonce) } catch {
        failure = error as? CryptoError ?? .malformed
        initialized = 0
        return
      }
      let body = UnsafeMutableBufferPointer(rebasing: output[(1 + Self.nonceSize)...])
      do {
        try plaintext.withUnsafeBufferPointer { input throws(CryptoError) in
          try encrypt(
            nonce: UnsafeBufferPointer(nonce), plaintext: input, associatedData: associatedData,
            ciphertext: body, tag: UnsafeMutableBufferPointer(rebasing: body[plaintext.count...]))
        }
        initialized = total
      } catch let error as CryptoError {
        failure = error
        initialized = 0
      } catch {
        failure = .malformed
        initialized = 0
      }
    }
    if let failure { throw failure }
    return sealed
  }

  private func nextNonce(into nonce: UnsafeMutableBufferPointer<UInt8>) throws(CryptoError) {
    if noncePoolOffset == noncePool.count {
      try OpenSSLCall.check(RAND_bytes(&noncePool, Int32(noncePool.count)), "RAND_bytes")
      noncePoolOffset = 0
    }
    for index in 0..<Self.nonceSize { nonce[index] = noncePool[noncePoolOffset + index] }
    noncePoolOffset += Self.nonceSize
  }

  /// Opens a value made by `seal(_:associatedData:)`; any change to it, or a different
  /// associated data, gives `.authenticationFailed`.
  public func open(_ sealed: [UInt8], associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
    var plaintext: [UInt8] = []
    try sealed.withUnsafeBufferPointer { input throws(CryptoError) in
      try associatedData.withUnsafeBufferPointer { data throws(CryptoError) in
        try open(UnsafeRawBufferPointer(input), associatedData: UnsafeRawBufferPointer(data), into: &plaintext)
      }
    }
    return plaintext
  }

  /// `open(_:associatedData:)` into `plaintext`, whose contents are replaced and whose
  /// storage is reused: for reading many short fields in a row (`list` opens two per memo),
  /// where a new array for each cost more than the AES itself. On any failure `plaintext` is
  /// wiped and left empty.
  public func open(
    _ sealed: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer, into plaintext: inout [UInt8]
  ) throws(CryptoError) {
    guard sealed.count >= Self.overhead, sealed[0] == Self.formatVersion else {
      plaintext.removeAll(keepingCapacity: true)
      throw .malformed
    }
    let plainCount = sealed.count - Self.overhead
    // Resized without a new allocation once the buffer has held a field this long.
    if plaintext.count < plainCount {
      plaintext.append(contentsOf: repeatElement(0, count: plainCount - plaintext.count))
    } else if plaintext.count > plainCount {
      plaintext.removeLast(plaintext.count - plainCount)
    }
    let input = sealed.baseAddress!
    let verified = try plaintext.withUnsafeMutableBufferPointer { output throws(CryptoError) in
      try decrypt(
        nonce: input + 1, ciphertext: UnsafeRawBufferPointer(start: input + 1 + Self.nonceSize, count: plainCount),
        tag: input + sealed.count - Self.tagSize, associatedData: associatedData,
        into: UnsafeMutableRawPointer(output.baseAddress))
    }
    guard verified else {
      plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
      plaintext.removeAll(keepingCapacity: true)
      throw .authenticationFailed
    }
  }

  /// Raw AES-256-GCM with a caller-chosen nonce, for published test vectors only: reusing a
  /// nonce under one key breaks GCM, which is why `seal` never takes one.
  public func sealForTestVector(nonce: [UInt8], plaintext: [UInt8], associatedData: [UInt8]) throws(CryptoError)
    -> (ciphertext: [UInt8], tag: [UInt8])
  {
    guard nonce.count == Self.nonceSize else { throw .malformed }
    var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
    var tag = [UInt8](repeating: 0, count: Self.tagSize)
    try nonce.withUnsafeBufferPointer { n throws(CryptoError) in
      try plaintext.withUnsafeBufferPointer { p throws(CryptoError) in
        try ciphertext.withUnsafeMutableBufferPointer { c throws(CryptoError) in
          try tag.withUnsafeMutableBufferPointer { t throws(CryptoError) in
            try encrypt(nonce: n, plaintext: p, associatedData: associatedData, ciphertext: c, tag: t)
          }
        }
      }
    }
    return (ciphertext, tag)
  }

  /// Opens raw AES-256-GCM with a given nonce, for test vectors.
  public func openForTestVector(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], associatedData: [UInt8])
    throws(CryptoError) -> [UInt8]
  {
    guard nonce.count == Self.nonceSize, tag.count == Self.tagSize else { throw .malformed }
    var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
    let verified = try nonce.withUnsafeBufferPointer { n throws(CryptoError) in
      try ciphertext.withUnsafeBufferPointer { c throws(CryptoError) in
        try tag.withUnsafeBufferPointer { t throws(CryptoError) in
          try associatedData.withUnsafeBufferPointer { a throws(CryptoError) in
            try plaintext.withUnsafeMutableBufferPointer { p throws(CryptoError) in
              try decrypt(
                nonce: UnsafeRawPointer(n.baseAddress!), ciphertext: UnsafeRawBufferPointer(c),
                tag: UnsafeRawPointer(t.baseAddress!), associatedData: UnsafeRawBufferPointer(a),
                into: UnsafeMutableRawPointer(p.baseAddress))
            }
          }
        }
      }
    }
    guard verified else {
      plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
      throw .authenticationFailed
    }
    return plaintext
  }

  private func encrypt(
    nonce: UnsafeBufferPointer<UInt8>, plaintext: UnsafeBufferPointer<UInt8>, associatedData: [UInt8],
    ciphertext: UnsafeMutableBufferPointer<UInt8>, tag: UnsafeMutableBufferPointer<UInt8>
  ) throws(CryptoError) {
    guard plaintext.count < Int(Int32.max) - 64, associatedData.count < Int(Int32.max) else { throw .malformed }
    var written: Int32 = 0
    try OpenSSLCall.check(EVP_EncryptInit_ex(encryptor, nil, nil, nil, nonce.baseAddress), "EVP_EncryptInit_ex")
    if !associatedData.isEmpty {
      let result = associatedData.withUnsafeBufferPointer {
        EVP_EncryptUpdate(encryptor, nil, &written, $0.baseAddress, Int32($0.count))
      }
      try OpenSSLCall.check(result, "EVP_EncryptUpdate(aad)")
    }
    var produced = 0
    if plaintext.count > 0 {
      try OpenSSLCall.check(
        EVP_EncryptUpdate(encryptor, ciphertext.baseAddress, &written, plaintext.baseAddress, Int32(plaintext.count)),
        "EVP_EncryptUpdate")
      produced = Int(written)
    }
    // GCM's final step writes no bytes; it only computes the tag.
    try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { scratch throws(CryptoError) in
      try OpenSSLCall.check(EVP_EncryptFinal_ex(encryptor, scratch.baseAddress, &written), "EVP_EncryptFinal_ex")
    }
    guard produced == plaintext.count, written == 0 else { throw OpenSSLCall.failure("EVP_EncryptFinal_ex(length)") }
    try OpenSSLCall.check(
      EVP_CIPHER_CTX_ctrl(encryptor, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagSize), tag.baseAddress),
      "EVP_CIPHER_CTX_ctrl(GET_TAG)")
  }

  /// Decrypts `ciphertext` into `output` (room for as many bytes) and checks the tag: false
  /// when it does not match (`output` then holds bytes that must not be used).
  private func decrypt(
    nonce: UnsafeRawPointer, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawPointer,
    associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer?
  ) throws(CryptoError) -> Bool {
    guard ciphertext.count < Int(Int32.max) - 64, associatedData.count < Int(Int32.max) else { throw .malformed }
    var written: Int32 = 0
    try OpenSSLCall.check(
      EVP_DecryptInit_ex(decryptor, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)), "EVP_DecryptInit_ex")
    if associatedData.count > 0 {
      let result = EVP_DecryptUpdate(
        decryptor, nil, &written, associatedData.baseAddress!.assumingMemoryBound(to: UInt8.self),
        Int32(associatedData.count))
      try OpenSSLCall.check(result, "EVP_DecryptUpdate(aad)")
    }
    if ciphertext.count > 0 {
      let result = EVP_DecryptUpdate(
        decryptor, output!.assumingMemoryBound(to: UInt8.self), &written,
        ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(ciphertext.count))
      try OpenSSLCall.check(result, "EVP_DecryptUpdate")
    }
    // EVP_CTRL_GCM_SET_TAG takes a non-const pointer but only reads it.
    let tagResult = EVP_CIPHER_CTX_ctrl(
      decryptor, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagSize), UnsafeMutableRawPointer(mutating: tag))
    try OpenSSLCall.check(tagResult, "EVP_CIPHER_CTX_ctrl(SET_TAG)")
    let verified = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) {
      EVP_DecryptFinal_ex(decryptor, $0.baseAddress, &written) > 0
    }
    if !verified { _ = OpenSSLCall.drainErrorQueue() }
    return verified
  }
}
