internal import COpenSSL
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Secret bytes (keys, passphrases) in memory that is wiped with `OPENSSL_cleanse` when the
/// last reference goes away, and never copied into an Array or String by this type.
///
/// Each secret has pages of its own, locked into RAM with mlock(2) where the kernel allows
/// it (so it never reaches swap) and left out of core dumps (MADV_DONTDUMP). Memory locks do
/// not nest, so no two secrets share a page: unlocking one can never unlock another.
/// Whether locking worked is counted (`MemoryLocking`), for `memo-peer doctor`.
///
/// `@unchecked Sendable`: the bytes are written only while the value is made (in init, or by
/// `fill` in the factory methods, before the value is returned) and are read-only afterwards
/// until deinit wipes them, so sharing a reference across threads is safe.
public final class SecureBytes: @unchecked Sendable {
  private let storage: UnsafeMutableRawBufferPointer
  /// Whether mlock(2) locked the pages (they are unlocked in deinit).
  public let isMemoryLocked: Bool

  /// The secret's length; the allocation is never empty, so it may be longer.
  public let count: Int

  /// Zero-filled secret storage of `count` bytes, for a C call to fill.
  init(zeroedCount count: Int) {
    let page = MemoryLocking.pageSize
    let size = (max(count, 1) + page - 1) / page * page
    let pages = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: page)
    storage = pages
    pages.initializeMemory(as: UInt8.self, repeating: 0)
    // Best effort, errors ignored: core dumps are also turned off at start (memo_harden_process).
    _ = madvise(pages.baseAddress, size, MADV_DONTDUMP)
    do throws(SystemError) {
      try System.call("mlock") { mlock(pages.baseAddress, size) }
      isMemoryLocked = true
      MemoryLocking.recordLocked()
    } catch {
      isMemoryLocked = false
      MemoryLocking.record(refusal: error.errno)
    }
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

  /// Overwrites an array that held a secret (a file's bytes, a decrypted key) with zeros.
  public static func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
      if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
    }
  }

  deinit {
    OPENSSL_cleanse(storage.baseAddress, storage.count)
    if isMemoryLocked { _ = munlock(storage.baseAddress, storage.count) }
    storage.deallocate()
  }
}

/// Whether this process could lock its secrets into RAM: every `SecureBytes` tries, and the
/// outcome is counted here for `memo-peer doctor`.
public enum MemoryLocking {
  static let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
  private static let lockedCount = Atomic<Int>(0)
  private static let failedCount = Atomic<Int>(0)
  private static let lastError = Atomic<Int32>(0)

  static func recordLocked() { lockedCount.add(1, ordering: .relaxed) }

  static func record(refusal: Errno) {
    failedCount.add(1, ordering: .relaxed)
    lastError.store(refusal.rawValue, ordering: .relaxed)
  }

  /// Secrets locked and not locked so far in this process, and the errno of the last refusal.
  public static var counts: (locked: Int, failed: Int, lastErrno: Int32) {
    (lockedCount.load(ordering: .relaxed), failedCount.load(ordering: .relaxed), lastError.load(ordering: .relaxed))
  }

  /// Tries once: whether a fresh secret's pages can be locked now.
  public static func probe() -> Bool { SecureBytes(zeroedCount: 32).isMemoryLocked }

  /// Gives OpenSSL a secure heap (CRYPTO_secure_malloc_init): a locked, undumped arena where
  /// it keeps private keys it allocates itself (the Ed25519 identity key: TLS, signatures). Called
  /// once at start; false when the kernel refuses to lock it (keys then live in ordinary
  /// memory, and `doctor` says so).
  @discardableResult
  public static func enableOpenSSLSecureHeap() -> Bool {
    // 1: made and locked; 2: made, but the kernel refused to lock it; 0: not made.
    if CRYPTO_secure_malloc_initialized() != 1 {
      secureHeapResult.store(CRYPTO_secure_malloc_init(64 << 10, 32), ordering: .relaxed)
    }
    return openSSLSecureHeap
  }

  private static let secureHeapResult = Atomic<Int32>(0)

  /// Whether OpenSSL's secure heap is in use and locked into RAM.
  public static var openSSLSecureHeap: Bool { secureHeapResult.load(ordering: .relaxed) == 1 }
}
