#ifndef MEMO_PEER_OPENSSL_SHIMS_H
#define MEMO_PEER_OPENSSL_SHIMS_H
#include <stddef.h>
#include <stdint.h>

/// scrypt through OpenSSL's EVP_KDF API. OSSL_PARAM arrays keep pointers to their key
/// names and values, which is awkward and unsafe to build from Swift, so they are built
/// here. Returns 1 on success, 0 on failure (the OpenSSL error queue says why).
int memo_kdf_scrypt(const unsigned char *passphrase, size_t passphrase_len,
                    const unsigned char *salt, size_t salt_len,
                    uint64_t n, uint32_t r, uint32_t p, uint64_t max_memory,
                    unsigned char *out, size_t out_len);

#endif
