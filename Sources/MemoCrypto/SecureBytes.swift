internal import COpenSSL

/// Secret bytes (keys, passphrases) in memory that is wiped with `OPENSSL_cleanse` when the
/// last reference goes away, and never copied into an Array or String by this type.
///
/// `@unchecked Sendable`: the bytes are written only during initialisation and are
/// read-only afterwards, so sharing a reference across threads is safe.
public final class SecureBytes: @unchecked Sendable {
  private let storage: UnsafeMutableRawBufferPointer

  /// The secret's length; the allocation is never empty, so it may be one byte longer.
  public let count: Int

  /// Zero-filled secret storage of `count` bytes, for a C call to fill.
  init(zeroedCount count: Int) {
    storage = .allocate(byteCount: max(count, 1), alignment: 16)
    storage.initializeMemory(as: UInt8.self, repeating: 0)
    self.count = count
  }

  /// Copies secret bytes in without an intermediate array (which could not be wiped).
  public convenience init(copying bytes: some Collection<UInt8>) {
    self.init(zeroedCount: bytes.count)
    let target = storage.bindMemory(to: UInt8.self)
    for (index, byte) in bytes.enumerated() { target[index] = byte }
  }

  /// Fresh bytes from OpenSSL's CSPRNG.
  public static func random(count: Int) throws(CryptoError) -> SecureBytes {
    let bytes = SecureBytes(zeroedCount: count)
    try bytes.fill { buffer throws(CryptoError) in
      try OpenSSLCall.check(RAND_bytes(buffer.baseAddress, Int32(buffer.count)), "RAND_bytes")
    }
    return bytes
  }

  /// `count` secret bytes written in place by `body` (a system call that reads a secret, such
  /// as a kernel keyring read), so they never pass through an array that could not be wiped.
  public static func filled(count: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows
    -> SecureBytes
  {
    let bytes = SecureBytes(zeroedCount: count)
    try body(UnsafeMutableRawBufferPointer(rebasing: bytes.storage[0..<count]))
    return bytes
  }

  /// Lets a C function write the secret in place.
  func fill(_ body: (UnsafeMutableBufferPointer<UInt8>) throws(CryptoError) -> Void) throws(CryptoError) {
    try body(UnsafeMutableBufferPointer(start: storage.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
  }

  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<count]))
  }

  /// Compares in constant time (for equal lengths), so timing reveals nothing about keys.
  public func constantTimeEquals(_ other: SecureBytes) -> Bool {
    guard count == other.count else { return false }
    return withUnsafeBytes { mine in
      other.withUnsafeBytes { theirs in CRYPTO_memcmp(mine.baseAddress, theirs.baseAddress, mine.count) == 0 }
    }
  }

  deinit {
    OPENSSL_cleanse(storage.baseAddress, storage.count)
    storage.deallocate()
  }
}
