#ifndef MEMO_PEER_CDBUS_SHIM_H
#define MEMO_PEER_CDBUS_SHIM_H
// libdbus, used only by MemoDBus: the system bus for avahi-daemon's own D-Bus API (see
// Sources/MemoDiscovery/Avahi/AvahiSession.swift for why not avahi-client or dns_sd), the
// session bus for desktop notifications (Sources/MemoNode/SessionBusNotifications.swift).
#include <dbus/dbus.h>
#endif
