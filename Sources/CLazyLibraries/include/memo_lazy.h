#ifndef MEMO_PEER_LAZY_H
#define MEMO_PEER_LAZY_H
#include <stddef.h>

/// The libraries memo-peer loads only in the commands that use them, rather than at every
/// start (`--version` and `list` need none of them, and mapping and relocating them and
/// what they pull in — GnuTLS behind libmicrohttpd, gcrypt and the compressors behind
/// libsystemd — was most of every command's start-up). The functions memo-peer calls in
/// them are defined here under their own names (hidden: nothing outside the binary sees
/// them), so the code calls them as it always did; the first call loads the library.
/// A command that needs one calls `memo_lazy_load` first, to turn a missing library into
/// a clear error instead of an abort.
typedef enum {
  /// libdbus-1.so.3: avahi-daemon's D-Bus API, desktop notifications (MemoDBus).
  MEMO_LAZY_DBUS = 0,
  /// libdns_sd.so.1, Avahi's compatibility library: advertising (`serve`).
  MEMO_LAZY_DNS_SD = 1,
  /// libavahi-client.so.3 (and libavahi-common.so.3): the doctor's version probe.
  MEMO_LAZY_AVAHI_CLIENT = 2,
  /// libsystemd.so.0: sd_notify for Type=notify units (`serve`).
  MEMO_LAZY_SYSTEMD = 3,
  /// libmicrohttpd.so.12: the web page's server (`web`, `serve --web`).
  MEMO_LAZY_MICROHTTPD = 4,
} memo_lazy_library;

/// Loads `library` and resolves every function memo-peer calls in it, once (later calls
/// return at once). 1 on success; 0 with the reason (dlopen's or dlsym's) in `error`.
int memo_lazy_load(memo_lazy_library library, char *error, size_t error_size);

/// The file name the library is loaded by (`libmicrohttpd.so.12`).
const char *memo_lazy_soname(memo_lazy_library library);

#endif
