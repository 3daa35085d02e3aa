// The package's dependency probe (scripts/deb.sh): memo-peer loads libdbus, Avahi's dns_sd
// and avahi-client, libsystemd and libmicrohttpd only in the commands that use them
// (Sources/CLazyLibraries), so its binary has no NEEDED entry for them and dpkg-shlibdeps
// would leave them out of Depends. This program is linked against them and takes the
// address of every function memo-peer resolves in them (the same lists the stubs are made
// from, Sources/CLazyLibraries/functions.h), so dpkg-shlibdeps run on it gives their
// packages, at the versions those functions need. It is built and read by deb.sh, never
// installed or run.
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <avahi-client/client.h>
#include <avahi-common/error.h>
#include <avahi-common/simple-watch.h>
#include <avahi-compat-libdns_sd/dns_sd.h>
#include <dbus/dbus.h>
#include <microhttpd.h>
#include <systemd/sd-daemon.h>

#include "functions.h"

#define FUNCTION(type, name, parameters, arguments) (void *)&name,
#define VOID(name, parameters, arguments) (void *)&name,
#define SYMBOL(name) (void *)&name,

void *const memo_lazy_depends[] = {
    MEMO_LAZY_DBUS_FUNCTIONS(FUNCTION, VOID, SYMBOL) MEMO_LAZY_DNS_SD_FUNCTIONS(FUNCTION, VOID, SYMBOL)
        MEMO_LAZY_AVAHI_CLIENT_FUNCTIONS(FUNCTION, VOID, SYMBOL) MEMO_LAZY_SYSTEMD_FUNCTIONS(FUNCTION, VOID, SYMBOL)
            MEMO_LAZY_MICROHTTPD_FUNCTIONS(FUNCTION, VOID, SYMBOL)};

int main(void) { return memo_lazy_depends[0] == 0; }
