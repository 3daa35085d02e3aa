internal import COpenSSL
internal import COpenSSLShims
import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// An OpenSSL SSL_CTX set up the one way memo-peer uses TLS: 1.3 only, mutual
/// authentication with self-signed Ed25519 certificates checked against pinned keys, ALPN
/// `memo-peer/1` required, no session tickets and no session cache (nothing to store).
public final class TLSContext: @unchecked Sendable {
  public enum Role: Sendable { case server, client }

  public static let alpn = "memo-peer/1"
  /// ALPN in wire format: a length byte, then the name.
  static let alpnWire: [UInt8] = [UInt8(alpn.utf8.count)] + Array(alpn.utf8)

  // Configured once in init, then only read (SSL_new), which OpenSSL allows concurrently.
  let context: OpaquePointer
  public let role: Role
  public let identity: DeviceIdentity

  public init(identity: DeviceIdentity, role: Role) throws(TransportError) {
    // A peer that vanishes mid-write must cost an error on that connection, not the
    // process: OpenSSL writes with write(2), which raises SIGPIPE on a closed socket.
    signal(SIGPIPE, SIG_IGN)
    guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
      throw .openSSL(.library, "SSL_CTX_new")
    }
    self.context = context
    self.role = role
    self.identity = identity
    guard memo_ssl_ctx_tls13_without_resumption(context) == 1,
      SSL_CTX_use_certificate(context, identity.certificate) == 1,
      SSL_CTX_use_PrivateKey(context, identity.key) == 1,
      SSL_CTX_check_private_key(context) == 1
    else { throw .openSSL(.library, "configuring the TLS context") }
    // The chain check is replaced by the pinned-key check; the callback finds the
    // connection through the SSL object's app data.
    SSL_CTX_set_cert_verify_callback(context, verifyPeerCertificate, nil)
    switch role {
    case .server:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT | SSL_VERIFY_CLIENT_ONCE, nil)
      SSL_CTX_set_alpn_select_cb(context, selectALPN, nil)
    case .client:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
      let wire = Self.alpnWire
      guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {  // 0 is success here
        throw .openSSL(.library, "SSL_CTX_set_alpn_protos")
      }
    }
  }

  deinit { SSL_CTX_free(context) }
}

/// Replaces OpenSSL's chain verification: a self-signed certificate is acceptable exactly
/// when the connection's rule accepts the device ID of its key.
private func verifyPeerCertificate(_ store: OpaquePointer?, _: UnsafeMutableRawPointer?) -> Int32 {
  guard let store, let leaf = X509_STORE_CTX_get0_cert(store),
    let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
    let box = SSL_get_ex_data(OpaquePointer(ssl), 0)
  else { return 0 }
  let connection = Unmanaged<TLSConnection>.fromOpaque(box).takeUnretainedValue()
  if connection.verify(certificate: leaf) { return 1 }
  X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
  return 0
}

/// Server side of ALPN: `memo-peer/1` or a fatal alert.
private func selectALPN(
  _: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
  _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _: UnsafeMutableRawPointer?
) -> Int32 {
  guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
  let wanted = TLSContext.alpnWire
  var index = 0
  while index < Int(offeredLength) {
    let length = Int(offered[index])
    let end = index + 1 + length
    guard end <= Int(offeredLength) else { break }
    if length + 1 == wanted.count && (0..<length).allSatisfy({ offered[index + 1 + $0] == wanted[1 + $0] }) {
      out.pointee = offered + index + 1
      outLength.pointee = UInt8(length)
      return SSL_TLSEXT_ERR_OK
    }
    index = end
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL
}
