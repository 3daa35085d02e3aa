#include "memo_openssl_shims.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

int memo_kdf_scrypt(const unsigned char *passphrase, size_t passphrase_len,
                    const unsigned char *salt, size_t salt_len,
                    uint64_t n, uint32_t r, uint32_t p, uint64_t max_memory,
                    unsigned char *out, size_t out_len) {
  static const unsigned char empty[1] = {0};
  EVP_KDF *kdf = EVP_KDF_fetch(NULL, "SCRYPT", NULL);
  if (kdf == NULL) return 0;
  EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (ctx == NULL) return 0;
  OSSL_PARAM params[7];
  OSSL_PARAM *q = params;
  *q++ = OSSL_PARAM_construct_octet_string(
      OSSL_KDF_PARAM_PASSWORD, (void *)(passphrase ? passphrase : empty), passphrase_len);
  *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
  *q++ = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n);
  *q++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r);
  *q++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p);
  *q++ = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &max_memory);
  *q = OSSL_PARAM_construct_end();
  int ok = EVP_KDF_derive(ctx, out, out_len, params);
  EVP_KDF_CTX_free(ctx);
  return ok == 1 ? 1 : 0;
}

int memo_kdf_hkdf_sha256(const unsigned char *key, size_t key_len,
                         const unsigned char *salt, size_t salt_len,
                         const unsigned char *info, size_t info_len,
                         unsigned char *out, size_t out_len) {
  static const unsigned char empty[1] = {0};
  static char digest[] = "SHA256";
  EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
  if (kdf == NULL) return 0;
  EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (ctx == NULL) return 0;
  OSSL_PARAM params[5];
  OSSL_PARAM *q = params;
  *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
  *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)(key ? key : empty), key_len);
  *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)(salt ? salt : empty), salt_len);
  *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)(info ? info : empty), info_len);
  *q = OSSL_PARAM_construct_end();
  int ok = EVP_KDF_derive(ctx, out, out_len, params);
  EVP_KDF_CTX_free(ctx);
  return ok == 1 ? 1 : 0;
}

int memo_ssl_ctx_tls13_without_resumption(SSL_CTX *ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) return 0;
  if (SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) return 0;
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_num_tickets(ctx, 0) != 1) return 0;
  return 1;
}

int memo_ssl_error_is_unexpected_eof(void) {
    unsigned long error = ERR_peek_error();
    return error != 0 && ERR_GET_LIB(error) == ERR_LIB_SSL && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* OpenSSL frees its global state from an atexit handler. A detached thread still in a TLS
   read when the process exits (a connection of `serve`, a test's server) then touches
   freed memory and the exit becomes a crash (SIGSEGV in memcpy, seen in CI). The process
   ends anyway and the kernel reclaims everything, so the clean-up is skipped: this runs
   when the binary is loaded, before any other OpenSSL call can register it. */
__attribute__((constructor)) static void memo_openssl_without_atexit_cleanup(void) {
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
  OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL);
}
