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

/// Starts a daemon with its own threads on an already listening socket (bound by the
/// caller), with the limits every connection is held to.
static inline struct MHD_Daemon *memo_mhd_start(int listening_socket, unsigned int thread_count,
                                                unsigned int connection_limit, unsigned int timeout_seconds,
                                                size_t memory_limit, MHD_AccessHandlerCallback handler,
                                                void *handler_cls, MHD_RequestCompletedCallback completed,
                                                void *completed_cls) {
  struct MHD_OptionItem options[] = {
      {MHD_OPTION_LISTEN_SOCKET, listening_socket, NULL},
      {MHD_OPTION_THREAD_POOL_SIZE, thread_count, NULL},
      {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL},
      {MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL},
      {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
      {MHD_OPTION_END, 0, NULL},
  };
  return MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY,
                          options, MHD_OPTION_END);
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
#endif
