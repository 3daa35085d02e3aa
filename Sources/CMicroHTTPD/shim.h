#ifndef MEMO_PEER_CMICROHTTPD_SHIM_H
#define MEMO_PEER_CMICROHTTPD_SHIM_H
// GNU libmicrohttpd (Debian 12: 0.9.75), the HTTP server of `memo-peer web`. Its start
// function is variadic, which Swift cannot call: the inline wrapper below takes fixed
// arguments instead.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <unistd.h>

/// Leaves every escape in the path and query as it arrived: memo-peer decodes them itself,
/// strictly (libmicrohttpd's own decoding turns `%00` into the end of the string, so
/// `/api/memos%00x` would be served as `/api/memos`).
static inline size_t memo_mhd_keep_escapes(void *cls, struct MHD_Connection *connection, char *text) {
  (void)cls;
  (void)connection;
  return strlen(text);
}

/// Starts a daemon with its own threads on an already listening socket (bound by the
/// caller), with the limits every connection is held to. `notify` hears of each connection
/// as it starts and ends (memo-peer's own admission and deadlines, ConnectionGate).
static inline struct MHD_Daemon *memo_mhd_start(int listening_socket, unsigned int thread_count,
                                                unsigned int connection_limit, unsigned int timeout_seconds,
                                                size_t memory_limit, MHD_AccessHandlerCallback handler,
                                                void *handler_cls, MHD_RequestCompletedCallback completed,
                                                void *completed_cls, MHD_NotifyConnectionCallback notify,
                                                void *notify_cls) {
  struct MHD_OptionItem options[] = {
      {MHD_OPTION_LISTEN_SOCKET, listening_socket, NULL},
      {MHD_OPTION_THREAD_POOL_SIZE, thread_count, NULL},
      {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL},
      // 0, not 1: at 1 libmicrohttpd itself refuses a request without Host (or with a space
      // in its path) with an answer that has none of memo-peer's headers (and, in 0.9.75, its
      // status line twice); at 0 such requests reach WebFrontDoor, which refuses them with
      // its own answer (docs/WEB.md).
      {MHD_OPTION_STRICT_FOR_CLIENT, 0, NULL},
      {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_cls},
      {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)memo_mhd_keep_escapes, NULL},
      {MHD_OPTION_END, 0, NULL},
  };
  // MHD_ALLOW_SUSPEND_RESUME: the page's status call waits for a change without holding one
  // of the threads (`GET /api/status?wait=`, MicroHTTPDaemon).
  return MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, handler,
                          handler_cls, MHD_OPTION_ARRAY,
                          options, MHD_OPTION_END);
}

/// The connection's socket (MHD_get_connection_info is variadic).
static inline int memo_mhd_connection_fd(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info == NULL ? -1 : info->connect_fd;
}

/// The connection's socket context, as the notify callback set it.
static inline void *memo_mhd_socket_context(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == NULL ? NULL : info->socket_context;
}

/// Frees a response body after wiping it: bodies carry memo text, which must not linger in
/// freed heap memory.
static inline void memo_mhd_wipe_and_free(void *buffer) {
  if (buffer == NULL) return;
  explicit_bzero(buffer, malloc_usable_size(buffer));
  free(buffer);
}

/// A response owning a copy of `bytes`, wiped when libmicrohttpd is done with it.
static inline struct MHD_Response *memo_mhd_response_copying(const void *bytes, size_t size) {
  void *copy = malloc(size == 0 ? 1 : size);
  if (copy == NULL) return NULL;
  if (size > 0) memcpy(copy, bytes, size);
  struct MHD_Response *response =
      MHD_create_response_from_buffer_with_free_callback_cls(size, copy, memo_mhd_wipe_and_free, copy);
  if (response == NULL) memo_mhd_wipe_and_free(copy);
  return response;
}
/// The user id of the local socket at the other end of the accepted loopback TCP
/// connection `fd`, as the kernel records it (NETLINK_SOCK_DIAG, what `ss -e` shows), or -1
/// when it cannot be told (the client already closed, netlink refused). Needs no privilege.
static inline long long memo_peer_socket_uid(int fd) {
  struct sockaddr_storage here, there;
  socklen_t here_length = sizeof here, there_length = sizeof there;
  if (getsockname(fd, (struct sockaddr *)&here, &here_length) != 0) return -1;
  if (getpeername(fd, (struct sockaddr *)&there, &there_length) != 0) return -1;
  if (here.ss_family != there.ss_family || (here.ss_family != AF_INET && here.ss_family != AF_INET6)) return -1;
  struct {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
  } message;
  memset(&message, 0, sizeof message);
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = (unsigned char)here.ss_family;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0U;
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  // The client's socket: its source is our peer, its destination is us.
  if (here.ss_family == AF_INET) {
    const struct sockaddr_in *local = (const struct sockaddr_in *)&here, *remote = (const struct sockaddr_in *)&there;
    message.request.id.idiag_sport = remote->sin_port;
    message.request.id.idiag_dport = local->sin_port;
    memcpy(message.request.id.idiag_src, &remote->sin_addr, 4);
    memcpy(message.request.id.idiag_dst, &local->sin_addr, 4);
  } else {
    const struct sockaddr_in6 *local = (const struct sockaddr_in6 *)&here,
                              *remote = (const struct sockaddr_in6 *)&there;
    message.request.id.idiag_sport = remote->sin6_port;
    message.request.id.idiag_dport = local->sin6_port;
    memcpy(message.request.id.idiag_src, &remote->sin6_addr, 16);
    memcpy(message.request.id.idiag_dst, &local->sin6_addr, 16);
  }
  int diag = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (diag < 0) return -1;
  struct timeval wait = {0, 200000};
  setsockopt(diag, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  struct sockaddr_nl kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.nl_family = AF_NETLINK;
  long long uid = -1;
  if (sendto(diag, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) == (ssize_t)sizeof message) {
    union {
      struct nlmsghdr header;
      char bytes[1024];
    } answer;
    ssize_t count;
    do { count = recv(diag, &answer, sizeof answer, 0); } while (count < 0 && errno == EINTR);
    if (count >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) && answer.header.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      const struct inet_diag_msg *found = (const struct inet_diag_msg *)NLMSG_DATA(&answer.header);
      if (found->id.idiag_sport == message.request.id.idiag_sport &&
          found->id.idiag_dport == message.request.id.idiag_dport)
        uid = found->idiag_uid;
    }
  }
  close(diag);
  return uid;
}

/// Ends a connection from outside libmicrohttpd: its next read sees the end, and
/// libmicrohttpd closes it. The descriptor stays libmicrohttpd's.
static inline void memo_shutdown_socket(int fd) { shutdown(fd, SHUT_RDWR); }
/// The numeric address of the other end of `fd` (`127.0.0.1`, `::1`), or 0 bytes on error.
static inline size_t memo_peer_address(int fd, char *text, size_t size) {
  struct sockaddr_storage there;
  socklen_t length = sizeof there;
  if (getpeername(fd, (struct sockaddr *)&there, &length) != 0) return 0;
  const void *address = there.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&there)->sin6_addr
                                                    : (const void *)&((struct sockaddr_in *)&there)->sin_addr;
  if (inet_ntop(there.ss_family, address, text, (socklen_t)size) == NULL) return 0;
  return strlen(text);
}
#endif
