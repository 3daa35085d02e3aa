import MemoCore
import MemoCrypto
import MemoProtocol

extension TransportError {
  /// A failed OpenSSL call, with OpenSSL's error queue (drained) as the detail.
  static func openSSL(_ kind: Kind, _ call: String) -> TransportError {
    let queue = OpenSSLErrorQueue.drain()
    return TransportError(kind, queue.isEmpty ? call : "\(call): \(queue.joined(separator: "; "))")
  }
}
