// libmicrohttpd, loaded on first use (memo_lazy.h); the stubs are hidden inside the binary.
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#pragma GCC visibility push(hidden)
#include <microhttpd.h>

#include "functions.h"
#include "lazy.h"

#define MEMO_LAZY_THIS MEMO_LAZY_MICROHTTPD
MEMO_LAZY_DEFINE(MEMO_LAZY_MICROHTTPD_FUNCTIONS, memo_lazy_microhttpd_table, "libmicrohttpd.so.12")

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...) {
  memo_lazy_need(MEMO_LAZY_THIS);
  va_list options;
  va_start(options, dh_cls);
  struct MHD_Daemon *daemon = MEMO_LAZY_POINTER(MHD_start_daemon_va)(flags, port, apc, apc_cls, dh, dh_cls, options);
  va_end(options);
  return daemon;
}

// memo-peer asks only for what takes no further argument (the socket, its context).
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type, ...) {
  memo_lazy_need(MEMO_LAZY_THIS);
  return MEMO_LAZY_POINTER(MHD_get_connection_info)(connection, info_type);
}
#pragma GCC visibility pop
