#ifndef MEMO_PEER_AVAHI_PROBE_H
#define MEMO_PEER_AVAHI_PROBE_H
#include <stddef.h>

/// Asks avahi-daemon for its version over D-Bus, without any network traffic: the doctor's
/// way to tell "daemon unreachable" from "nobody answers on the network". Returns 1 and
/// fills `version` when reachable; 0 and fills `error` with Avahi's reason otherwise.
int memo_avahi_probe(char *version, size_t version_len, char *error, size_t error_len);

#endif
