#ifndef MEMO_PEER_LAZY_FUNCTIONS_H
#define MEMO_PEER_LAZY_FUNCTIONS_H
// Every function memo-peer calls in a library it loads lazily, by library, as X-macros:
// F(return type, name, (parameters), (arguments)), V(name, (parameters), (arguments)) for
// one that returns nothing, S(name) for one whose stub is written by hand. The stubs are
// made from these lists (lazy_*.c), and so is the package's dependency probe
// (scripts/lazy-depends.c): what is called is what Depends covers.

#define MEMO_LAZY_DBUS_FUNCTIONS(F, V, S)                                                                      \
  V(dbus_bus_add_match, (DBusConnection * connection, const char *rule, DBusError *error),                    \
    (connection, rule, error))                                                                               \
  F(DBusConnection *, dbus_bus_get_private, (DBusBusType type, DBusError * error), (type, error))             \
  F(dbus_bool_t, dbus_bus_register, (DBusConnection * connection, DBusError * error), (connection, error))     \
  V(dbus_connection_close, (DBusConnection * connection), (connection))                                      \
  V(dbus_connection_flush, (DBusConnection * connection), (connection))                                      \
  F(dbus_bool_t, dbus_connection_get_is_connected, (DBusConnection * connection), (connection))               \
  F(dbus_bool_t, dbus_connection_get_unix_fd, (DBusConnection * connection, int *fd), (connection, fd))       \
  F(DBusConnection *, dbus_connection_open_private, (const char *address, DBusError *error), (address, error)) \
  F(DBusMessage *, dbus_connection_pop_message, (DBusConnection * connection), (connection))                  \
  F(dbus_bool_t, dbus_connection_read_write, (DBusConnection * connection, int timeout_milliseconds),         \
    (connection, timeout_milliseconds))                                                                      \
  F(dbus_bool_t, dbus_connection_send,                                                                        \
    (DBusConnection * connection, DBusMessage * message, dbus_uint32_t * client_serial),                      \
    (connection, message, client_serial))                                                                    \
  F(DBusMessage *, dbus_connection_send_with_reply_and_block,                                                 \
    (DBusConnection * connection, DBusMessage * message, int timeout_milliseconds, DBusError *error),          \
    (connection, message, timeout_milliseconds, error))                                                      \
  V(dbus_connection_set_exit_on_disconnect, (DBusConnection * connection, dbus_bool_t exit_on_disconnect),    \
    (connection, exit_on_disconnect))                                                                        \
  V(dbus_connection_unref, (DBusConnection * connection), (connection))                                      \
  V(dbus_error_free, (DBusError * error), (error))                                                           \
  V(dbus_error_init, (DBusError * error), (error))                                                           \
  F(dbus_bool_t, dbus_error_is_set, (const DBusError *error), (error))                                        \
  F(dbus_bool_t, dbus_message_get_auto_start, (DBusMessage * message), (message))                             \
  F(const char *, dbus_message_get_error_name, (DBusMessage * message), (message))                            \
  F(const char *, dbus_message_get_interface, (DBusMessage * message), (message))                             \
  F(const char *, dbus_message_get_member, (DBusMessage * message), (message))                                \
  F(const char *, dbus_message_get_path, (DBusMessage * message), (message))                                  \
  F(dbus_uint32_t, dbus_message_get_reply_serial, (DBusMessage * message), (message))                         \
  F(const char *, dbus_message_get_signature, (DBusMessage * message), (message))                             \
  F(int, dbus_message_get_type, (DBusMessage * message), (message))                                           \
  V(dbus_message_iter_abandon_container, (DBusMessageIter * iter, DBusMessageIter * sub), (iter, sub))        \
  F(dbus_bool_t, dbus_message_iter_append_basic, (DBusMessageIter * iter, int type, const void *value),       \
    (iter, type, value))                                                                                     \
  F(dbus_bool_t, dbus_message_iter_close_container, (DBusMessageIter * iter, DBusMessageIter * sub),          \
    (iter, sub))                                                                                             \
  F(int, dbus_message_iter_get_arg_type, (DBusMessageIter * iter), (iter))                                    \
  V(dbus_message_iter_get_basic, (DBusMessageIter * iter, void *value), (iter, value))                        \
  F(int, dbus_message_iter_get_element_type, (DBusMessageIter * iter), (iter))                                \
  V(dbus_message_iter_get_fixed_array, (DBusMessageIter * iter, void *value, int *n_elements),                \
    (iter, value, n_elements))                                                                               \
  F(dbus_bool_t, dbus_message_iter_init, (DBusMessage * message, DBusMessageIter * iter), (message, iter))    \
  V(dbus_message_iter_init_append, (DBusMessage * message, DBusMessageIter * iter), (message, iter))          \
  F(dbus_bool_t, dbus_message_iter_next, (DBusMessageIter * iter), (iter))                                    \
  F(dbus_bool_t, dbus_message_iter_open_container,                                                            \
    (DBusMessageIter * iter, int type, const char *contained_signature, DBusMessageIter *sub),                \
    (iter, type, contained_signature, sub))                                                                  \
  V(dbus_message_iter_recurse, (DBusMessageIter * iter, DBusMessageIter * sub), (iter, sub))                  \
  F(DBusMessage *, dbus_message_new_method_call,                                                              \
    (const char *bus_name, const char *path, const char *iface, const char *method),                          \
    (bus_name, path, iface, method))                                                                         \
  V(dbus_message_set_auto_start, (DBusMessage * message, dbus_bool_t auto_start), (message, auto_start))      \
  V(dbus_message_set_no_reply, (DBusMessage * message, dbus_bool_t no_reply), (message, no_reply))            \
  V(dbus_message_unref, (DBusMessage * message), (message))

