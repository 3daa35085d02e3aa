// libdbus's functions, loaded on first use (memo_lazy.h). DBUS_EXPORT is emptied so that
// the stubs below, which carry libdbus's names, stay hidden inside the binary: a library
// loaded later (libavahi-client) must reach libdbus's own functions, never these.
#include <stdint.h>
#define DBUS_EXPORT
#pragma GCC visibility push(hidden)
#include <dbus/dbus.h>

#include "functions.h"
#include "lazy.h"

#define MEMO_LAZY_THIS MEMO_LAZY_DBUS
MEMO_LAZY_DEFINE(MEMO_LAZY_DBUS_FUNCTIONS, memo_lazy_dbus_table, "libdbus-1.so.3")
#pragma GCC visibility pop
