#ifndef MEMO_PEER_COPENSSL_SHIM_H
#define MEMO_PEER_COPENSSL_SHIM_H
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif
