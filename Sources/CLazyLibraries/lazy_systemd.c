// libsystemd's sd_notify and sd_watchdog_enabled, loaded on first use (memo_lazy.h); the
// stubs are hidden inside the binary.
#include <stdint.h>
#pragma GCC visibility push(hidden)
#include <systemd/sd-daemon.h>

#include "functions.h"
#include "lazy.h"

#define MEMO_LAZY_THIS MEMO_LAZY_SYSTEMD
MEMO_LAZY_DEFINE(MEMO_LAZY_SYSTEMD_FUNCTIONS, memo_lazy_systemd_table, "libsystemd.so.0")
#pragma GCC visibility pop
