#ifndef MEMO_PEER_KEYRING_H
#define MEMO_PEER_KEYRING_H
#include <stddef.h>
#include <stdint.h>

// The kernel's key retention service (keyrings(7)), through syscall(2). Debian's
// libkeyutils wraps the same three system calls; calling them directly keeps the build free
// of another -dev package for seven one-line functions. Keys are of type "user".
// Every function returns -1 and sets errno on failure.

/// Adds (or updates) a key in the caller's session keyring (a process without one gets a
/// new one of its own), so the caller possesses it; returns its serial number.
int32_t memo_keyring_add_session_key(const char *description, const void *payload, size_t length);

/// Links a key the caller possesses into its user keyring (@u), replacing any key of the
/// same description there. The user keyring outlives the process and the session.
int memo_keyring_link_to_user(int32_t key);

/// Finds a key by description, searching from the caller's session keyring, so that a
/// session which cannot reach the user keyring (a new session: a simulated reboot) does not
/// find it. Returns its serial number.
int32_t memo_keyring_search_session(const char *description);

/// Copies up to `length` bytes of the key's payload into `buffer`; returns the full payload
/// length (which may exceed `length`).
long memo_keyring_read(int32_t key, void *buffer, size_t length);

/// Sets the key to expire `seconds` from now; 0 removes any expiry.
int memo_keyring_set_timeout(int32_t key, unsigned int seconds);

/// Removes the key from every keyring at once.
int memo_keyring_invalidate(int32_t key);

#endif
