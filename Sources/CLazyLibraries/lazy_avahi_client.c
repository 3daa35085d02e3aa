// avahi-client (and avahi-common, which it loads), on first use (memo_lazy.h); the stubs
// are hidden inside the binary.
#include <stdint.h>
#pragma GCC visibility push(hidden)
#include <avahi-client/client.h>
#include <avahi-common/error.h>
#include <avahi-common/simple-watch.h>

#include "functions.h"
#include "lazy.h"

#define MEMO_LAZY_THIS MEMO_LAZY_AVAHI_CLIENT
MEMO_LAZY_DEFINE(MEMO_LAZY_AVAHI_CLIENT_FUNCTIONS, memo_lazy_avahi_client_table, "libavahi-client.so.3")
#pragma GCC visibility pop
