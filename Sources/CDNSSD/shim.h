#ifndef MEMO_PEER_CDNSSD_SHIM_H
#define MEMO_PEER_CDNSSD_SHIM_H
// Included by its path under /usr/include rather than through pkg-config's -I flag:
// avahi-compat-libdns_sd.pc also adds -D_REENTRANT, which SwiftPM rejects with a warning.
#include <avahi-compat-libdns_sd/dns_sd.h>
#endif
