// Avahi's dns_sd compatibility library, loaded on first use (memo_lazy.h); the stubs are
// hidden inside the binary.
#include <stdint.h>
#pragma GCC visibility push(hidden)
#include <avahi-compat-libdns_sd/dns_sd.h>

#include "functions.h"
#include "lazy.h"

#define MEMO_LAZY_THIS MEMO_LAZY_DNS_SD
MEMO_LAZY_DEFINE(MEMO_LAZY_DNS_SD_FUNCTIONS, memo_lazy_dns_sd_table, "libdns_sd.so.1")
#pragma GCC visibility pop
