#ifndef MEMO_PEER_CSYSTEMD_SHIM_H
#define MEMO_PEER_CSYSTEMD_SHIM_H
// libsystemd's sd_notify and sd_watchdog_enabled: the standard client of the service
// manager's notification socket (Type=notify units), never a hand-written datagram.
#include <systemd/sd-daemon.h>
#endif
