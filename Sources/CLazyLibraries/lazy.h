#ifndef MEMO_PEER_LAZY_INTERNAL_H
#define MEMO_PEER_LAZY_INTERNAL_H
#include "memo_lazy.h"

/// A function resolved by name into `pointer` when its library is loaded.
typedef struct {
  const char *name;
  void **pointer;
} memo_lazy_symbol;

/// One library: its file name and the functions memo-peer calls in it.
typedef struct {
  const char *soname;
  const memo_lazy_symbol *symbols;
  size_t count;
} memo_lazy_table;

extern const memo_lazy_table memo_lazy_dbus_table, memo_lazy_dns_sd_table, memo_lazy_avahi_client_table,
    memo_lazy_systemd_table, memo_lazy_microhttpd_table;

/// Loads `library` if it is not loaded yet; a library that cannot be loaded ends the
/// process with the reason on stderr (the commands that use one load it first, with
/// `memo_lazy_load`, so this is reached only by a call memo-peer did not expect).
void memo_lazy_need(memo_lazy_library library);

/// The stubs of one library's list (functions.h), defined in its file with
/// MEMO_LAZY_DEFINE(list, table, soname) after `#define MEMO_LAZY_THIS` names the library:
/// a pointer per function, with the type of the header's declaration (so a stub that does
/// not match the header does not compile); the table `memo_lazy_load` resolves them from;
/// and a stub per function that loads the library (once) and calls through the pointer.
#define MEMO_LAZY_POINTER(name) memo_lazy_pointer_##name
#define MEMO_LAZY_F_DECLARE(type, name, parameters, arguments) static __typeof__(&name) MEMO_LAZY_POINTER(name);
#define MEMO_LAZY_V_DECLARE(name, parameters, arguments) static __typeof__(&name) MEMO_LAZY_POINTER(name);
#define MEMO_LAZY_S_DECLARE(name) static __typeof__(&name) MEMO_LAZY_POINTER(name);
#define MEMO_LAZY_F_ENTRY(type, name, parameters, arguments) {#name, (void **)&MEMO_LAZY_POINTER(name)},
#define MEMO_LAZY_V_ENTRY(name, parameters, arguments) {#name, (void **)&MEMO_LAZY_POINTER(name)},
#define MEMO_LAZY_S_ENTRY(name) {#name, (void **)&MEMO_LAZY_POINTER(name)},
#define MEMO_LAZY_F_STUB(type, name, parameters, arguments) \
  type name parameters {                                     \
    memo_lazy_need(MEMO_LAZY_THIS);                          \
    return MEMO_LAZY_POINTER(name) arguments;                \
  }
#define MEMO_LAZY_V_STUB(name, parameters, arguments) \
  void name parameters {                               \
    memo_lazy_need(MEMO_LAZY_THIS);                    \
    MEMO_LAZY_POINTER(name) arguments;                 \
  }
#define MEMO_LAZY_S_STUB(name)
#define MEMO_LAZY_DEFINE(list, table, soname)                                                    \
  list(MEMO_LAZY_F_DECLARE, MEMO_LAZY_V_DECLARE, MEMO_LAZY_S_DECLARE)                            \
  static const memo_lazy_symbol table##_symbols[] = {                                           \
      list(MEMO_LAZY_F_ENTRY, MEMO_LAZY_V_ENTRY, MEMO_LAZY_S_ENTRY)};                            \
  const memo_lazy_table table = {soname, table##_symbols, sizeof table##_symbols / sizeof table##_symbols[0]}; \
  list(MEMO_LAZY_F_STUB, MEMO_LAZY_V_STUB, MEMO_LAZY_S_STUB)

#endif
