#include "memo_keyring.h"

#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const key_type = "user";

int32_t memo_keyring_add_process_key(const char *description, const void *payload, size_t length) {
  return (int32_t)syscall(SYS_add_key, key_type, description, payload, length, KEY_SPEC_PROCESS_KEYRING);
}

int memo_keyring_update(int32_t key, const void *payload, size_t length) {
  return (int)syscall(SYS_keyctl, KEYCTL_UPDATE, key, payload, length);
}

int memo_keyring_link_to_user(int32_t key) {
  return (int)syscall(SYS_keyctl, KEYCTL_LINK, key, KEY_SPEC_USER_KEYRING);
}

int memo_keyring_link_to_session(int32_t key) {
  return (int)syscall(SYS_keyctl, KEYCTL_LINK, key, KEY_SPEC_SESSION_KEYRING);
}

int memo_keyring_unlink_from_process(int32_t key) {
  return (int)syscall(SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_PROCESS_KEYRING);
}

int32_t memo_keyring_search_session(const char *description) {
  return (int32_t)syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, key_type, description, 0);
}

long memo_keyring_read(int32_t key, void *buffer, size_t length) {
  return syscall(SYS_keyctl, KEYCTL_READ, key, buffer, length);
}

int memo_keyring_set_timeout(int32_t key, unsigned int seconds) {
  return (int)syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, key, seconds);
}

int memo_keyring_invalidate(int32_t key) {
  return (int)syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
}
