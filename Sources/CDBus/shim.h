#ifndef MEMO_PEER_CDBUS_SHIM_H
#define MEMO_PEER_CDBUS_SHIM_H
// libdbus, to speak Avahi's own D-Bus API for the browse pipeline (see
// Sources/MemoDiscovery/Avahi/AvahiSession.swift for why not avahi-client or dns_sd).
#include <dbus/dbus.h>
#endif