#define MEMO_LAZY_DNS_SD_FUNCTIONS(F, V, S)                                                                   \
  F(DNSServiceErrorType, DNSServiceProcessResult, (DNSServiceRef sdRef), (sdRef))                              \
  V(DNSServiceRefDeallocate, (DNSServiceRef sdRef), (sdRef))                                                   \
  F(int, DNSServiceRefSockFD, (DNSServiceRef sdRef), (sdRef))                                                  \
  F(DNSServiceErrorType, DNSServiceRegister,                                                                   \
    (DNSServiceRef * sdRef, DNSServiceFlags flags, uint32_t interfaceIndex, const char *name,                 \
     const char *regtype, const char *domain, const char *host, uint16_t port, uint16_t txtLen,               \
     const void *txtRecord, DNSServiceRegisterReply callBack, void *context),                                 \
    (sdRef, flags, interfaceIndex, name, regtype, domain, host, port, txtLen, txtRecord, callBack, context))  \
  V(TXTRecordCreate, (TXTRecordRef * txtRecord, uint16_t bufferLen, void *buffer), (txtRecord, bufferLen, buffer)) \
  V(TXTRecordDeallocate, (TXTRecordRef * txtRecord), (txtRecord))                                              \
  F(const void *, TXTRecordGetBytesPtr, (const TXTRecordRef *txtRecord), (txtRecord))                         \
  F(uint16_t, TXTRecordGetCount, (uint16_t txtLen, const void *txtRecord), (txtLen, txtRecord))               \
  F(DNSServiceErrorType, TXTRecordGetItemAtIndex,                                                              \
    (uint16_t txtLen, const void *txtRecord, uint16_t index, uint16_t keyBufLen, char *key, uint8_t *valueLen, \
     const void **value),                                                                                     \
    (txtLen, txtRecord, index, keyBufLen, key, valueLen, value))                                              \
  F(uint16_t, TXTRecordGetLength, (const TXTRecordRef *txtRecord), (txtRecord))                               \
  F(DNSServiceErrorType, TXTRecordSetValue,                                                                    \
    (TXTRecordRef * txtRecord, const char *key, uint8_t valueSize, const void *value),                        \
    (txtRecord, key, valueSize, value))

#define MEMO_LAZY_AVAHI_CLIENT_FUNCTIONS(F, V, S)                                                             \
  V(avahi_client_free, (AvahiClient * client), (client))                                                      \
  F(const char *, avahi_client_get_version_string, (AvahiClient * client), (client))                          \
  F(AvahiClient *, avahi_client_new,                                                                          \
    (const AvahiPoll *poll_api, AvahiClientFlags flags, AvahiClientCallback callback, void *userdata,         \
     int *error),                                                                                             \
    (poll_api, flags, callback, userdata, error))                                                            \
  V(avahi_simple_poll_free, (AvahiSimplePoll * s), (s))                                                       \
  F(const AvahiPoll *, avahi_simple_poll_get, (AvahiSimplePoll * s), (s))                                     \
  F(AvahiSimplePoll *, avahi_simple_poll_new, (void), ())                                                     \
  F(const char *, avahi_strerror, (int error), (error))

#define MEMO_LAZY_SYSTEMD_FUNCTIONS(F, V, S)                                                                  \
  F(int, sd_notify, (int unset_environment, const char *state), (unset_environment, state))                   \
  F(int, sd_watchdog_enabled, (int unset_environment, uint64_t *usec), (unset_environment, usec))

// MHD_start_daemon and MHD_get_connection_info are variadic: their stubs (lazy_microhttpd.c)
// call MHD_start_daemon_va and MHD_get_connection_info itself.
#define MEMO_LAZY_MICROHTTPD_FUNCTIONS(F, V, S)                                                               \
  F(enum MHD_Result, MHD_add_response_header,                                                                 \
    (struct MHD_Response * response, const char *header, const char *content), (response, header, content))   \
  F(struct MHD_Response *, MHD_create_response_from_buffer_with_free_callback_cls,                             \
    (size_t size, void *buffer, MHD_ContentReaderFreeCallback crfc, void *crfc_cls),                          \
    (size, buffer, crfc, crfc_cls))                                                                          \
  V(MHD_destroy_response, (struct MHD_Response * response), (response))                                       \
  F(int, MHD_get_connection_values,                                                                           \
    (struct MHD_Connection * connection, enum MHD_ValueKind kind, MHD_KeyValueIterator iterator,              \
     void *iterator_cls),                                                                                     \
    (connection, kind, iterator, iterator_cls))                                                              \
  F(enum MHD_Result, MHD_queue_response,                                                                      \
    (struct MHD_Connection * connection, unsigned int status_code, struct MHD_Response *response),            \
    (connection, status_code, response))                                                                     \
  V(MHD_stop_daemon, (struct MHD_Daemon * daemon), (daemon))                                                  \
  V(MHD_suspend_connection, (struct MHD_Connection * connection), (connection))                               \
  V(MHD_resume_connection, (struct MHD_Connection * connection), (connection))                                \
  S(MHD_start_daemon_va)                                                                                      \
  S(MHD_get_connection_info)

#endif
