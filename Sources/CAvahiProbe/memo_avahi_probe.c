#include "memo_avahi_probe.h"

#include <avahi-client/client.h>
#include <avahi-common/error.h>
#include <avahi-common/simple-watch.h>
#include <memo_lazy.h>
#include <stdio.h>

static void ignore_state(AvahiClient *client, AvahiClientState state, void *userdata) {
  (void)client;
  (void)state;
  (void)userdata;
}

int memo_avahi_probe(char *version, size_t version_len, char *error, size_t error_len) {
  // avahi-client is loaded here, by the one command that uses it (a missing library is
  // reported as the probe's failure).
  if (!memo_lazy_load(MEMO_LAZY_AVAHI_CLIENT, error, error_len)) return 0;
  AvahiSimplePoll *poll = avahi_simple_poll_new();
  if (poll == NULL) {
    snprintf(error, error_len, "out of memory");
    return 0;
  }
  int code = 0;
  AvahiClient *client = avahi_client_new(avahi_simple_poll_get(poll), 0, ignore_state, NULL, &code);
  int ok = 0;
  if (client == NULL) {
    snprintf(error, error_len, "%s", avahi_strerror(code));
  } else {
    const char *text = avahi_client_get_version_string(client);
    snprintf(version, version_len, "%s", text ? text : "unknown");
    avahi_client_free(client);
    ok = 1;
  }
  avahi_simple_poll_free(poll);
  return ok;
}
