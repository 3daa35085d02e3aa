#ifndef MEMO_PEER_OPENSSL_SHIMS_H
#define MEMO_PEER_OPENSSL_SHIMS_H
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

/// scrypt through OpenSSL's EVP_KDF API. OSSL_PARAM arrays keep pointers to their key
/// names and values, which is awkward and unsafe to build from Swift, so they are built
/// here. Returns 1 on success, 0 on failure (the OpenSSL error queue says why).
int memo_kdf_scrypt(const unsigned char *passphrase, size_t passphrase_len,
                    const unsigned char *salt, size_t salt_len,
                    uint64_t n, uint32_t r, uint32_t p, uint64_t max_memory,
                    unsigned char *out, size_t out_len);

/// HKDF (RFC 5869) with SHA-256 through OpenSSL's EVP_KDF API, extract and expand in one
/// call. `salt` and `info` may be empty. Returns 1 on success, 0 on failure.
int memo_kdf_hkdf_sha256(const unsigned char *key, size_t key_len,
                         const unsigned char *salt, size_t salt_len,
                         const unsigned char *info, size_t info_len,
                         unsigned char *out, size_t out_len);

/// Restricts a context to TLS 1.3 and turns off everything that would keep session state:
/// session tickets (none issued, none accepted) and the session cache. These are macros
/// over SSL_CTX_ctrl and 64-bit option bits, which Swift cannot import. Returns 1 on success.
int memo_ssl_ctx_tls13_without_resumption(SSL_CTX *ctx);

/// Whether the oldest error in this thread's OpenSSL queue says the peer closed the TCP
/// connection without TLS close_notify (SSL_R_UNEXPECTED_EOF_WHILE_READING; ERR_GET_LIB and
/// ERR_GET_REASON are macros). Leaves the queue as it is. Returns 1 or 0.
int memo_ssl_error_is_unexpected_eof(void);

#endif
