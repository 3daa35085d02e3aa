internal import COpenSSL
import MemoCore
import MemoSystem

/// Failures of the cryptographic layer. The store turns these into `MemoPeerError`s that
/// name the affected memo; this layer knows nothing about memos.
public enum CryptoError: Error, Equatable, Sendable {
  /// Authentication failed: wrong key, tampered, truncated or moved ciphertext.
  case authenticationFailed
  /// The sealed value is too short or has an unknown format version.
  case malformed
  /// An OpenSSL call failed; `call` names it and `queue` holds the drained error queue.
  case library(call: String, queue: [String])
}

/// Turns OpenSSL return codes into `CryptoError`, draining the thread's error queue so a
/// later call does not report a stale error.
enum OpenSSLCall {
  static func check(_ result: Int32, _ call: String) throws(CryptoError) {
    guard result == 1 else { throw failure(call) }
  }

  static func failure(_ call: String) -> CryptoError {
    .library(call: call, queue: drainErrorQueue())
  }

  static func drainErrorQueue() -> [String] {
    var messages: [String] = []
    while true {
      let code = ERR_get_error()
      if code == 0 { break }
      var buffer = [CChar](repeating: 0, count: 256)
      ERR_error_string_n(code, &buffer, buffer.count)
      messages.append(String(nulTerminated: buffer))
    }
    return messages
  }
}

/// The calling thread's OpenSSL error queue, for modules that make their own OpenSSL calls
/// (the TLS transport) and must report and clear errors the same way.
public enum OpenSSLErrorQueue {
  /// Every queued error as text, oldest first; the queue is left empty.
  public static func drain() -> [String] { OpenSSLCall.drainErrorQueue() }
}
