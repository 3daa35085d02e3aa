#ifndef MEMO_PEER_KEYRING_H
#define MEMO_PEER_KEYRING_H
#include <stddef.h>
#include <stdint.h>

// The kernel's key retention service (keyrings(7)), through syscall(2). Debian's
// libkeyutils wraps the same two system calls; calling them directly keeps the build free
// of another -dev package for a handful of one-line functions. Keys are of type "user".
// Every function returns -1 and sets errno on failure.

/// Adds a key to the calling process's own keyring (made on demand, gone when the process
/// ends), so the caller possesses it while it links it elsewhere; returns its serial number.
int32_t memo_keyring_add_process_key(const char *description, const void *payload, size_t length);

/// Replaces the payload of a key the caller possesses.
int memo_keyring_update(int32_t key, const void *payload, size_t length);

/// Links a key the caller possesses into its user keyring (@u), replacing any key of the
/// same description there. The user keyring outlives the process and the session.
int memo_keyring_link_to_user(int32_t key);

/// Links a key into the caller's session keyring (for a session that does not reach @u).
int memo_keyring_link_to_session(int32_t key);

/// Removes the key from the calling process's own keyring.
int memo_keyring_unlink_from_process(int32_t key);

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
