#include "lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const memo_lazy_table *table_of(memo_lazy_library library) {
  switch (library) {
    case MEMO_LAZY_DBUS: return &memo_lazy_dbus_table;
    case MEMO_LAZY_DNS_SD: return &memo_lazy_dns_sd_table;
    case MEMO_LAZY_AVAHI_CLIENT: return &memo_lazy_avahi_client_table;
    case MEMO_LAZY_SYSTEMD: return &memo_lazy_systemd_table;
    case MEMO_LAZY_MICROHTTPD: return &memo_lazy_microhttpd_table;
  }
  abort();
}

static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;
/// Set (with release) once every pointer of the library is resolved.
static int loaded[MEMO_LAZY_MICROHTTPD + 1];

const char *memo_lazy_soname(memo_lazy_library library) { return table_of(library)->soname; }

int memo_lazy_load(memo_lazy_library library, char *error, size_t error_size) {
  if (__atomic_load_n(&loaded[library], __ATOMIC_ACQUIRE)) return 1;
  const memo_lazy_table *table = table_of(library);
  pthread_mutex_lock(&loading);
  int ok = loaded[library];
  if (!ok) {
    // Never closed: its functions stay in use until the process ends. Its own dependencies
    // come with it; RTLD_LOCAL keeps its symbols out of everything else's way.
    void *handle = dlopen(table->soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      const char *reason = dlerror();
      snprintf(error, error_size, "%s", reason != NULL ? reason : table->soname);
    } else {
      size_t index = 0;
      for (; index < table->count; index++) {
        void *function = dlsym(handle, table->symbols[index].name);
        if (function == NULL) {
          snprintf(error, error_size, "%s has no function %s", table->soname, table->symbols[index].name);
          break;
        }
        *table->symbols[index].pointer = function;
      }
      ok = index == table->count;
      if (ok) __atomic_store_n(&loaded[library], 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&loading);
  return ok;
}

void memo_lazy_need(memo_lazy_library library) {
  if (__builtin_expect(__atomic_load_n(&loaded[library], __ATOMIC_ACQUIRE), 1)) return;
  char error[512];
  if (!memo_lazy_load(library, error, sizeof error)) {
    fprintf(stderr, "memo-peer: cannot load %s: %s\n", memo_lazy_soname(library), error);
    abort();
  }
}
