internal import COpenSSL
internal import COpenSSLShims
import MemoCore
import MemoProtocol

#if canImport(Glibc)
  import Glibc
#endif

/// An OpenSSL SSL_CTX set up the one way memo-peer uses TLS: 1.3 only, mutual
/// authentication with self-signed Ed25519 certificates checked against pinned keys, ALPN
/// `memo-peer/1` required, no session tickets and no session cache (nothing to store).
///
/// `@unchecked Sendable`: the SSL_CTX is configured once in init and only read afterwards
/// (SSL_new), which OpenSSL allows from several threads at once; the rest is immutable.
public final class TLSContext: @unchecked Sendable {
  public enum Role: Sendable { case server, client }

  /// Which application protocols a context speaks (ALPN).
  public enum Purpose: Sendable {
    /// Trusted sessions: `memo-peer/1` only.
    case trusted
    /// Pairing: `memo-peer-pair/2` (docs/PROTOCOL.md). `memo-peer/1` is offered and accepted
    /// too, only so that a peer still on pairing version 1 completes the handshake and can be
    /// recognised (`TLSConnection.negotiatedProtocol`) and told to update, instead of failing
    /// with a bare alert.
    case pairing

    /// The names in order of preference.
    var protocols: [String] { self == .trusted ? [TLSContext.alpn] : [PairingProtocol.alpn, TLSContext.alpn] }

    /// The same list in ALPN wire format: a length byte before each name.
    var wire: [UInt8] { protocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } }
  }

  public static let alpn = "memo-peer/1"

  // Configured once in init, then only read (SSL_new), which OpenSSL allows concurrently.
  let context: OpaquePointer
  public let role: Role
  public let identity: DeviceIdentity
  public let purpose: Purpose

  public init(identity: DeviceIdentity, role: Role, purpose: Purpose = .trusted) throws(TransportError) {
    // A peer that vanishes mid-write must cost an error on that connection, not the
    // process: OpenSSL writes with write(2), which raises SIGPIPE on a closed socket.
    signal(SIGPIPE, SIG_IGN)
    guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
      throw .openSSL(.library, "SSL_CTX_new")
    }
    self.context = context
    self.role = role
    self.identity = identity
    self.purpose = purpose
    guard memo_ssl_ctx_tls13_without_resumption(context) == 1,
      SSL_CTX_use_certificate(context, identity.certificate) == 1,
      identity.signingKey.withEVPKey({ SSL_CTX_use_PrivateKey(context, $0) }) == 1,
      SSL_CTX_check_private_key(context) == 1
    else { throw .openSSL(.library, "configuring the TLS context") }
    // The chain check is replaced by the pinned-key check; the callback finds the
    // connection through the SSL object's app data.
    SSL_CTX_set_cert_verify_callback(context, verifyPeerCertificate, nil)
    switch role {
    case .server:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT | SSL_VERIFY_CLIENT_ONCE, nil)
      // The callback's argument says which list to accept: a tag, not a pointer to memory.
      SSL_CTX_set_alpn_select_cb(context, selectALPN, UnsafeMutableRawPointer(bitPattern: purpose == .pairing ? 2 : 1))
    case .client:
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
      let wire = purpose.wire
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

/// Server side of ALPN: the first of this context's protocols (in its order of preference)
/// that the client offered, or a fatal alert.
private func selectALPN(
  _: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
  _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ purposeTag: UnsafeMutableRawPointer?
) -> Int32 {
  guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
  let purpose: TLSContext.Purpose = Int(bitPattern: purposeTag) == 2 ? .pairing : .trusted
  for wanted in purpose.protocols.map({ Array($0.utf8) }) {
    var index = 0
    while index < Int(offeredLength) {
      let length = Int(offered[index])
      let end = index + 1 + length
      guard end <= Int(offeredLength) else { break }
      if length == wanted.count && (0..<length).allSatisfy({ offered[index + 1 + $0] == wanted[$0] }) {
        out.pointee = offered + index + 1
        outLength.pointee = UInt8(length)
        return SSL_TLSEXT_ERR_OK
      }
      index = end
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL
}
