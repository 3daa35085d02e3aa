#ifndef MEMO_PEER_CSODIUM_SHIM_H
#define MEMO_PEER_CSODIUM_SHIM_H
// libsodium (Debian's libsodium-dev): sealed boxes (crypto_box_seal) to a device's public
// key, and the Ed25519 -> X25519 key conversions they need. Only MemoCrypto imports it.
#include <sodium.h>
#endif
